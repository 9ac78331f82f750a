// A fixed set of equal, page-aligned buffers handed out by index (slot handles): the sender's
// reader fills them, its transmitter empties them, and dd_iotest --test read times the same.
//
// The pool owns the slab (allocated once, never grown) and lends its buffers by index: a buffer
// acquired is its holder's until released, exactly once. Any thread may acquire and release.
// The buffers may be split into shares (the sender's channels), each lent only to those who ask
// for that share, so that one holder emptying its share never leaves another without a buffer.
// The constructor throws std::bad_alloc when the slab cannot be mapped; nothing else throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/bounded_queue.hpp"

namespace ddft::common {

// `count` buffers of `size` bytes in one slab allocated once. acquire() blocks while every buffer
// is out. Every member but the constructor is thread-safe: any thread may acquire and release.
class BufferPool {
 public:
  // Throws std::bad_alloc when the slab cannot be mapped.
  BufferPool(size_t count, size_t size);
  // shares.size() shares, share i of shares[i] buffers (each at least 1), in one slab.
  BufferPool(const std::vector<size_t>& shares, size_t size);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  // Returns a free buffer of share `share` (< shares()), or -1 once close() was called.
  int acquire(size_t share = 0);
  // Like acquire() but returns -1 at once when every buffer of the share is out (or the pool is
  // closed).
  int try_acquire(size_t share = 0);
  // Gives back a buffer acquire() returned (to its own share); each exactly once.
  void release(int index);
  // Wakes every acquire() with -1, now and from now on.
  void close();
  // Fills every buffer with pseudo-random bytes: the data of synthetic sources. Call before use.
  void fill_pseudo_random();
  // The buffer `index` (buffer_size() bytes), valid as long as the pool.
  uint8_t* data(int index) { return slab_.data() + static_cast<size_t>(index) * size_; }
  // The whole slab, for registering it with io_uring as fixed buffers.
  std::span<uint8_t> memory() { return slab_.span(); }
  size_t count() const { return slab_.size() / size_; }
  size_t buffer_size() const { return size_; }

 private:
  AlignedBuffer slab_;
  size_t size_;
  // Per share, the indices of its buffers not handed out; share i holds the indices from
  // first_[i] up to first_[i + 1].
  std::vector<std::unique_ptr<BoundedQueue<int>>> free_;
  std::vector<size_t> first_;
};

}  // namespace ddft::common
