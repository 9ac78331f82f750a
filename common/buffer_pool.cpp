#include "common/buffer_pool.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace ddft::common {

BufferPool::BufferPool(size_t count, size_t size) : BufferPool(std::vector<size_t>{count}, size) {}

BufferPool::BufferPool(const std::vector<size_t>& shares, size_t size)
    : slab_(std::accumulate(shares.begin(), shares.end(), size_t{0}) * size), size_(size) {
  first_.push_back(0);
  for (const size_t n : shares) {
    const size_t from = first_.back();
    free_.push_back(std::make_unique<BoundedQueue<int>>(std::max<size_t>(n, 1)));
    for (size_t i = from; i < from + n; ++i) free_.back()->push(static_cast<int>(i));
    first_.push_back(from + n);
  }
}

int BufferPool::acquire(size_t share) {
  auto i = free_[share]->pop();
  return i ? *i : -1;
}

int BufferPool::try_acquire(size_t share) {
  auto i = free_[share]->pop_for(std::chrono::nanoseconds(0));
  return i ? *i : -1;
}

void BufferPool::release(int index) {
  // The share whose range holds the index: the last one starting at or before it.
  const auto next = std::upper_bound(first_.begin(), first_.end(), static_cast<size_t>(index));
  free_[static_cast<size_t>(next - first_.begin()) - 1]->push(int{index});
}

void BufferPool::close() {
  for (auto& f : free_) f->close();
}

void BufferPool::fill_pseudo_random() { common::fill_pseudo_random(slab_.span()); }

}  // namespace ddft::common
