// Ingest stage: drains the link into the ring as fast as the link delivers. Never blocks on the
// disk: when the ring is full, datagrams are received into a scratch area, dropped and counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <stop_token>
#include <vector>

#include "common/transport.hpp"
#include "receiver/slot_ring.hpp"

namespace ddft::receiver {

struct IngestCounters {
  std::atomic<uint64_t> datagrams{0};   // received from the link
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> ring_full_drops{0};
  std::atomic<uint64_t> ring_high_water{0};  // most slots ever in use
  // std::chrono::steady_clock time of the last datagram received (ns since its epoch), 0 before
  // the first. Relaxed: for --metrics only.
  std::atomic<int64_t> last_datagram_ns{0};
  // Passes of the receive loop (one per receive call, which waits at most 50 ms): a watchdog
  // reads it to tell a live thread from a stuck one. Relaxed.
  std::atomic<uint64_t> passes{0};
};

// Datagrams dropped in a full ring, by the file whose data they carried (read from their header
// unchecked: a hint for the log), handed from the ingest thread to the writer thread.
class DropLedger {
 public:
  struct Entry {
    uint64_t session = 0;
    uint32_t file_id = 0;  // 0: not a data packet
    uint64_t count = 0;
  };
  // Ingest thread: one batch of dropped datagrams.
  void add(std::span<const std::span<uint8_t>> datagrams, std::span<const size_t> lens);
  // Writer thread: what was dropped since the last call (cheap when nothing was).
  std::vector<Entry> take();

 private:
  std::atomic<bool> any_{false};
  std::mutex mu_;
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> counts_;
};

class Ingest {
 public:
  // `source` and `ring` must outlive run(). `batch` datagrams at most per receive call.
  Ingest(common::DatagramSource& source, SlotRing& ring, size_t batch);
  // Runs on the thread "udp_rx" until stopped. Link errors are logged and retried; a stop ends it.
  void run(std::stop_token stop);
  const IngestCounters& counters() const { return counters_; }
  DropLedger& drops() { return drops_; }

 private:
  common::DatagramSource& source_;
  SlotRing& ring_;
  size_t batch_;
  std::vector<uint8_t> scratch_;  // where datagrams go when the ring is full
  IngestCounters counters_;
  DropLedger drops_;
};

}  // namespace ddft::receiver
