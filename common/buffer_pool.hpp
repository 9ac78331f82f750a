// A fixed set of equal, page-aligned buffers handed out by index (slot handles): the sender's
// reader fills them, its transmitter empties them, and dd_iotest --test read times the same.
//
// The pool owns the slab (allocated once, never grown) and lends its buffers by index: a buffer
// acquired is its holder's until released, exactly once. Any thread may acquire and release.
// The constructor throws std::bad_alloc when the slab cannot be mapped; nothing else throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/aligned_buffer.hpp"
#include "common/bounded_queue.hpp"

namespace ddft::common {

// `count` buffers of `size` bytes in one slab allocated once. acquire() blocks while every buffer
// is out. Every member but the constructor is thread-safe: any thread may acquire and release.
class BufferPool {
 public:
  // Throws std::bad_alloc when the slab cannot be mapped.
  BufferPool(size_t count, size_t size);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  // Returns a free buffer's index, or -1 once close() was called.
  int acquire();
  // Like acquire() but returns -1 at once when every buffer is out (or the pool is closed).
  int try_acquire();
  // Gives back a buffer acquire() returned; each exactly once.
  void release(int index);
  // Wakes every acquire() with -1, now and from now on.
  void close() { free_.close(); }
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
  BoundedQueue<int> free_;  // the indices of the buffers not handed out
};

}  // namespace ddft::common
