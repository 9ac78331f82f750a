// The receive ring: a single-producer single-consumer ring of bytes, allocated once at start. The
// ingest thread receives straight into it (no copy) and never blocks on the consumer: when there
// is no room it drops and counts (the diode cannot be asked to wait).
//
// It holds records, each a 16-byte header and what one receive call gave: one datagram, or with
// UDP GRO a bundle of datagrams of one size that the kernel coalesced. A record takes its own
// length rounded up to 16 bytes, so the ring holds its size in datagrams whatever their sizes
// (an announce of 100 bytes takes 128, not a slot of the largest datagram).
//
//   reserve(count, max_len)  room for `count` receive buffers of max_len bytes, back to back
//   buffer(i)                the i-th of them, to receive into
//   commit(n, lens, segs)    publishes the first n: short ones (at most half a buffer) are moved
//                            down to close the gap, long ones stay and the gap before them
//                            becomes a pad record; at most half of a buffer is ever left unused
//   next(pos) / release(pos) the consumer's walk over the records, and giving bytes back
//
// A reservation that does not fit before the end of the memory wraps to its start, leaving a pad
// record behind. Positions (produced(), consumed(), Record::next) count bytes since the start and
// only grow.
//
// One producer thread (the lane's dd-rx) and one consumer (dd-write); used(), produced() and
// consumed() from any thread. The ring owns its memory, allocated (and with `populate` touched)
// once: the constructor throws std::bad_alloc; nothing else throws.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>

#include "common/aligned_buffer.hpp"

namespace ddft::receiver {

// How a producer wakes the consumer of its ring: its own, or one shared by several rings that one
// consumer drains (ByteRing::share_bell()).
struct RingBell {
  alignas(64) std::atomic<bool> waiting{false};
  std::mutex mu;
  std::condition_variable cv;
};

class ByteRing {
 public:
  static constexpr size_t kAlign = 16;
  static constexpr size_t kHeader = 16;

  // One record, as the consumer sees it.
  struct Record {
    std::span<const uint8_t> bytes;  // what was kept (empty for a pad record)
    size_t real_len = 0;             // the datagram's real length: > bytes.size() when truncated
    size_t segment = 0;              // a GRO bundle: datagrams of this size, back to back; 0: one
    bool pad = false;                // nothing to read: skip it
    uint64_t next = 0;               // the position after it
  };

  // Allocates `bytes` (rounded up to 16) now and, with `populate`, touches every page now too:
  // otherwise the receive thread takes a page fault per 4 KiB on the ring's first pass, which at
  // link rate is enough to fall behind and overflow the socket. Throws std::bad_alloc.
  explicit ByteRing(size_t bytes, bool populate = false)
      : capacity_(round_up(std::max(bytes, 2 * kAlign))), mem_(capacity_, populate) {}
  ByteRing(const ByteRing&) = delete;
  ByteRing& operator=(const ByteRing&) = delete;

  size_t capacity() const { return capacity_; }
  common::AlignedBuffer& memory() { return mem_; }
  static constexpr size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
  // The ring bytes one receive buffer of `max_len` takes while reserved.
  static constexpr size_t stride(size_t max_len) { return round_up(kHeader + max_len); }

  // --- any thread ---
  // Bytes in use (published and not yet released), for monitoring. The tail is read first: the
  // head read after it can only be further on, so the difference never goes negative.
  size_t used() const {
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t head = head_.load(std::memory_order_acquire);
    return static_cast<size_t>(std::min<uint64_t>(head - tail, capacity_));
  }
  // Bytes published so far, and released so far (positions in the ring's stream).
  uint64_t produced() const { return head_.load(std::memory_order_acquire); }
  uint64_t consumed() const { return tail_.load(std::memory_order_acquire); }

  // --- producer side (one thread) ---
  // Reserves room for up to `count` receive buffers of `max_len` bytes each, back to back, and
  // returns how many fit now (0: the ring is full). A reservation too long for the memory's end
  // starts over at its beginning, leaving a pad record.
  size_t reserve(size_t count, size_t max_len) {
    stride_ = stride(max_len);
    max_len_ = max_len;
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    uint64_t start = head;
    size_t to_end = capacity_ - static_cast<size_t>(start % capacity_);
    if (to_end < stride_) start += to_end;  // wraps: a pad record fills the end
    const uint64_t free_end = tail + capacity_;
    const size_t room = free_end > start ? static_cast<size_t>(free_end - start) : 0;
    const size_t contiguous = capacity_ - static_cast<size_t>(start % capacity_);
    reserved_ = std::min(count, std::min(room, contiguous) / stride_);
    if (reserved_ == 0) return 0;
    if (start != head) write_header(head, to_end, 0, 0, kPad);
    start_ = start;
    return reserved_;
  }
  // The i-th reserved receive buffer (i < what reserve() returned), max_len bytes.
  std::span<uint8_t> buffer(size_t i) { return {at(start_ + i * stride_) + kHeader, max_len_}; }
  // Publishes the first n reserved buffers (n <= reserved) and wakes the consumer if it sleeps.
  // lens[i]: bytes the receive gave (more than max_len: the datagram was truncated); segs[i]:
  // the GRO segment size, 0 for a single datagram.
  void commit(size_t n, const size_t* lens, const size_t* segs) {
    if (n == 0) return;
    uint64_t w = start_;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t src = start_ + i * stride_;
      const size_t kept = std::min(lens[i], max_len_);
      const size_t size = round_up(kHeader + kept);
      if (src != w && kept * 2 > max_len_) {
        write_header(w, static_cast<size_t>(src - w), 0, 0, kPad);
        w = src;
      } else if (src != w) {
        std::memmove(at(w) + kHeader, at(src) + kHeader, kept);
      }
      write_header(w, size, kept, segs[i], lens[i] > max_len_ ? kTruncated : 0);
      w += size;
    }
    reserved_ = 0;
    publish(w);
  }

  // --- consumer side (one thread) ---
  // The record at `pos` (consumed() <= pos < produced()).
  Record next(uint64_t pos) const {
    const uint8_t* h = at(pos);
    uint32_t f[4];
    std::memcpy(f, h, sizeof f);
    Record r;
    r.next = pos + f[0];
    r.pad = (f[3] & kPad) != 0;
    if (r.pad) return r;
    r.bytes = {h + kHeader, f[1]};
    r.real_len = (f[3] & kTruncated) != 0 ? size_t{f[1]} + 1 : f[1];
    r.segment = f[2];
    return r;
  }
  // Gives every byte before `pos` back to the producer.
  void release(uint64_t pos) { tail_.store(pos, std::memory_order_release); }
  // Waits up to `timeout` for data; returns the bytes published and not yet released.
  size_t wait(std::chrono::nanoseconds timeout) {
    ByteRing* self = this;
    wait_any({&self, 1}, timeout);
    return available();
  }
  // Waits up to `timeout` until any of `rings` (sharing one bell: share_bell()) has data;
  // returns the bytes they hold in all. The consumer of every ring calls it (one thread).
  static size_t wait_any(std::span<ByteRing* const> rings, std::chrono::nanoseconds timeout) {
    // seq_cst against publish(): either the producer sees `waiting` or this sees its head.
    const auto held = [rings] {
      size_t n = 0;
      for (const ByteRing* r : rings) {
        n += static_cast<size_t>(r->head_.load(std::memory_order_seq_cst) -
                                 r->tail_.load(std::memory_order_relaxed));
      }
      return n;
    };
    if (size_t n = held(); n > 0 || rings.empty()) return n;
    RingBell& bell = *rings.front()->bell_;
    bell.waiting.store(true, std::memory_order_seq_cst);
    {
      std::unique_lock lock(bell.mu);
      bell.cv.wait_for(lock, timeout, [&] { return held() > 0; });
    }
    bell.waiting.store(false, std::memory_order_relaxed);
    return held();
  }
  // One consumer draining several rings: they ring `bell` (which must outlive them) instead of
  // their own. Before any producer runs.
  void share_bell(RingBell& bell) { bell_ = &bell; }
  size_t available() const {
    return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                               tail_.load(std::memory_order_relaxed));
  }
  // Wakes a waiting consumer (used at shutdown).
  void wake() {
    std::lock_guard lock(bell_->mu);
    bell_->cv.notify_all();
  }

 private:
  static constexpr uint32_t kPad = 1;
  static constexpr uint32_t kTruncated = 2;

  uint8_t* at(uint64_t pos) const {
    return const_cast<uint8_t*>(mem_.data()) + static_cast<size_t>(pos % capacity_);
  }
  // Header: the record's size in the ring, the bytes kept, the segment size, flags.
  void write_header(uint64_t pos, size_t size, size_t kept, size_t seg, uint32_t flags) {
    const uint32_t f[4] = {static_cast<uint32_t>(size), static_cast<uint32_t>(kept),
                           static_cast<uint32_t>(seg), flags};
    std::memcpy(at(pos), f, sizeof f);
  }
  void publish(uint64_t head) {
    head_.store(head, std::memory_order_seq_cst);
    if (bell_->waiting.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(bell_->mu);
      bell_->cv.notify_one();
    }
  }

  const size_t capacity_;
  common::AlignedBuffer mem_;
  // Producer only: the current reservation.
  uint64_t start_ = 0;
  size_t stride_ = 0;
  size_t max_len_ = 0;
  size_t reserved_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer only
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer only
  RingBell own_bell_;
  RingBell* bell_ = &own_bell_;
};

}  // namespace ddft::receiver
