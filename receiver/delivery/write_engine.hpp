// The write engine: the pool of write blocks and the way their data reaches the disk. It hands
// out blocks, queues each block's writes (and the committer's folder syncs) on the BlockIo,
// parks what the BlockIo has no room for in a backlog, and collects completions.
//
// It never calls back into anything: reap() only collects completions, which the file table
// handles (handle_completions()) at one point of its own (FileTable::pump()). That is
// the seam where a write thread can later sit, with the completions as its output queue.
//
// Writer thread only (as the BlockIo it drives). No allocation per block or per write once the
// backlog and the completion list have grown to their working size.
// The BlockIo and the block memory are the caller's and must outlive it; the blocks are the
// engine's, lent to a file while taken. It throws only what the BlockIo throws when it breaks; a
// failed write is a completion with its error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/block_io.hpp"

namespace ddft::receiver {

struct File;

// One write block: `size` bytes of one file starting at block `index` * block size.
struct Block {
  File* file = nullptr;  // the owner while taken; null while free
  uint64_t index = 0;    // block number within the file
  uint8_t* mem = nullptr;
  size_t size = 0;                                    // bytes of the file this block covers
  size_t filled = 0;                                  // bytes received in this incarnation
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // filled [start, end), merged
  bool hashed = false;
  bool submitted = false;  // writes queued
  bool orphan = false;     // no longer in file->blocks (evicted or file failed)
  int writes_pending = 0;
};

class WriteEngine {
 public:
  // `io` and `memory` must outlive the engine; `memory` is cut into blocks of `block_size`.
  WriteEngine(common::BlockIo& io, common::AlignedBuffer& memory, size_t block_size);
  WriteEngine(const WriteEngine&) = delete;
  WriteEngine& operator=(const WriteEngine&) = delete;

  size_t block_size() const { return block_size_; }
  // A free block set up for block `index` of `f` (a file of `file_size` bytes), or null when
  // every block is taken.
  Block* take(File* f, uint64_t index, uint64_t file_size);
  // True when take() would give a block.
  bool has_free() const { return !free_blocks_.empty(); }
  // Puts `b` back on the free list. Its writes must be complete.
  void give_back(Block& b);
  // Queues the writes of `b`'s filled ranges: the 4 KiB-aligned part of each through
  // `direct_fd` (when valid, -1 otherwise), the rest through `fd`. Returns how many writes it
  // queued; each comes back as one completion whose cookie is &b.
  int submit_block(Block& b, int direct_fd, int fd);
  // Queues an fsync (or fdatasync) of `fd` whose completion carries `cookie`.
  void submit_sync(int fd, uint64_t cookie, bool datasync = false);
  // Hands the backlog to the BlockIo as far as it has room.
  void flush_backlog();
  // Collects completed requests (with `wait`, blocks until one completes when any is in
  // flight); returns how many. Calls nothing: see handle_completions().
  size_t reap(bool wait);
  // Calls `handle` with each completion collected so far, in order, each exactly once: when
  // `handle` throws, the completions after the one it threw on stay for the next call.
  // Completions reaped meanwhile (`handle` may reap) wait for the next call too.
  template <typename F>
  void handle_completions(F&& handle) {
    handling_.swap(completions_);  // two vectors that trade places: no allocation once grown
    size_t i = 0;
    try {
      for (; i < handling_.size(); ++i) handle(handling_[i]);
    } catch (...) {
      completions_.insert(completions_.begin(),
                          handling_.begin() + static_cast<std::ptrdiff_t>(i + 1), handling_.end());
      handling_.clear();
      throw;
    }
    handling_.clear();
  }
  size_t in_flight() const { return io_.in_flight(); }
  bool backlog_empty() const { return backlog_.empty(); }
  // Writes or syncs queued or in flight.
  bool pending() const { return io_.in_flight() > 0 || !backlog_.empty(); }

 private:
  // A write or sync the BlockIo had no room for yet; submitted by flush_backlog(), in order.
  struct PendingOp {
    bool sync = false;
    int fd = -1;
    const uint8_t* buf = nullptr;
    size_t len = 0;
    uint64_t offset = 0;
    uint64_t cookie = 0;
    bool datasync = false;
  };
  void submit(const PendingOp& op);
  bool try_submit(const PendingOp& op);

  common::BlockIo& io_;
  size_t block_size_;
  std::vector<Block> blocks_;
  std::vector<int> free_blocks_;
  std::deque<PendingOp> backlog_;
  std::vector<common::IoCompletion> completions_;
  std::vector<common::IoCompletion> handling_;  // handle_completions()'s, while it runs
  common::BlockIo::Callback collect_;           // made once: reap() builds no function object
};

}  // namespace ddft::receiver
