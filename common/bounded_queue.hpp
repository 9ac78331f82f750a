// A bounded blocking multi-producer multi-consumer queue. Producers block when it is full (the
// sender's back-pressure policy); close() wakes everyone and ends the stream explicitly.
//
// Any thread may push, pop and close. The queue owns the items it holds (moved in, moved out);
// nothing is dropped. It throws nothing of its own, only what moving a T throws.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace ddft::common {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity) {}
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while full. Returns false (and drops nothing: `item` is untouched) once closed.
  bool push(T&& item) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Blocks until an item arrives or the queue is closed and drained (then nullopt).
  std::optional<T> pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    return take(lock);
  }

  // Like pop() but gives up after `timeout`; nullopt then means "nothing yet" unless closed().
  std::optional<T> pop_for(std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mu_);
    not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); });
    return take(lock);
  }

  // Ends the stream: pushes fail from now on, pops drain what is left and then return nullopt.
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_ && items_.empty();
  }

 private:
  std::optional<T> take(std::unique_lock<std::mutex>&) {
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;  // guarded by mu_
  bool closed_ = false;  // guarded by mu_
};

}  // namespace ddft::common
