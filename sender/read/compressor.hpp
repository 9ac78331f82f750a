// The compression stage (--compress): between the reader and the lanes, a WorkSink that
// compresses each block (one reader block = one zstd frame) on a pool of dd-zstdN worker
// threads and hands every item on in the order the reader pushed it.
//
//   Reader ──push()──> BoundedQueue<Job> ──> dd-zstd1..N: compress into a scratch buffer, copy
//                     (workers x 2 jobs)      the frame back over the block when it saves at
//                                             least 1/kZMinSavingDiv, else leave the block raw;
//                                             then, in ticket order, push() on to `out`
//
// The reader hashes the file's own bytes before a block comes here, so the end's digest is the
// original file's. A block keeps its pool buffer: a frame is never longer than its block, so it
// is written over it and no second buffer is taken (no pool deadlock, no extra memory but one
// scratch block per worker). Back-pressure: a worker whose turn it is blocks in out.push(); the
// others wait for their turn; the job queue fills; the reader blocks. --compress auto first
// tries a 64 KiB sample from the middle of the block at level 1, and sends the block raw when
// the sample does not shrink either (docs/performance.md has what each mode costs).
//
// push() and close() on the reader's thread. The compressor owns its workers (joined by close()
// or its destructor) and their zstd contexts; the pool and `out` are the caller's. The
// constructor throws std::bad_alloc when zstd cannot make a context; a block that fails to
// compress goes raw (logged), and a failed push on to `out` ends the stream as if refused: no
// exception leaves a worker.
#pragma once

#include <zstd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "common/bounded_queue.hpp"
#include "common/buffer_pool.hpp"
#include "sender/config.hpp"
#include "sender/send_status.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

struct CompressTotals {
  uint64_t blocks = 0;             // blocks seen
  uint64_t blocks_compressed = 0;  // sent as frames
  uint64_t raw_bytes = 0;          // bytes of every block seen
  uint64_t sent_bytes = 0;         // what they took on the wire as data (frames, raw blocks)

  CompressTotals& operator+=(const CompressTotals& o) {
    blocks += o.blocks;
    blocks_compressed += o.blocks_compressed;
    raw_bytes += o.raw_bytes;
    sent_bytes += o.sent_bytes;
    return *this;
  }
};

class Compressor final : public WorkSink {
 public:
  // `pool` and `out` must outlive the compressor. Starts cfg.compress_workers threads.
  Compressor(const SenderConfig& cfg, BufferPool& pool, WorkSink& out);
  ~Compressor() override;
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  // The reader's thread: queues `item`. False (item untouched) once `out` refused an item or
  // the compressor is closed.
  bool push(WorkItem&& item) override;
  // Drains: every queued item is handed on, the workers end, then `out` is closed.
  void close() override;

  CompressTotals totals() const;
  // Counts into `status` too (--metrics), from now on; set before the first push().
  void set_status(SendStatus* status) { status_ = status; }

 private:
  struct Job {
    uint64_t ticket = 0;
    WorkItem item;
  };
  struct Worker {
    ZSTD_CCtx* cctx = nullptr;   // at --compress's level, with the content checksum
    ZSTD_CCtx* probe = nullptr;  // auto: the sample at level 1
    std::vector<uint8_t> scratch;
  };
  void run(Worker& w);
  // Closes the queue, joins the workers and frees their contexts (the destructor, or a
  // constructor that failed half-way).
  void shut_down();
  void compress(Worker& w, WorkItem& item);
  void count(size_t raw, size_t sent, bool compressed);
  void hand_on(uint64_t ticket, WorkItem&& item);

  const SenderConfig& cfg_;
  BufferPool& pool_;
  WorkSink& out_;
  common::BoundedQueue<Job> jobs_;
  uint64_t next_ticket_ = 0;  // reader thread only
  std::mutex turn_mu_;
  std::condition_variable turn_cv_;
  uint64_t turn_ = 0;                 // the ticket whose item goes on next (turn_mu_)
  std::atomic<bool> refused_{false};  // out refused an item: the stream is over
  bool closed_ = false;               // reader thread only
  std::vector<Worker> workers_;
  std::vector<std::jthread> threads_;
  std::atomic<uint64_t> blocks_{0}, compressed_{0}, raw_bytes_{0}, sent_bytes_{0};
  SendStatus* status_ = nullptr;
};

}  // namespace ddft::sender
