#include "receiver/assembly/writer_loop.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

namespace ddft::receiver {

namespace {

// How often ring drops are named by file and the counters published: a few lines a second at
// most, well within a file's end grace.
constexpr auto kInterval = std::chrono::milliseconds(250);
// How long a pass waits for datagrams with I/O pending, and without.
constexpr auto kBusyWait = std::chrono::microseconds(200);
constexpr auto kIdleWait = std::chrono::microseconds(20000);
// Ring records are handed back to the ingest thread in groups of at least this many (once every
// datagram in them has been handed on), so it never waits on a whole drain.
constexpr size_t kReleaseGroup = 64;
// Datagrams the open workers take at a time: about 1 MiB of datagrams of the default size, so
// that each worker's share of AES-GCM outweighs waking it (docs/performance.md has what sealing
// costs).
constexpr size_t kOpenBatch = 128;
// With lanes, the rings are drained this many bytes of each in turn.
constexpr uint64_t kLaneSlice = uint64_t{1} << 20;

// The open workers --workers asks for; with one, a batch is one datagram.
UnsealPool make_unseal_pool(const ReceiverConfig& cfg) {
  const unsigned workers = open_workers(cfg.workers);
  return UnsealPool(workers, cfg.keys, cfg.max_packet_size, workers > 1 ? kOpenBatch : 1);
}

}  // namespace

WriterLoop::WriterLoop(const ReceiverConfig& cfg, std::vector<Input> inputs, Assembler& assembler,
                       common::Clock& clock, Hooks hooks)
    : cfg_(cfg),
      inputs_(std::move(inputs)),
      assembler_(assembler),
      clock_(clock),
      hooks_(std::move(hooks)),
      pool_(make_unseal_pool(cfg)),
      saved_(inputs_.size()) {
  batch_.reserve(pool_.batch());
  for (const Input& in : inputs_) rings_.push_back(in.ring);
}

void WriterLoop::run(std::stop_token stop, const std::function<void()>& stop_upstream) {
  try {
    loop(stop);
  } catch (const std::exception& e) {
    spdlog::error("Error: writer thread stopped: {}", e.what());
  }
  finish(stop_upstream);
}

void WriterLoop::loop(std::stop_token stop) {
  auto last_interval = clock_.now();
  while (!stop.stop_requested()) {
    if (hooks_.on_pass) hooks_.on_pass();
    const auto t0 = clock_.now();
    const size_t n = ByteRing::wait_any(rings_, assembler_.io_pending() ? kBusyWait : kIdleWait);
    assembler_.note_read_wait(clock_.now() - t0);
    if (n > 0) {
      // The `receiving on` line before anything the first datagrams make the assembler log:
      // with a sender already sending as the receiver starts, its session's first line came
      // before it, and dd_reconcile took that session for an earlier run's. (Data in the ring
      // means the ingest thread has begun a pass, so the line is logged now.)
      if (hooks_.on_pass) hooks_.on_pass();
      drain_all();
    }
    take_saved();
    if (t0 - last_interval >= kInterval) {
      last_interval = t0;
      note_drops();
      if (hooks_.publish) hooks_.publish(assembler_);
      if (hooks_.on_interval) hooks_.on_interval();
    }
    assembler_.poll(false);
    if (cfg_.once && assembler_.session_finished()) break;
  }
}

void WriterLoop::finish(const std::function<void()>& stop_upstream) {
  stop_upstream();
  try {
    drain_all();
    take_saved();
    assembler_.fail_all("receiver stopped before the file was complete");
    if (hooks_.publish) hooks_.publish(assembler_);
  } catch (const std::exception& e) {
    spdlog::error("Error: while stopping: {}", e.what());
  }
}

void WriterLoop::note_drops() {
  for (const Input& in : inputs_) {
    if (auto dropped = in.drops->take(); !dropped.empty()) assembler_.note_ring_drops(dropped);
  }
}

void WriterLoop::drain_all() {
  if (inputs_.size() == 1) {
    drain(0, inputs_[0].ring->produced());
    return;
  }
  // What each ring holds now is taken a slice of each in turn: a striped file's data comes down
  // every lane at once, and draining one full ring before the next would hand the assembler one
  // lane's ranges far ahead of the others', beyond what the write blocks hold in file order.
  std::vector<uint64_t> ends(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) ends[i] = inputs_[i].ring->produced();
  bool more = true;
  while (more) {
    more = false;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      ByteRing& ring = *inputs_[i].ring;
      if (ring.consumed() >= ends[i]) continue;
      drain(i, std::min(ends[i], ring.consumed() + kLaneSlice));
      more = more || ring.consumed() < ends[i];
    }
  }
}

void WriterLoop::drain(size_t lane, uint64_t end) {
  ByteRing& ring = *inputs_[lane].ring;
  uint64_t pos = ring.consumed();
  // Records go back to the ingest thread only once every datagram in them has been handed on
  // (a batch may end mid-record): up to `handed`, in groups of at least kReleaseGroup records.
  uint64_t handed = pos;
  size_t since_release = 0;
  try {
    while (pos < end) {
      const ByteRing::Record r = ring.next(pos);
      pos = r.next;
      if (!r.pad) {
        // A datagram over --max-packet-size (a bundle's buffer is larger than that) is handed
        // on as truncated: it is counted as a bad length, as the kernel's truncation would
        // have been.
        common::for_each_datagram(r.bytes, r.real_len, r.segment,
                                  [&](std::span<const uint8_t> d, size_t real_len) {
                                    if (d.size() > cfg_.max_packet_size) {
                                      d = d.first(cfg_.max_packet_size);
                                      real_len = std::max(real_len, cfg_.max_packet_size + 1);
                                    }
                                    Prechecked& pre = batch_.emplace_back();
                                    pre.data = d;
                                    pre.real_len = real_len;
                                    pre.lane = lane;
                                    if (batch_.size() == pool_.batch()) hand_on();
                                  });
      }
      if (batch_.empty()) handed = pos;
      if (++since_release >= kReleaseGroup && handed > ring.consumed()) {
        ring.release(handed);
        since_release = 0;
      }
    }
    hand_on();
    ring.release(pos);
  } catch (...) {
    // What was handed on is not handed on again by the drain that finish() does; the batch
    // that failed is taken again there (any of it handled already is then a duplicate seq).
    batch_.clear();
    if (handed > ring.consumed()) ring.release(handed);
    throw;
  }
}

void WriterLoop::hand_on() {
  if (batch_.empty()) return;
  pool_.run(batch_);
  for (const Prechecked& pre : batch_) assembler_.on_prechecked(pre);
  batch_.clear();
}

void WriterLoop::take_saved() {
  for (size_t lane = 0; lane < inputs_.size(); ++lane) {
    std::deque<DropLedger::Saved>& saved = saved_[lane];
    for (auto& l : inputs_[lane].drops->take_saved()) saved.push_back(std::move(l));
    while (!saved.empty() && inputs_[lane].ring->consumed() >= saved.front().after) {
      const auto& bytes = saved.front().bytes;
      assembler_.on_datagram(bytes, bytes.size(), lane);
      saved.pop_front();
    }
  }
}

}  // namespace ddft::receiver
