#include "sender/transmit/channel_mux.hpp"

#include <algorithm>
#include <stdexcept>

namespace ddft::sender {
using std::chrono::steady_clock;

class ChannelMux::Input final : public WorkSink {
 public:
  Input(ChannelMux& mux, size_t channel, size_t lane) : mux_(mux), channel_(channel), lane_(lane) {}
  bool push(WorkItem&& item) override { return mux_.push(channel_, lane_, std::move(item)); }
  void close() override { mux_.close_input(channel_, lane_); }

 private:
  ChannelMux& mux_;
  size_t channel_;
  size_t lane_;
};

class ChannelMux::Output final : public WorkFeed {
 public:
  Output(ChannelMux& mux, size_t lane) : mux_(mux), lane_(lane) {}
  std::optional<WorkItem> pop() override {
    return mux_.pop(lane_, steady_clock::time_point::max());
  }
  std::optional<WorkItem> pop_for(std::chrono::nanoseconds timeout) override {
    return mux_.pop(lane_, steady_clock::now() + timeout);
  }
  bool closed() const override { return mux_.drained(lane_); }
  void draining() override { mux_.set_draining(lane_); }

 private:
  ChannelMux& mux_;
  size_t lane_;
};

namespace {
// What an item costs a channel's share: its block's bytes; control items nothing.
uint64_t cost_of(const WorkItem& item) {
  return item.kind == WorkItem::Kind::kBlock ? item.len : 0;
}
}  // namespace

ChannelMux::ChannelMux(std::vector<ChannelPolicy> policies, size_t lanes, size_t capacity,
                       common::Clock& clock)
    : lanes_(lanes),
      capacity_(capacity),
      clock_(clock),
      scheduler_(std::move(policies), lanes),
      queues_(scheduler_.channels() * lanes),
      ready_(lanes),
      draining_(lanes, false) {
  if (capacity_ == 0) throw std::invalid_argument("a channel's queue needs room for an item");
  for (size_t c = 0; c < scheduler_.channels(); ++c) {
    for (size_t l = 0; l < lanes_; ++l) inputs_.push_back(std::make_unique<Input>(*this, c, l));
  }
  for (size_t l = 0; l < lanes_; ++l) outputs_.push_back(std::make_unique<Output>(*this, l));
}

ChannelMux::~ChannelMux() = default;

WorkSink& ChannelMux::input(size_t channel, size_t lane) {
  return *inputs_[channel * lanes_ + lane];
}

WorkFeed& ChannelMux::output(size_t lane) { return *outputs_[lane]; }

bool ChannelMux::push(size_t channel, size_t lane, WorkItem&& item) {
  std::unique_lock lock(mu_);
  Queue& q = queue(channel, lane);
  room_.wait(lock, [&] { return q.closed || q.items.size() < capacity_; });
  if (q.closed) return false;
  q.items.push_back(std::move(item));
  ready_[lane].notify_one();
  return true;
}

void ChannelMux::close_input(size_t channel, size_t lane) {
  std::lock_guard lock(mu_);
  queue(channel, lane).closed = true;
  ready_[lane].notify_all();
  room_.notify_all();
}

void ChannelMux::close() {
  std::lock_guard lock(mu_);
  for (Queue& q : queues_) q.closed = true;
  for (auto& cv : ready_) cv.notify_all();
  room_.notify_all();
}

void ChannelMux::ready_costs(size_t lane, std::vector<std::optional<uint64_t>>* out) const {
  out->assign(scheduler_.channels(), std::nullopt);
  for (size_t c = 0; c < out->size(); ++c) {
    const Queue& q = queue(c, lane);
    if (!q.items.empty()) (*out)[c] = cost_of(q.items.front());
  }
}

bool ChannelMux::drained_locked(size_t lane) const {
  for (size_t c = 0; c < scheduler_.channels(); ++c) {
    const Queue& q = queue(c, lane);
    if (!q.closed || !q.items.empty()) return false;
  }
  return true;
}

bool ChannelMux::drained(size_t lane) const {
  std::lock_guard lock(mu_);
  return drained_locked(lane);
}

void ChannelMux::set_draining(size_t lane) {
  std::lock_guard lock(mu_);
  draining_[lane] = true;
  ready_[lane].notify_all();
}

std::optional<WorkItem> ChannelMux::take_any(size_t lane) {
  for (size_t c = 0; c < scheduler_.channels(); ++c) {
    Queue& q = queue(c, lane);
    if (q.items.empty()) continue;
    WorkItem item = std::move(q.items.front());
    q.items.pop_front();
    room_.notify_all();
    return item;
  }
  return std::nullopt;
}

std::optional<WorkItem> ChannelMux::pop(size_t lane, steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  std::vector<std::optional<uint64_t>> ready;
  while (true) {
    if (draining_[lane]) {
      // Dropped, not sent: no cap or share applies and nothing is charged.
      if (std::optional<WorkItem> item = take_any(lane)) return item;
    }
    ready_costs(lane, &ready);
    const common::Clock::time_point now = clock_.now();
    common::Clock::time_point retry = common::Clock::time_point::max();
    if (const std::optional<size_t> c = scheduler_.pick(lane, ready, now, &retry)) {
      Queue& q = queue(*c, lane);
      WorkItem item = std::move(q.items.front());
      q.items.pop_front();
      scheduler_.charge(lane, *c, cost_of(item), now);
      room_.notify_all();
      return item;
    }
    if (drained_locked(lane)) return std::nullopt;
    // Nothing may go now: wait for an item, a close, a capped channel's turn or the deadline.
    steady_clock::time_point until = deadline;
    if (retry != common::Clock::time_point::max()) {
      until = std::min(until, steady_clock::now() + (retry - now));
    }
    if (steady_clock::now() >= deadline) return std::nullopt;
    if (until == steady_clock::time_point::max()) {
      ready_[lane].wait(lock);
    } else {
      ready_[lane].wait_until(lock, until);
    }
  }
}

}  // namespace ddft::sender
