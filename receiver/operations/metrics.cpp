#include "receiver/operations/metrics.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "common/version.hpp"

namespace ddft::receiver {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Label values for AuthReject, in its order.
constexpr const char* kAuthReasons[kAuthRejectCount] = {
    "auth_no_key",   "auth_not_sealed",    "auth_malformed",   "auth_bad_tag",
    "auth_replayed", "auth_stale_session", "auth_unidentified"};

std::string decode_reason(size_t i) {
  std::string s(common::decode_status_name(static_cast<common::DecodeStatus>(i)));
  for (char& c : s) {
    if (c == ' ') c = '_';
  }
  return s;
}

double ns_to_seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// A counter or gauge's value as the registry wants it.
template <typename T>
double num(T v) {
  return static_cast<double>(v);
}

constexpr auto kCounter = common::MetricType::kCounter;
constexpr auto kGauge = common::MetricType::kGauge;

// What every metric reads, refreshed once per scrape by add_receiver_metrics: the receiver's
// status, and each lane's (for the series of the link's side, which with several lanes carry
// a `lane` and a `link` label, one series per lane).
struct Scrape {
  ReceiverStatus all;
  std::vector<ReceiverStatus> lanes;
  std::vector<std::string> links;
  std::optional<OutputDir::Space> space;  // the output folder's file system
};
using ScrapePtr = std::shared_ptr<const Scrape>;
using StatusPtr = std::shared_ptr<const ReceiverStatus>;

// A metric of the link's side: one series over the receiver with one lane, else one per lane,
// labelled. `value` reads a lane's (or the receiver's) status.
template <typename Fn>
void add_lane_metric(common::MetricsRegistry& reg, common::MetricType type, const char* name,
                     const std::string& help, const ScrapePtr& sc, size_t lanes, Fn value) {
  if (lanes <= 1) {
    reg.add(type, name, help, [sc, value] { return value(sc->all); });
    return;
  }
  reg.add_family(type, name, help + " (per lane)", [sc, value] {
    std::vector<common::MetricSample> out;
    for (size_t i = 0; i < sc->lanes.size(); ++i) {
      out.push_back({{{"lane", std::to_string(i)}, {"link", sc->links[i]}}, value(sc->lanes[i])});
    }
    return out;
  });
}

// --on-complete outcomes and queue length, read live from the runner's own atomics. `hooks` must
// outlive every render of `reg`.
void add_hook_metrics(common::MetricsRegistry& reg, const HookRunner* hooks) {
  const char* help =
      "--on-complete commands by outcome: ok (exit 0), failed (another exit status or a "
      "signal), timed_out (killed at --on-complete-timeout), not_run (queue full, receiver "
      "stopping, or the shell could not start); the file stays delivered whatever the outcome";
  const HookCounters& c = hooks->counters();
  reg.add(kCounter, "ddft_receive_hooks_total", help, [&c] { return num(c.ok.load()); },
          {{"outcome", "ok"}});
  reg.add(kCounter, "ddft_receive_hooks_total", help, [&c] { return num(c.failed.load()); },
          {{"outcome", "failed"}});
  reg.add(kCounter, "ddft_receive_hooks_total", help, [&c] { return num(c.timed_out.load()); },
          {{"outcome", "timed_out"}});
  reg.add(kCounter, "ddft_receive_hooks_total", help, [&c] { return num(c.not_run.load()); },
          {{"outcome", "not_run"}});
  reg.add(kGauge, "ddft_receive_hooks_pending", "--on-complete commands queued, not started",
          [hooks] { return num(hooks->pending()); });
}

// Files delivered and failed and bytes delivered, for each key of the writer's counters `by`:
// ddft_receive_LABEL_files_delivered_total{LABEL=key} and so on; `whose` ends each help text.
void add_files_by(common::MetricsRegistry& reg, const StatusPtr& st,
                  std::map<std::string, ChannelFiles> AssemblerCounters::*by,
                  const std::string& label, const std::string& whose) {
  const auto family = [st, by, label](uint64_t ChannelFiles::*field) {
    return [st, by, label, field] {
      std::vector<common::MetricSample> out;
      for (const auto& [name, c] : st->writer.counters.*by) {
        out.push_back({{{label, name}}, num(c.*field)});
      }
      return out;
    };
  };
  const std::string prefix = "ddft_receive_" + label;
  reg.add_family(kCounter, prefix + "_files_delivered_total",
                 "Files verified and renamed into place, " + whose, family(&ChannelFiles::passed));
  reg.add_family(kCounter, prefix + "_files_failed_total",
                 "Files announced and then failed (recorded in the failed folder), " + whose,
                 family(&ChannelFiles::failed));
  reg.add_family(kCounter, prefix + "_bytes_delivered_total",
                 "Bytes of the files delivered, " + whose, family(&ChannelFiles::bytes));
}

// Files by outcome, the hooks (when --on-complete is set), bytes delivered and files in flight.
void add_file_metrics(common::MetricsRegistry& reg, const StatusPtr& st, const Receiver& rx) {
  add_files_by(reg, st, &AssemblerCounters::channels, "channel",
               "by the sender's channel (--channel)");
  add_files_by(reg, st, &AssemblerCounters::senders, "sender",
               "by sender (its id, or session-ID for a sender without one)");
  reg.add(kCounter, "ddft_receive_files_delivered_total",
          "Files verified and renamed into place under --output",
          [st] { return num(st->writer.counters.files_passed); });
  reg.add(kCounter, "ddft_receive_files_failed_total",
          "Files moved to the failed folder with a record (data lost, digest mismatch, timeout, "
          "aborted by the sender, disk error, receiver stopped)",
          [st] { return num(st->writer.counters.files_failed); });
  reg.add(kCounter, "ddft_receive_files_refused_total",
          "Announced files refused at once (name, limits, free space, collision policy); "
          "recorded in the failed folder",
          [st] { return num(st->writer.counters.files_refused); });
  reg.add(kCounter, "ddft_receive_files_filtered_total",
          "Announced files dropped by --include/--exclude (policy: logged, no record)",
          [st] { return num(st->writer.counters.files_filtered); });
  reg.add(kCounter, "ddft_receive_files_left_to_other_receivers_total",
          "Files the sender's file list names that went down a lane of the sender no lane of "
          "this receiver carries, on another host (each logged; that host's receiver names them)",
          [st] { return num(st->writer.counters.listed_elsewhere); });
  reg.add(kCounter, "ddft_receive_files_missed_total",
          "Files the sender's history names that this receiver never got nor named (sent while "
          "it was not receiving): each recorded once in the failed folder",
          [st] { return num(st->writer.counters.files_missed); });
  reg.add(kCounter, "ddft_receive_resends_skipped_total",
          "Resent copies (--resend-after, --resend-request) of files delivered already: "
          "recognised at their announce and not written",
          [st] { return num(st->writer.counters.resends_skipped); });
  reg.add(kCounter, "ddft_receive_resends_delivered_total",
          "Resent copies of files that failed or were missed here: delivered, and the failure's "
          "record marked resolved",
          [st] { return num(st->writer.counters.resends_delivered); });
  // The runner's counters are atomics of their own, read live.
  if (const HookRunner* hooks = rx.hooks()) add_hook_metrics(reg, hooks);
  reg.add(kCounter, "ddft_receive_bytes_delivered_total",
          "Bytes of the files delivered, counted when each file is in place",
          [st] { return num(st->writer.counters.bytes_delivered); });
  reg.add(kGauge, "ddft_receive_files_in_flight",
          "Files announced and not finished yet, those finishing their writes included",
          [st] { return num(st->writer.files_in_flight); });
}

// Datagrams taken off the link, lost and rebuilt.
void add_packet_metrics(common::MetricsRegistry& reg, const ScrapePtr& sc, size_t lanes) {
  const StatusPtr st(sc, &sc->all);
  add_lane_metric(reg, kCounter, "ddft_receive_packets_received_total",
                  "Datagrams taken off the link, before any check (from any sender; damaged ones "
                  "and those dropped in a full ring included)",
                  sc, lanes, [](const ReceiverStatus& s) { return num(s.datagrams); });
  add_lane_metric(reg, kCounter, "ddft_receive_packet_bytes_total",
                  "Bytes of the datagrams taken off the link, headers included", sc, lanes,
                  [](const ReceiverStatus& s) { return num(s.datagram_bytes); });
  add_lane_metric(reg, kCounter, "ddft_receive_packets_lost_total",
                  "Packets of the sender sessions that never arrived (sequence-number gaps, as a "
                  "diode's hardware counter counts them), those FEC rebuilt and those dropped in "
                  "a full ring included; a packet counted here that arrives late stays counted",
                  sc, lanes, [](const ReceiverStatus& s) { return num(s.writer.packets_lost); });
  reg.add(kCounter, "ddft_receive_packets_recovered_total", "Lost packets rebuilt from FEC parity",
          [st] { return num(st->writer.fec.rebuilt); });
  reg.add(kCounter, "ddft_receive_fec_groups_unrepaired_total",
          "FEC groups given up with packets missing and too little parity (their files fail "
          "unless a later copy fills the holes)",
          [st] { return num(st->writer.fec.groups_lost); });
  // Per file, these are the File: line's "repaired:" line and the records' fields.
  reg.add(kCounter, "ddft_receive_fec_rebuilt_packets_used_total",
          "Data packets (kData, or kZData pieces of a compressed block once it is whole) that "
          "FEC rebuilt and that went into a file, whether the file then passed or failed; of "
          "ddft_receive_packets_recovered_total, which counts every datagram rebuilt",
          [st] { return num(st->writer.counters.fec_rebuilt_used); });
  reg.add(kCounter, "ddft_receive_repeat_filled_chunks_total",
          "Chunks (a data packet's worth of a file) that a later copy of the file (--repeat) "
          "filled, the first copy having missed them; a compressed block counts every chunk it "
          "filled when a later copy's piece completed it",
          [st] { return num(st->writer.counters.repeat_filled); });
  const char* zblocks_help =
      "Compressed blocks (sender --compress), by outcome: done (decompressed whole into their "
      "file), bad (refused: a frame expanding past its block's size, or damaged; the file "
      "failed), evicted (dropped to stay within --compress-buffer-mb: their bytes then missing)";
  const std::pair<const char*, uint64_t AssemblerCounters::*> zblocks[] = {
      {"done", &AssemblerCounters::zblocks_done},
      {"bad", &AssemblerCounters::zblocks_bad},
      {"evicted", &AssemblerCounters::zblocks_evicted}};
  for (const auto& entry : zblocks) {
    const auto field = entry.second;
    reg.add(kCounter, "ddft_receive_compressed_blocks_total", zblocks_help,
            [st, field] { return num(st->writer.counters.*field); }, {{"outcome", entry.first}});
  }
  reg.add(kCounter, "ddft_receive_compressed_frame_bytes_total",
          "Bytes of the compressed blocks done, as they crossed (their zstd frames)",
          [st] { return num(st->writer.counters.zframe_bytes); });
  reg.add(kCounter, "ddft_receive_compressed_raw_bytes_total",
          "Bytes the compressed blocks done decompressed to (the files' own bytes)",
          [st] { return num(st->writer.counters.zraw_bytes); });
}

// Datagrams not used, by reason, and those dropped for want of room (the ring, and with the UDP
// transport the socket).
void add_dropped_packet_metrics(common::MetricsRegistry& reg, const ScrapePtr& sc,
                                const ReceiverConfig& cfg, size_t lanes) {
  const StatusPtr st(sc, &sc->all);
  const char* rejected_help =
      "Datagrams dropped before use, by reason: the packet check (too_short, bad_magic, "
      "bad_version, bad_length, bad_checksum, bad_type, bad_payload; a datagram larger than "
      "--max-packet-size is bad_length) or, with --key-file, authentication (auth_*); none of "
      "their data is written";
  for (size_t i = 1; i < common::kDecodeStatusCount; ++i) {
    reg.add(kCounter, "ddft_receive_packets_rejected_total", rejected_help,
            [st, i] { return num(st->writer.counters.rejected[i]); },
            {{"reason", decode_reason(i)}});
  }
  for (size_t i = 0; i < kAuthRejectCount; ++i) {
    reg.add(kCounter, "ddft_receive_packets_rejected_total", rejected_help,
            [st, i] { return num(st->writer.counters.auth_rejected[i]); },
            {{"reason", kAuthReasons[i]}});
  }
  const char* ignored_help =
      "Well-formed datagrams not used, by reason: duplicate (seen before, or already rebuilt), "
      "other_session (of a sender session that is not the current one), unknown_file (for a "
      "file not in flight), filtered (of a file --include/--exclude dropped), bad_data (outside "
      "the announced file), rebuilt_bad (FEC output failing its check), handling_error (its "
      "handling failed: memory, I/O set-up)";
  const std::pair<const char*, uint64_t AssemblerCounters::*> ignored[] = {
      {"duplicate", &AssemblerCounters::duplicates},
      {"other_session", &AssemblerCounters::other_session},
      {"unknown_file", &AssemblerCounters::unknown_file},
      {"filtered", &AssemblerCounters::filtered_packets},
      {"bad_data", &AssemblerCounters::bad_data},
      {"rebuilt_bad", &AssemblerCounters::rebuilt_bad},
      {"handling_error", &AssemblerCounters::handling_errors}};
  for (const auto& entry : ignored) {
    // A copy to capture: clang 14 (the fuzz build) cannot capture a structured binding.
    const auto field = entry.second;
    reg.add(kCounter, "ddft_receive_packets_ignored_total", ignored_help,
            [st, field] { return num(st->writer.counters.*field); }, {{"reason", entry.first}});
  }
  add_lane_metric(reg, kCounter, "ddft_receive_ring_drops_total",
                  "Datagrams dropped because the receive ring was full (the writer or the disk "
                  "did not keep up)",
                  sc, lanes, [](const ReceiverStatus& s) { return num(s.ring_full_drops); });
  if (cfg.transport == common::TransportKind::kUdp) {
    reg.add_family(kCounter, "ddft_receive_socket_drops_total",
                   "Datagrams the kernel dropped on the receive socket because its buffer was full "
                   "(from /proc/net/udp; absent when it cannot be read)",
                   [sc, lanes] {
                     std::vector<common::MetricSample> out;
                     if (lanes <= 1) {
                       if (sc->all.link_drops >= 0) out.push_back({{}, num(sc->all.link_drops)});
                       return out;
                     }
                     for (size_t i = 0; i < sc->lanes.size(); ++i) {
                       if (sc->lanes[i].link_drops < 0) continue;
                       out.push_back({{{"lane", std::to_string(i)}, {"link", sc->links[i]}},
                                      num(sc->lanes[i].link_drops)});
                     }
                     return out;
                   });
  }
}

// The receive ring (one per lane): size, use and high-water mark.
void add_ring_metrics(common::MetricsRegistry& reg, const ScrapePtr& sc, size_t lanes) {
  static constexpr auto ratio = [](size_t part, size_t whole) {
    return whole ? num(part) / num(whole) : 0.0;
  };
  add_lane_metric(reg, kGauge, "ddft_receive_ring_capacity_bytes",
                  "Size of the receive ring (--buffer-mb less the write blocks, shared by the "
                  "lanes)",
                  sc, lanes, [](const ReceiverStatus& s) { return num(s.ring_bytes); });
  add_lane_metric(reg, kGauge, "ddft_receive_ring_used_bytes",
                  "Receive ring in use: bytes of datagrams not yet taken by the writer (each "
                  "rounded up to 16, plus a 16-byte header per receive)",
                  sc, lanes, [](const ReceiverStatus& s) { return num(s.ring_used); });
  add_lane_metric(reg, kGauge, "ddft_receive_ring_fill_ratio", "Receive ring in use, 0 to 1", sc,
                  lanes, [](const ReceiverStatus& s) { return ratio(s.ring_used, s.ring_bytes); });
  add_lane_metric(reg, kGauge, "ddft_receive_ring_high_water_bytes",
                  "Most of the receive ring ever in use since start", sc, lanes,
                  [](const ReceiverStatus& s) { return num(s.ring_high_water); });
  add_lane_metric(reg, kGauge, "ddft_receive_ring_high_water_ratio",
                  "Most of the receive ring ever in use since start, 0 to 1", sc, lanes,
                  [](const ReceiverStatus& s) { return ratio(s.ring_high_water, s.ring_bytes); });
}

// DR and FW: the Rcvd: line's figures, and their sums for rate() over any window.
void add_wait_metrics(common::MetricsRegistry& reg, const StatusPtr& st) {
  auto avg = [](const IntervalStat& s) {
    return s.count ? ns_to_seconds(s.sum_ns) / static_cast<double>(s.count) : kNaN;
  };
  auto peak = [](const IntervalStat& s) { return s.count ? ns_to_seconds(s.max_ns) : kNaN; };
  reg.add(kGauge, "ddft_receive_dr_interval_avg_seconds",
          "DR of the last Rcvd: line: average wait of the writer thread for data from the "
          "receive ring over that line's interval (the log prints ms); NaN before the first",
          [st, avg] { return avg(st->writer.waits.dr_last); });
  reg.add(kGauge, "ddft_receive_dr_interval_peak_seconds",
          "DR of the last Rcvd: line: longest wait for data from the ring in that interval (the "
          "log rounds it up to whole ms); NaN before the first",
          [st, peak] { return peak(st->writer.waits.dr_last); });
  reg.add(kGauge, "ddft_receive_fw_interval_avg_seconds",
          "FW of the last Rcvd: line: average time of one block write over that line's interval "
          "(the log prints ms); NaN before the first",
          [st, avg] { return avg(st->writer.waits.fw_last); });
  reg.add(kGauge, "ddft_receive_fw_interval_peak_seconds",
          "FW of the last Rcvd: line: longest block write in that interval (the log rounds it "
          "up to whole ms); NaN before the first",
          [st, peak] { return peak(st->writer.waits.fw_last); });
  reg.add(kCounter, "ddft_receive_dr_wait_seconds_total",
          "Seconds the writer thread waited for data from the receive ring (DR), idle time "
          "included; rate() of it over rate() of ddft_receive_dr_waits_total is the average DR",
          [st] { return ns_to_seconds(st->writer.waits.dr_all.sum_ns); });
  reg.add(kCounter, "ddft_receive_dr_waits_total", "Waits of the writer thread for the ring",
          [st] { return num(st->writer.waits.dr_all.count); });
  reg.add(kCounter, "ddft_receive_fw_write_seconds_total",
          "Seconds of block writes (FW), summed over writes (they overlap when several are in "
          "flight)",
          [st] { return ns_to_seconds(st->writer.waits.fw_all.sum_ns); });
  reg.add(kCounter, "ddft_receive_fw_writes_total", "Block writes completed",
          [st] { return num(st->writer.waits.fw_all.count); });
}

// The link's liveness and the sender session.
void add_session_metrics(common::MetricsRegistry& reg, const ScrapePtr& sc, size_t lanes) {
  const StatusPtr st(sc, &sc->all);
  add_lane_metric(reg, kGauge, "ddft_receive_seconds_since_last_packet",
                  "Seconds since the receiver last took a datagram off the link (any datagram; an "
                  "idle sender sends a heartbeat every second); NaN before the first",
                  sc, lanes, [](const ReceiverStatus& s) {
                    if (s.last_datagram_ns == 0) return kNaN;
                    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now().time_since_epoch())
                                            .count();
                    return std::max(0.0, static_cast<double>(now - s.last_datagram_ns) / 1e9);
                  });
  reg.add(kCounter, "ddft_receive_sessions_total", "Sender sessions started",
          [st] { return num(st->writer.counters.sessions); });
  reg.add(kCounter, "ddft_receive_senders_refused_total",
          "Sender sessions refused a place: --max-senders were live, none quiet",
          [st] { return num(st->writer.counters.senders_refused); });
  reg.add(kGauge, "ddft_receive_senders", "Sender sessions followed now (at most --max-senders)",
          [st] { return num(st->writer.senders.size()); });
  reg.add_family(kGauge, "ddft_receive_session_info",
                 "Each sender session followed now (as the log prints it), with its sender's id "
                 "when it has one; absent while none is followed",
                 [st] {
                   std::vector<common::MetricSample> out;
                   for (const auto& [session, sender] : st->writer.senders) {
                     common::MetricSample m{{{"session", fmt::format("{:016x}", session)}}, 1};
                     if (sender != 0)
                       m.labels.emplace_back("sender", fmt::format("{:016x}", sender));
                     out.push_back(std::move(m));
                   }
                   return out;
                 });
}

// The output folder's file system (sampled at each scrape; absent under --sink null).
void add_disk_metrics(common::MetricsRegistry& reg, const ScrapePtr& sc) {
  auto sample = [sc](uint64_t OutputDir::Space::*field) {
    return [sc, field] {
      std::vector<common::MetricSample> out;
      if (sc->space) out.push_back({{}, num((*sc->space).*field)});
      return out;
    };
  };
  reg.add_family(kGauge, "ddft_receive_output_free_bytes",
                 "Bytes still free for the receiver on the file system under --output (statvfs "
                 "f_bavail, as df shows it); absent with --sink null",
                 sample(&OutputDir::Space::free_bytes));
  reg.add_family(kGauge, "ddft_receive_output_size_bytes",
                 "Size of the file system under --output in bytes; absent with --sink null",
                 sample(&OutputDir::Space::size_bytes));
}

}  // namespace

void add_receiver_metrics(common::MetricsRegistry& reg, const Receiver& rx,
                          const ReceiverConfig& cfg) {
  // One status per scrape, so the numbers of one scrape agree with each other.
  auto scrape = std::make_shared<Scrape>();
  const size_t lanes = rx.lanes();
  for (size_t i = 0; i < lanes; ++i) scrape->links.push_back(cfg.lane_name(i));
  reg.on_scrape([scrape, &rx, lanes] {
    scrape->all = rx.status();
    scrape->space = rx.output_space();
    scrape->lanes.resize(lanes);
    for (size_t i = 0; i < lanes && lanes > 1; ++i) scrape->lanes[i] = rx.lane_status(i);
  });
  const ScrapePtr sc = scrape;
  const StatusPtr st(sc, &sc->all);

  reg.add(kGauge, "ddft_build_info", "The program and its version; always 1", [] { return 1.0; },
          {{"program", "dd_file_receive"}, {"version", common::kVersion}});
  common::MetricLabels engine = {{"engine", common::io_engine_name(rx.write_engine())}};
  if (!rx.write_engine_fallback().empty())
    engine.push_back({"fallback", rx.write_engine_fallback()});
  reg.add(
      kGauge, "ddft_receive_write_engine_info",
      "The engine that writes the files (engine: io_uring, pwrite, or null with --sink null), "
      "and, when --io-engine auto fell back to pwrite, the kernel's refusal of io_uring "
      "(fallback); always 1",
      [] { return 1.0; }, std::move(engine));
  // The order of these calls is the order of the exposition.
  add_file_metrics(reg, st, rx);
  add_packet_metrics(reg, sc, lanes);
  add_dropped_packet_metrics(reg, sc, cfg, lanes);
  add_ring_metrics(reg, sc, lanes);
  add_wait_metrics(reg, st);
  add_session_metrics(reg, sc, lanes);
  add_disk_metrics(reg, sc);
  add_sender_status_metrics(reg, rx);
}

}  // namespace ddft::receiver
