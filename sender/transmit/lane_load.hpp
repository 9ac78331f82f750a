// The lanes' load, shared by a session's lane routers (one per channel) and its transmitters: the
// bytes of blocks routed to each lane and not yet packetised, and which lanes were taken down.
// The routers choose the least busy lane up by it; a transmitter takes its lane down here, so
// that no router chooses it again.
//
// Every member is thread-safe (atomics, no lock). Lanes never come back up; one always stays up.
// The constructor throws std::invalid_argument for no lane or more than common::kMaxLanes (a bug).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ddft::sender {

class LaneLoad {
 public:
  explicit LaneLoad(size_t lanes);
  LaneLoad(const LaneLoad&) = delete;
  LaneLoad& operator=(const LaneLoad&) = delete;

  size_t lanes() const { return lanes_; }
  // `bytes` of a block routed to `lane`, counted before it is queued.
  void routed(size_t lane, uint64_t bytes) {
    queued_[lane].fetch_add(bytes, std::memory_order_relaxed);
  }
  // `bytes` of a block routed to `lane` were packetised, dropped on a stop, or never queued.
  void block_done(size_t lane, uint64_t bytes) {
    queued_[lane].fetch_sub(bytes, std::memory_order_relaxed);
  }
  // Bytes of blocks routed to `lane` and not yet done.
  uint64_t queued(size_t lane) const { return queued_[lane].load(std::memory_order_relaxed); }

  // Takes `lane` out of the rotation, unless it is the last lane up. Returns false then (the
  // session cannot go on), true when the lane is down (also when it already was).
  [[nodiscard]] bool take_down(size_t lane);
  bool down(size_t lane) const { return down_[lane].load(std::memory_order_acquire); }
  size_t lanes_up() const { return up_.load(std::memory_order_acquire); }
  // The lanes up now, bit k for lane k.
  uint64_t lanes_up_mask() const;

 private:
  size_t lanes_;
  std::unique_ptr<std::atomic<uint64_t>[]> queued_;
  std::unique_ptr<std::atomic<bool>[]> down_;
  std::atomic<size_t> up_;
};

}  // namespace ddft::sender
