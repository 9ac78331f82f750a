// The receive ring: a single-producer single-consumer ring of fixed-size datagram slots, allocated
// once at start. The ingest thread receives straight into free slots (no copy) and never blocks on
// the consumer: when no slot is free it drops and counts (the diode cannot be asked to wait).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "common/aligned_buffer.hpp"

namespace ddft::receiver {

class SlotRing {
 public:
  // Allocates slot_count * slot_size bytes now and, with `populate`, touches every page now too:
  // otherwise the receive thread takes a page fault per 4 KiB on the ring's first pass, which at
  // link rate is enough to fall behind and overflow the socket. Throws std::bad_alloc.
  SlotRing(size_t slot_count, size_t slot_size, bool populate = false)
      : slot_count_(slot_count),
        slot_size_(slot_size),
        mem_(slot_count * slot_size, populate),
        lens_(slot_count) {}
  SlotRing(const SlotRing&) = delete;
  SlotRing& operator=(const SlotRing&) = delete;

  size_t capacity() const { return slot_count_; }
  size_t slot_size() const { return slot_size_; }
  common::AlignedBuffer& memory() { return mem_; }

  // --- any thread ---
  // Slots in use (published and not yet released), for monitoring. The tail is read first: the
  // head read after it can only be further on, so the difference never goes negative.
  size_t used() const {
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t head = head_.load(std::memory_order_acquire);
    return static_cast<size_t>(std::min<uint64_t>(head - tail, slot_count_));
  }

  // Datagrams published so far, and released so far (positions in the ring's stream). Any
  // thread.
  uint64_t produced() const { return head_.load(std::memory_order_acquire); }
  uint64_t consumed() const { return tail_.load(std::memory_order_acquire); }

  // --- producer side (one thread) ---
  // Slots the producer may fill now.
  size_t free_slots() const {
    return slot_count_ - static_cast<size_t>(head_.load(std::memory_order_relaxed) -
                                             tail_.load(std::memory_order_acquire));
  }
  // The i-th free slot (0 <= i < free_slots()), to receive into.
  std::span<uint8_t> free_slot(size_t i) {
    return {slot_ptr(head_.load(std::memory_order_relaxed) + i), slot_size_};
  }
  // Records the length of the i-th free slot's datagram (may exceed slot_size: truncated).
  void set_length(size_t i, size_t len) {
    lens_[(head_.load(std::memory_order_relaxed) + i) % slot_count_] = len;
  }
  // Hands the first n free slots to the consumer and wakes it if it sleeps.
  void publish(size_t n) {
    if (n == 0) return;
    head_.fetch_add(n, std::memory_order_seq_cst);
    if (consumer_waiting_.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(mu_);
      cv_.notify_one();
    }
  }

  // --- consumer side (one thread) ---
  size_t available() const {
    return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                               tail_.load(std::memory_order_relaxed));
  }
  // The i-th filled slot: its bytes, and the datagram's real length (> size() when truncated).
  std::span<const uint8_t> filled_slot(size_t i, size_t* real_len) const {
    const uint64_t idx = tail_.load(std::memory_order_relaxed) + i;
    *real_len = lens_[idx % slot_count_];
    return {slot_ptr(idx), std::min(*real_len, slot_size_)};
  }
  // Returns the first n filled slots to the producer.
  void release(size_t n) { tail_.fetch_add(n, std::memory_order_release); }
  // Waits up to `timeout` for data; returns available().
  size_t wait(std::chrono::nanoseconds timeout) {
    if (size_t n = available(); n > 0) return n;
    consumer_waiting_.store(true, std::memory_order_seq_cst);
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, timeout, [&] {
        return head_.load(std::memory_order_seq_cst) != tail_.load(std::memory_order_relaxed);
      });
    }
    consumer_waiting_.store(false, std::memory_order_relaxed);
    return available();
  }
  // Wakes a waiting consumer (used at shutdown).
  void wake() {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }

 private:
  uint8_t* slot_ptr(uint64_t idx) const {
    return const_cast<uint8_t*>(mem_.data()) + (idx % slot_count_) * slot_size_;
  }

  const size_t slot_count_;
  const size_t slot_size_;
  common::AlignedBuffer mem_;
  std::vector<size_t> lens_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer only
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer only
  alignas(64) std::atomic<bool> consumer_waiting_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace ddft::receiver
