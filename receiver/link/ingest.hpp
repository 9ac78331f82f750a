// Ingest stage: drains the link into the ring as fast as the link delivers. Never blocks on the
// disk: when the ring is full, datagrams are received into a scratch area, dropped and counted.
//
// run() on the lane's receive thread (dd-rx, or dd-rxK with lanes), the ring's one producer; the
// counters and the ledger are read by other threads as their comments say. The source and the
// ring are the caller's and must outlive run(). run() throws nothing: a receive error ends the
// loop with an Error line.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <stop_token>
#include <vector>

#include "common/transport.hpp"
#include "receiver/link/byte_ring.hpp"

namespace ddft::receiver {

struct IngestCounters {
  std::atomic<uint64_t> datagrams{0};  // received from the link
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> ring_full_drops{0};
  std::atomic<uint64_t> ring_high_water{0};  // most ring bytes ever in use
  // std::chrono::steady_clock time of the last datagram received (ns since its epoch), 0 before
  // the first. Relaxed: for --metrics only.
  std::atomic<int64_t> last_datagram_ns{0};
  // Passes of the receive loop (one per receive call, which waits at most 50 ms): a watchdog
  // reads it to tell a live thread from a stuck one. Relaxed.
  std::atomic<uint64_t> passes{0};
};

// Datagrams dropped in a full ring, by the file whose data they carried (read from their header
// unchecked: a hint for the log), handed from the ingest thread to the writer thread.
//
// The sender's file lists (kFileList) are kept, not dropped: they name the files whose packets a
// full ring loses, so they must survive exactly when the ring overflows. So are heartbeats (one
// a second): the final one ends the session, which --once waits for. Each is handed over with
// the ring position it arrived at, and the writer takes it only once it has taken every datagram
// that came before it (it names files finished before it was sent). At most kSavedBytes are kept
// at once; past that they are dropped like the rest and counted.
class DropLedger {
 public:
  struct Entry {
    uint64_t session = 0;
    uint32_t file_id = 0;  // 0: not a data packet
    uint64_t count = 0;
  };
  struct Saved {
    uint64_t after = 0;  // ByteRing::produced() when it arrived
    std::vector<uint8_t> bytes;
  };
  static constexpr size_t kSavedBytes = size_t{16} << 20;
  // Ingest thread: one batch of dropped datagrams, with the ring's produced() count. Returns
  // how many of them were file lists kept (not dropped).
  size_t add(std::span<const std::span<uint8_t>> datagrams, std::span<const size_t> lens,
             uint64_t ring_position = 0);
  // Writer thread: what was dropped since the last call (cheap when nothing was).
  std::vector<Entry> take();
  // Writer thread: the file lists saved since the last call, in arrival order (cheap when none).
  std::vector<Saved> take_saved();
  // Lists or heartbeats that could not be saved (the saved bytes were at their bound). Any
  // thread.
  uint64_t lists_lost() const { return lists_lost_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> any_{false};
  std::atomic<bool> any_saved_{false};
  std::atomic<uint64_t> lists_lost_{0};
  std::mutex mu_;
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> counts_;
  std::vector<Saved> saved_;  // guarded by mu_
  size_t saved_bytes_ = 0;    // guarded by mu_: kept and not yet taken
};

class Ingest {
 public:
  // `source` and `ring` must outlive run(). `batch` receive buffers at most per receive call
  // (at most kBundleBatch when the source bundles datagrams); `max_packet`: the longest
  // datagram kept whole, when it does not.
  Ingest(common::DatagramSource& source, ByteRing& ring, size_t batch, size_t max_packet);
  // Runs on the thread "dd-rx" until stopped. Link errors are logged and retried; a stop ends it.
  void run(std::stop_token stop);
  const IngestCounters& counters() const { return counters_; }
  DropLedger& drops() { return drops_; }

 private:
  // Receive buffers per call when each takes a bundle of up to 64 KB.
  static constexpr size_t kBundleBatch = 16;

  // Counts what one receive call gave.
  void count(std::span<const std::span<uint8_t>> bufs, std::span<const size_t> lens,
             std::span<const size_t> segs);
  // What the full ring could not take: to the ledger, with a warning a second at most.
  void drop(std::span<const std::span<uint8_t>> bufs, std::span<const size_t> lens,
            std::span<const size_t> segs);

  common::DatagramSource& source_;
  ByteRing& ring_;
  bool bundles_;
  size_t max_len_;  // one receive buffer
  size_t batch_;
  std::vector<uint8_t> scratch_;  // where datagrams go when the ring is full
  std::vector<std::span<uint8_t>> dropped_;
  std::vector<size_t> dropped_lens_;
  uint64_t drops_logged_ = 0;
  std::chrono::steady_clock::time_point last_drop_log_{};
  IngestCounters counters_;
  DropLedger drops_;
};

}  // namespace ddft::receiver
