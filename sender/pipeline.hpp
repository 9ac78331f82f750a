// The sender pipeline.
//
//   sources ──> [reader thread "dd-read"] ──(bounded queue of WorkItem, slot handles)──>
//               reads blocks into a         blocks when full: back-pressure
//               recycled buffer pool,
//               hashes them (B2B/SHA256)
//
//   ──> [transmit thread "dd-tx"] ──> DatagramSink (UDP sendmmsg / device)
//        packetises into a batch arena, paces (token bucket on absolute deadlines),
//        repeats control packets, sends heartbeats when idle, returns buffers to the pool
//
// Every file is: announce x N, data..., end x N (with the digest), or abort x N when the file
// could not be read to its end; with --repeat R, all of that R times (copies), the file read
// again for each. Among its data, after every max(1 MiB, 1024 x announce size) bytes of a copy,
// one repeated announce (kFlagRepeat; at most 1/1024 of the bytes) for a receiver that joined
// mid-file. With --fec, parity packets follow every window of packets and close it at the end of
// each file. Heartbeats go out when idle and between files. Every 5 s or 256 finished files, a
// file list x N names the files finished or aborted since the last one (their digests
// included). The session closes with its complete file list x N (or, past 100,000 files or in a
// hot folder, the files since the last list) and a final heartbeat x N.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/bounded_queue.hpp"
#include "common/clock.hpp"
#include "common/hash.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/file_list.hpp"

namespace ddft::sender {

struct FileMeta {
  uint32_t file_id = 0;
  std::string rel_path;
  std::string src_path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint64_t tag = 0;  // SourceFile::tag
};

// One unit of work from the reader to the transmitter. Blocks refer to a pool buffer by index;
// the transmitter gives the buffer back once its data is packetised. kSkip: a file that could not
// be opened (never announced); it reaches the transmitter only so that observers hear of it in
// order.
struct WorkItem {
  enum class Kind { kBegin, kBlock, kEnd, kAbort, kSkip };
  Kind kind = Kind::kBegin;
  std::shared_ptr<const FileMeta> meta;
  int buffer = -1;
  uint64_t offset = 0;
  size_t len = 0;
  common::Digest digest{};  // kEnd
  std::string reason{};     // kAbort, kSkip
  uint8_t copy = 0;         // --repeat: which copy of the file (kBegin, kBlock, kEnd)
};

// A fixed set of equal, page-aligned buffers allocated once; acquire() blocks while all are out.
class BufferPool {
 public:
  BufferPool(size_t count, size_t size);
  // Returns a free buffer's index, or -1 once close() was called.
  int acquire();
  // Like acquire() but returns -1 at once when every buffer is out (or the pool is closed).
  int try_acquire();
  void release(int index);
  void close() { free_.close(); }
  // Fills every buffer with pseudo-random bytes: the data of synthetic sources. Call before use.
  void fill_pseudo_random();
  uint8_t* data(int index) { return slab_.data() + static_cast<size_t>(index) * size_; }
  std::span<uint8_t> memory() { return slab_.span(); }
  size_t count() const { return slab_.size() / size_; }
  size_t buffer_size() const { return size_; }

 private:
  common::AlignedBuffer slab_;
  size_t size_;
  common::BoundedQueue<int> free_;
};

struct SendTotals {
  uint64_t files_sent = 0;
  uint64_t files_failed = 0;
  uint64_t bytes = 0;          // file bytes
  uint64_t datagrams = 0;
  uint64_t wire_bytes = 0;
  uint64_t session_id = 0;
};

// Live numbers for --metrics, written by the transmit thread with relaxed atomics (no lock on the
// send path) and read by any thread. Give the same one to every Sender of a program: the totals
// add up over its sessions.
struct SendStatus {
  std::atomic<uint64_t> files_sent{0};
  std::atomic<uint64_t> files_failed{0};  // aborted on the wire, or never read (no file id)
  std::atomic<uint64_t> bytes{0};         // file bytes packetised (every --repeat copy)
  std::atomic<uint64_t> datagrams{0};
  std::atomic<uint64_t> wire_bytes{0};
  std::atomic<uint64_t> file_bytes{0};   // the file being sent: bytes of it packetised
  std::atomic<uint64_t> file_size{0};    // its size (0 between files)
  std::atomic<int64_t> last_send_ns{0};  // Clock time of the last batch sent, 0 before
  std::atomic<uint64_t> session_id{0};   // the current session, 0 before the first
};

// Runs one sending session over `sink`: every file of `files`, then the final heartbeat.
// `clock` paces; both must outlive the call. Thread-safe to construct; run() once.
class Sender {
 public:
  Sender(const SenderConfig& cfg, common::DatagramSink& sink, common::Clock& clock);
  // `o` hears of every file (from the transmit thread); it must outlive run(). Before run().
  void add_observer(SendObserver* o) { observers_.add(o); }
  // Sends every file `files` gives until it gives none; returns then or when `stop` is requested
  // (the file in progress is then aborted on the wire). Files that could not be read are counted
  // in files_failed.
  SendTotals run(FileSource& files, std::stop_token stop);
  SendTotals run(const std::vector<SourceFile>& files, std::stop_token stop);
  uint64_t session_id() const { return session_id_; }
  // Publishes this session's numbers into `status` (must outlive run()). Call before run().
  void set_status(SendStatus* status) { status_ = status; }

 private:
  const SenderConfig& cfg_;
  common::DatagramSink& sink_;
  common::Clock& clock_;
  uint64_t session_id_;
  ObserverList observers_;
  SendStatus* status_ = nullptr;
};

// The reader's block size: --read-block-kb rounded down to whole data chunks, so that no data
// packet spans two blocks (at least one chunk).
size_t reader_block_size(const SenderConfig& cfg);

// A random 64-bit session id (never 0).
uint64_t new_session_id();

}  // namespace ddft::sender
