#include "receiver/pipeline.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "common/json.hpp"
#include "common/named_thread.hpp"
#include "receiver/assembly/writer_loop.hpp"
#include "receiver/delivery/stall_hook.hpp"
#include "receiver/link/byte_ring.hpp"
#include "receiver/link/ingest.hpp"
#include "receiver/link/unseal_pool.hpp"

namespace ddft::receiver {

namespace {
// The senders' status file, in the state folder ("" without one).
std::string sender_status_path(const ReceiverConfig& cfg) {
  return cfg.state_dir.empty() ? std::string() : cfg.state_dir + "/" + kSenderStatusName;
}
}  // namespace

Receiver::Receiver(const ReceiverConfig& cfg, const SourceOpener& open_source, common::Clock& clock)
    : cfg_(cfg), clock_(clock) {
  const bool direct = open_output();
  make_rings();
  make_io_engine();
  make_hooks();
  board_ = std::make_unique<StatusBoard>(clock_, sender_status_path(cfg_));
  // Last: from here on a sender's datagrams queue in the kernel, and all that is left before
  // they are drained is making the assembler and starting the threads (run()).
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& l = lanes_[i];
    l.source = open_source(i);
    l.ingest = std::make_unique<Ingest>(*l.source, *l.ring, cfg.batch, cfg.max_packet_size);
    l.name = cfg.lane_name(i);
    link_name_ += (i == 0 ? "" : ", ") + l.name;
  }
  const size_t ring_bytes = lanes_.front().ring->capacity();
  // Logged by the writer thread once every thread runs (note_writer_pass).
  start_line_ = fmt::format(
      "Info: receiving on {} into {}; buffer {} MB: {} of {} MB for "
      "packets of up to {} bytes{}; writer: {}{}; write blocks {} x {} KB; mode {}; on "
      "collision: {}; open workers {}",
      link_name_,
      cfg.output.empty() ? std::string("nothing (--sink null without --output: replay state in "
                                       "memory only, failure records in the log only)")
                         : fmt::format("{} (state: {}, failed files: {})", cfg.output,
                                       cfg.state_dir, cfg.failed_dir),
      cfg.buffer_mb,
      lanes_.size() == 1 ? std::string("ring")
                         : fmt::format("{} lanes, a ring each", lanes_.size()),
      ring_bytes >> 20, cfg.max_packet_size,
      lanes_.front().source->max_bundle() > 0 ? " (GRO)" : "", writer_->describe(),
      direct ? ", direct IO" : "", cfg.write_buffers, cfg.write_block_kb,
      write_mode_name(cfg.write_mode), collision_policy_name(cfg.on_collision),
      open_workers(cfg.workers));
}

bool Receiver::open_output() {
  out_ = std::make_unique<OutputDir>(cfg_.output, cfg_.failed_dir, cfg_.on_collision,
                                     cfg_.null_sink, cfg_.state_dir);
  // Before the sweep and the move: another receiver's files in flight and state are its own.
  out_->lock_exclusive();
  const MovedState moved = out_->move_old_state();
  for (const std::string& w : moved.warnings) spdlog::warn("Warn: {}", w);
  if (moved.any()) spdlog::info("Info: {}", moved.describe(cfg_.output, out_->state_dir()));
  out_->set_path_limits(cfg_.path_limits);
  for (const auto& [name, path] : cfg_.channel_dirs) out_->map_channel(name, path);
  if (!cfg_.null_sink) {
    // Before any datagram: what an earlier run left is finished or named first.
    JournalLimits limits;
    limits.keep_for = std::chrono::seconds(static_cast<int64_t>(cfg_.journal_hours * 3600));
    limits.max_bytes = uint64_t{cfg_.journal_mb} << 20;
    journal_ = std::make_unique<OutcomeLog>(out_->state_fd(), limits);
    recovery_ = recover_at_start(*out_, *journal_, cfg_.keep_partial);
    if (!journal_->compact()) {
      spdlog::warn("Warn: the receiver's journal '{}/{}' could not be compacted: {}",
                   out_->state_dir(), kJournalName, std::strerror(errno));
    }
  }
  if (cfg_.direct_io == DirectIo::kOff || cfg_.null_sink) return false;
  const bool direct = out_->enable_direct_io();
  if (!direct && cfg_.direct_io == DirectIo::kOn) {
    spdlog::warn(
        "Warn: --direct-io on: the file system of '{}' refuses O_DIRECT; writing "
        "through the page cache",
        cfg_.output);
  }
  return direct;
}

void Receiver::make_rings() {
  // --buffer-mb is all the receive buffering: the write blocks come out of it, the rings share
  // the rest, so the daemon's memory is what the operator asked for.
  const size_t pool_bytes = cfg_.write_buffers * cfg_.write_block_kb * 1024;
  const size_t ring_bytes = (cfg_.buffer_mb * 1024 * 1024 - pool_bytes) / cfg_.lanes();
  lanes_.resize(cfg_.lanes());
  for (Lane& l : lanes_) {
    // Populating touches every page now (docs/operations.md says how long that takes): the link
    // is not open yet, so no datagram waits in the kernel meanwhile.
    l.ring = std::make_unique<ByteRing>(ring_bytes, /*populate=*/true);
    l.ring->share_bell(bell_);
    if (!cfg_.lock_memory) continue;
    if (std::string why; !l.ring->memory().lock(&why)) {
      spdlog::warn(
          "Warn: cannot lock the receive buffer in RAM: {} (run as root or raise "
          "RLIMIT_MEMLOCK)",
          why);
      break;
    }
  }
}

void Receiver::make_io_engine() {
  block_memory_ = common::AlignedBuffer(cfg_.write_buffers * cfg_.write_block_kb * 1024, true);
  std::string note;
  common::BlockIoOptions io;
  io.engine = cfg_.io_engine;
  io.threads = cfg_.writers;
  io.queue_depth = cfg_.queue_depth;
  io.fixed = block_memory_.span();
  io.thread_name = "dd-wio";
  writer_ = common::make_block_io(io, &note);
  write_engine_ = writer_->engine();
  write_engine_fallback_ = writer_->fallback_reason();
  if (cfg_.test_stall_writer_s > 0) {
    writer_ = std::make_unique<StallingIo>(std::move(writer_), cfg_.test_stall_writer_s,
                                           uint64_t{cfg_.test_stall_after_mb} << 20);
  }
  if (!note.empty()) spdlog::warn("Warn: {}", note);
}

void Receiver::make_hooks() {
  if (cfg_.on_complete.empty()) return;
  if (cfg_.null_sink) {
    spdlog::warn("Warn: --on-complete is not run with --sink null (no file is written)");
    return;
  }
  HookOptions ho;
  ho.command = cfg_.on_complete;
  ho.timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(cfg_.on_complete_timeout_s));
  ho.jobs = cfg_.on_complete_jobs;
  hooks_ = std::make_unique<HookRunner>(ho, clock_);
  spdlog::info("Info: on-complete: {} (at most {} at once, timeout {:g} s)",
               common::json_quote(cfg_.on_complete), cfg_.on_complete_jobs,
               cfg_.on_complete_timeout_s);
}

Receiver::~Receiver() = default;

void Receiver::publish(const Assembler& assembler) {
  WriterStatus s;
  s.counters = assembler.counters();
  s.fec = assembler.fec();
  s.waits = assembler.wait_stats();
  s.packets_lost = assembler.lost();
  s.senders = assembler.senders();
  s.files_in_flight = assembler.files_in_flight();
  std::lock_guard lock(status_mu_);
  // A gap filled by a late packet shrinks seq().lost(); a counter must not go down.
  s.packets_lost = std::max(s.packets_lost, published_.packets_lost);
  // Per lane the same.
  s.lane_lost.resize(lanes_.size());
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const uint64_t prev = i < published_.lane_lost.size() ? published_.lane_lost[i] : 0;
    s.lane_lost[i] = std::max(prev, assembler.lost(i));
  }
  published_ = s;
}

void Receiver::note_writer_pass() {
  writer_passes_.fetch_add(1, std::memory_order_relaxed);
  if (announced_) return;
  for (const Lane& l : lanes_) {
    if (l.ingest->counters().passes.load(std::memory_order_relaxed) == 0) return;
  }
  announced_ = true;
  spdlog::info("{}", start_line_);
  if (observer_ != nullptr) observer_->on_receiving(link_name_);
}

void Receiver::tick_observer() {
  if (observer_ == nullptr) return;
  Liveness l;
  // The slowest lane's: a stuck receive thread shows.
  l.ingest_passes = UINT64_MAX;
  for (const Lane& lane : lanes_) {
    l.ingest_passes =
        std::min(l.ingest_passes, lane.ingest->counters().passes.load(std::memory_order_relaxed));
  }
  l.writer_passes = writer_passes_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(status_mu_);
    l.files_passed = published_.counters.files_passed;
    l.files_failed = published_.counters.files_failed;
  }
  observer_->on_tick(l);
}

ReceiverStatus Receiver::lane_status(size_t lane) const {
  ReceiverStatus s;
  {
    std::lock_guard lock(status_mu_);
    s.writer = published_;
  }
  if (lane < s.writer.lane_lost.size()) s.writer.packets_lost = s.writer.lane_lost[lane];
  const Lane& l = lanes_.at(lane);
  const IngestCounters& c = l.ingest->counters();
  s.datagrams = c.datagrams.load(std::memory_order_relaxed);
  s.datagram_bytes = c.bytes.load(std::memory_order_relaxed);
  s.ring_full_drops = c.ring_full_drops.load(std::memory_order_relaxed);
  s.ring_bytes = l.ring->capacity();
  s.ring_used = l.ring->used();
  s.ring_high_water =
      std::max<size_t>(s.ring_used, c.ring_high_water.load(std::memory_order_relaxed));
  s.last_datagram_ns = c.last_datagram_ns.load(std::memory_order_relaxed);
  // UDP reads the kernel's count from /proc, safe from any thread; the device transport's is a
  // plain field of the receive thread's.
  if (cfg_.transport == common::TransportKind::kUdp) s.link_drops = l.source->link_drops();
  return s;
}

ReceiverStatus Receiver::status() const {
  ReceiverStatus s = lane_status(0);
  for (size_t i = 1; i < lanes_.size(); ++i) {
    const ReceiverStatus o = lane_status(i);
    s.datagrams += o.datagrams;
    s.datagram_bytes += o.datagram_bytes;
    s.ring_full_drops += o.ring_full_drops;
    s.ring_bytes += o.ring_bytes;
    s.ring_used += o.ring_used;
    s.ring_high_water += o.ring_high_water;
    s.last_datagram_ns = std::max(s.last_datagram_ns, o.last_datagram_ns);
    if (o.link_drops >= 0) s.link_drops = std::max<long>(s.link_drops, 0) + o.link_drops;
  }
  return s;
}

std::vector<std::jthread> Receiver::start_ingest() {
  std::vector<std::jthread> threads;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Ingest& ingest = *lanes_[i].ingest;
    const std::string name = lanes_.size() == 1 ? "dd-rx" : fmt::format("dd-rx{}", i);
    threads.push_back(common::start_named_thread(
        name, [&ingest](std::stop_token rx_stop) { ingest.run(rx_stop); }));
  }
  return threads;
}

ReceiveTotals Receiver::run(std::stop_token stop) {
  Assembler assembler(cfg_, *out_, *writer_, block_memory_, clock_);
  assembler.set_earlier(journal_.get(), recovery_.known, recovery_.failed);
  assembler.set_status_board(board_.get());
  if (cfg_.transport == common::TransportKind::kDevice) {
    assembler.set_sender([d = "device " + cfg_.device] { return d; });
  } else {
    // The first lane's peer: every lane's datagrams come from the one sender.
    assembler.set_sender([&src = *lanes_.front().source] { return src.peer(); });
  }
  if (hooks_) {
    // The command runs from the receiver's working folder: give it an absolute path.
    const std::string cwd = std::filesystem::current_path().string();
    auto absolute = [cwd](const std::string& p) {
      return p.empty() || p.front() == '/' ? p : cwd + "/" + p;
    };
    assembler.set_on_delivered([&h = *hooks_, absolute](const DeliveredFile& d) {
      DeliveredFile abs = d;
      abs.final_path = absolute(d.final_path);
      if (!d.displaced_to.empty()) h.file_moved(abs.final_path, absolute(d.displaced_to));
      h.enqueue(abs);
    });
  }
  WriterLoop::Hooks hooks;
  hooks.on_pass = [this] { note_writer_pass(); };
  hooks.publish = [this](const Assembler& a) { publish(a); };
  hooks.on_interval = [this] { tick_observer(); };
  std::vector<WriterLoop::Input> inputs;
  for (Lane& l : lanes_) inputs.push_back({l.ring.get(), &l.ingest->drops()});
  WriterLoop writer(cfg_, std::move(inputs), assembler, clock_, std::move(hooks));
  // The threads that move datagrams start here and end here: the writer stops the ingest
  // threads (and waits for them) before it drains what is left in the rings.
  std::vector<std::jthread> rx = start_ingest();
  std::jthread write = common::start_named_thread("dd-write", [&] {
    writer.run(stop, [&rx] {
      for (std::jthread& t : rx) t.request_stop();
      for (std::jthread& t : rx) t.join();
    });
  });
  write.join();
  assembler.log_summary();
  if (hooks_) {
    // --once: the session is over but its hooks are part of the job (a signal still cuts it
    // short). Otherwise only the running ones finish.
    if (cfg_.once) hooks_->wait_idle(stop);
    hooks_->stop();
  }
  ReceiveTotals t;
  t.files_passed = assembler.counters().files_passed;
  t.files_failed = assembler.counters().files_failed;
  t.files_refused = assembler.counters().files_refused;
  t.files_filtered = assembler.counters().files_filtered;
  t.lost = assembler.lost();
  report_drops(&t);
  return t;
}

void Receiver::report_drops(ReceiveTotals* t) const {
  for (const Lane& l : lanes_) {
    const std::string where = lanes_.size() > 1 ? fmt::format(" on {}", l.name) : "";
    if (const long drops = l.source->link_drops(); drops > 0) {
      if (cfg_.transport == common::TransportKind::kDevice) {
        spdlog::warn(
            "Warn: {} byte(s) read from the device{} did not form valid packets and were "
            "skipped",
            drops, where);
      } else {
        spdlog::warn(
            "Warn: the kernel dropped {} datagram(s) on the socket{} (receive buffer "
            "overrun: lower the sender's --rate or raise --socket-buffer-mb)",
            drops, where);
      }
    }
    const IngestCounters& c = l.ingest->counters();
    t->datagrams += c.datagrams.load();
    const uint64_t full = c.ring_full_drops.load();
    t->ring_full_drops += full;
    if (full > 0) {
      spdlog::warn(
          "Warn: {} packet(s){} were dropped because the receive buffer was full (ring "
          "high-water {} of {} bytes)",
          full, where, c.ring_high_water.load(), l.ring->capacity());
    }
  }
}

}  // namespace ddft::receiver
