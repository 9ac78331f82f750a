// Where the channels meet the lanes: a bounded queue for each (channel, lane), filled by that
// channel's router, and one output per lane from which its transmitter takes the next item that
// ChannelScheduler chooses among the channels with one ready.
//
//   channel 0's LaneRouter ──input(0, k)──┐
//   channel 1's LaneRouter ──input(1, k)──┼──> ChannelMux ──output(k)──> lane k's Transmitter
//   ...                                   ┘    (ChannelScheduler: caps, minimum shares,
//                                               classes, weights)
//
// An item costs its block's bytes (a kBlock); a file's begin, end, abort or skip costs nothing,
// so control items pass as soon as their channel may send. Items of one (channel, lane) keep
// their order; a channel's items interleave with other channels' at item granularity, so an
// urgent channel's file starts once the block on the wire is through.
//
// Back-pressure is per input: a full (channel, lane) queue blocks only the channel pushing into
// it. An output is closed once every channel's input for its lane is closed and drained.
//
// Any thread may push and pop (one lock guards it all). The scheduler's clock is the caller's
// and must outlive the mux; a capped channel's wait is measured on it (steady time in the
// product). Throws std::invalid_argument from the constructor as ChannelScheduler does (and for
// a capacity of 0); nothing else throws of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/clock.hpp"
#include "sender/transmit/channel_scheduler.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class ChannelMux {
 public:
  // `capacity`: the items each (channel, lane) queue holds before its pushes block.
  ChannelMux(std::vector<ChannelPolicy> policies, size_t lanes, size_t capacity,
             common::Clock& clock);
  ~ChannelMux();
  ChannelMux(const ChannelMux&) = delete;
  ChannelMux& operator=(const ChannelMux&) = delete;

  // Channel `channel`'s queue for lane `lane`, as its router pushes into it.
  WorkSink& input(size_t channel, size_t lane);
  // Lane `lane`'s side, as its transmitter takes from it.
  WorkFeed& output(size_t lane);
  // Closes every input (a stop): pushes fail from now on; outputs drain what is queued.
  void close();

  size_t channels() const { return scheduler_.channels(); }
  size_t lanes() const { return lanes_; }

 private:
  class Input;
  class Output;
  struct Queue {
    std::deque<WorkItem> items;
    bool closed = false;
  };

  bool push(size_t channel, size_t lane, WorkItem&& item);
  void close_input(size_t channel, size_t lane);
  // The next item for `lane`, waiting until `deadline` (steady time) at most; nullopt when none
  // came by then or the lane is closed and drained.
  std::optional<WorkItem> pop(size_t lane, std::chrono::steady_clock::time_point deadline);
  bool drained(size_t lane) const;
  // Lane `lane`'s transmitter drops what it takes from now on (WorkFeed::draining()).
  void set_draining(size_t lane);
  // Any queued item for `lane`, in channel order, uncharged. Under the lock.
  std::optional<WorkItem> take_any(size_t lane);
  // What the lane's queues have ready, as the scheduler takes it. Under the lock.
  void ready_costs(size_t lane, std::vector<std::optional<uint64_t>>* out) const;
  bool drained_locked(size_t lane) const;
  Queue& queue(size_t channel, size_t lane) { return queues_[channel * lanes_ + lane]; }
  const Queue& queue(size_t channel, size_t lane) const { return queues_[channel * lanes_ + lane]; }

  size_t lanes_;
  size_t capacity_;
  common::Clock& clock_;
  mutable std::mutex mu_;
  ChannelScheduler scheduler_;
  std::vector<Queue> queues_;                   // [channel * lanes + lane]
  std::vector<std::condition_variable> ready_;  // per lane: an item or a close came
  std::vector<bool> draining_;                  // per lane: its items are dropped, not sent
  std::condition_variable room_;                // a queue has room again, or a close came
  std::vector<std::unique_ptr<Input>> inputs_;
  std::vector<std::unique_ptr<Output>> outputs_;
};

}  // namespace ddft::sender
