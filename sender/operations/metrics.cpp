#include "sender/operations/metrics.hpp"

#include <fmt/format.h>

#include <limits>
#include <memory>

#include "common/version.hpp"

namespace ddft::sender {

namespace {

// A metric that reads one of SendStatus's counters.
auto status_reader(const SendStatus& st) {
  return [&st](const std::atomic<uint64_t> SendStatus::*field) {
    return
        [&st, field] { return static_cast<double>((st.*field).load(std::memory_order_relaxed)); };
  };
}

// --compress: what the compressor tried and saved (all 0 with --compress off).
// Files that could not be read, and files left out.
void add_unsent_metrics(common::MetricsRegistry& reg, const SendStatus& st) {
  constexpr auto kCounter = common::MetricType::kCounter;
  const auto read = status_reader(st);
  reg.add(kCounter, "ddft_send_read_failures_total",
          "Files that could not be opened or read to their end (the receivers see it too)",
          read(&SendStatus::read_failures));
  reg.add(kCounter, "ddft_send_files_refused_total",
          "Files left out by the command line's listing or the reader (filters, links not "
          "followed, paths too long for the wire); a hot folder's own are in its status",
          read(&SendStatus::files_refused));
}

void add_compress_metrics(common::MetricsRegistry& reg, const SendStatus& st) {
  constexpr auto kCounter = common::MetricType::kCounter;
  const auto read = status_reader(st);
  reg.add(kCounter, "ddft_send_compress_blocks_total",
          "Blocks --compress tried (0 with --compress off)", read(&SendStatus::compress_blocks));
  reg.add(kCounter, "ddft_send_compress_blocks_compressed_total",
          "Blocks --compress sent as zstd frames (the others did not shrink by 1/32 and went as "
          "they were)",
          read(&SendStatus::compress_blocks_compressed));
  reg.add(kCounter, "ddft_send_compress_in_bytes_total",
          "File bytes of the blocks --compress tried", read(&SendStatus::compress_in_bytes));
  reg.add(kCounter, "ddft_send_compress_out_bytes_total",
          "What those blocks took as data on the wire: their frames, or themselves when sent raw "
          "(in / out is the compression ratio)",
          read(&SendStatus::compress_out_bytes));
}

}  // namespace

void add_sender_metrics(common::MetricsRegistry& reg, const SendStatus& st, const SenderConfig& cfg,
                        const common::Clock& clock) {
  using common::MetricType;
  constexpr auto kCounter = MetricType::kCounter;
  constexpr auto kGauge = MetricType::kGauge;
  const auto read = status_reader(st);

  reg.add(kGauge, "ddft_build_info", "The program and its version; always 1", [] { return 1.0; },
          {{"program", "dd_file_send"}, {"version", common::kVersion}});
  reg.add(kCounter, "ddft_send_files_sent_total",
          "Files sent whole with their end packet (every --repeat copy of one file counts once); "
          "the sender cannot know whether they arrived",
          read(&SendStatus::files_sent));
  reg.add(kCounter, "ddft_send_files_failed_total",
          "Files that could not be sent: unreadable (never announced) or aborted on the wire "
          "(read error, sender stopped)",
          read(&SendStatus::files_failed));
  reg.add(kCounter, "ddft_send_bytes_total",
          "File bytes packetised and sent (each --repeat copy counted)", read(&SendStatus::bytes));
  reg.add(kCounter, "ddft_send_datagrams_total",
          "Datagrams sent: data, control, heartbeat and FEC parity", read(&SendStatus::datagrams));
  reg.add(kCounter, "ddft_send_wire_bytes_total",
          "Bytes of the datagrams sent, headers, parity and seals included (what --rate limits)",
          read(&SendStatus::wire_bytes));
  reg.add(kCounter, "ddft_send_history_bytes_total",
          "Of ddft_send_wire_bytes_total, the history's repeats (kHistory datagrams, every lane)",
          read(&SendStatus::history_bytes));
  reg.add(kGauge, "ddft_send_history_entries_waiting",
          "History entries due on the wire and not sent yet (gathered for a second, or held "
          "back by the history's budget)",
          read(&SendStatus::history_waiting));
  reg.add(kGauge, "ddft_send_file_bytes",
          "Bytes of the file being sent packetised so far (of its current copy); 0 between files",
          read(&SendStatus::file_bytes));
  reg.add(kGauge, "ddft_send_file_size_bytes", "Size of the file being sent; 0 between files",
          read(&SendStatus::file_size));
  reg.add(
      kGauge, "ddft_send_rate_limit_bytes_per_second",
      "The configured --rate in bytes per second on the wire, times the lanes (--rate is "
      "each lane's); 0: unlimited",
      [rate = cfg.rate_mb * 1024.0 * 1024.0 * static_cast<double>(cfg.lanes())] { return rate; });
  reg.add(kGauge, "ddft_send_lanes",
          "Lanes (links) the session drives (--dest or --device "
          "given once per lane, or --lanes)",
          [lanes = static_cast<double>(cfg.lanes())] { return lanes; });
  reg.add(kGauge, "ddft_send_lanes_up",
          "Lanes of the current session whose links still send (with --lane-down continue a "
          "lane whose link failed is taken out); 0 before the first session",
          read(&SendStatus::lanes_up));
  add_unsent_metrics(reg, st);
  add_compress_metrics(reg, st);
  // Sampled twice a second on the server thread; the gauge spans the last 5 s.
  auto meter = std::make_shared<common::RateMeter>(std::chrono::seconds(5));
  reg.every(std::chrono::milliseconds(500), [meter, &st, &clock] {
    meter->sample(clock.now().time_since_epoch(),
                  static_cast<double>(st.wire_bytes.load(std::memory_order_relaxed)));
  });
  reg.add(kGauge, "ddft_send_rate_bytes_per_second",
          "Measured rate on the wire (all datagrams, headers included) over the last 5 s, in "
          "bytes per second",
          [meter] { return meter->rate(); });
  reg.add(kGauge, "ddft_send_seconds_since_last_datagram",
          "Seconds since the last datagram was sent (an idle sender sends a heartbeat every "
          "--heartbeat-ms); NaN before the first",
          [&st, &clock] {
            const int64_t t = st.last_send_ns.load(std::memory_order_relaxed);
            if (t == 0) return std::numeric_limits<double>::quiet_NaN();
            const int64_t now = clock.now().time_since_epoch().count();
            return std::max(0.0, static_cast<double>(now - t) / 1e9);
          });
  reg.add_family(kGauge, "ddft_send_session_info",
                 "The current sender session (as the logs print it); absent before the first",
                 [&st] {
                   std::vector<common::MetricSample> out;
                   if (const uint64_t s = st.session_id.load(std::memory_order_relaxed); s != 0) {
                     out.push_back({{{"session", fmt::format("{:016x}", s)}}, 1});
                   }
                   return out;
                 });
}

}  // namespace ddft::sender
