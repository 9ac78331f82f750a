#include "common/buffer_pool.hpp"

#include <chrono>

namespace ddft::common {

BufferPool::BufferPool(size_t count, size_t size) : slab_(count * size), size_(size), free_(count) {
  for (size_t i = 0; i < count; ++i) free_.push(static_cast<int>(i));
}

int BufferPool::acquire() {
  auto i = free_.pop();
  return i ? *i : -1;
}

int BufferPool::try_acquire() {
  auto i = free_.pop_for(std::chrono::nanoseconds(0));
  return i ? *i : -1;
}

void BufferPool::release(int index) { free_.push(int{index}); }

void BufferPool::fill_pseudo_random() { common::fill_pseudo_random(slab_.span()); }

}  // namespace ddft::common
