#include "sender/transmit/channel_scheduler.hpp"

#include <algorithm>
#include <stdexcept>

namespace ddft::sender {
using common::Clock;

ChannelScheduler::ChannelScheduler(std::vector<ChannelPolicy> channels, size_t lanes)
    : policies_(std::move(channels)) {
  if (policies_.empty()) throw std::invalid_argument("a sender needs a channel");
  if (lanes == 0) throw std::invalid_argument("a sender needs a lane");
  double shares = 0;
  for (const ChannelPolicy& p : policies_) {
    if (p.weight == 0) throw std::invalid_argument("a channel's weight must be at least 1");
    if (p.min_share < 0 || p.min_share >= 1) {
      throw std::invalid_argument("a channel's minimum share must be at least 0 and below 1");
    }
    if (p.rate_cap < 0) throw std::invalid_argument("a channel's rate cap cannot be negative");
    shares += p.min_share;
    classes_ = std::max(classes_, p.priority + 1);
  }
  if (shares >= 1) throw std::invalid_argument("the channels' minimum shares add up to 1 or more");
  const size_t n = policies_.size();
  lanes_.assign(lanes, PerLane{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0),
                               std::vector<bool>(n, false),
                               std::vector<Clock::time_point>(n, Clock::time_point::min()),
                               std::vector<double>(classes_, 0.0)});
  cap_next_.assign(n, Clock::time_point::min());
  for (const ChannelPolicy& p : policies_) {
    cap_ns_per_byte_.push_back(p.rate_cap > 0 ? 1e9 / p.rate_cap : 0.0);
  }
}

bool ChannelScheduler::under_cap(size_t c, Clock::time_point now) const {
  return cap_ns_per_byte_[c] == 0.0 || now >= cap_next_[c];
}

std::optional<size_t> ChannelScheduler::pick(size_t lane,
                                             std::span<const std::optional<uint64_t>> ready,
                                             Clock::time_point now, Clock::time_point* retry_at) {
  PerLane& l = lanes_[lane];
  const size_t n = policies_.size();
  Clock::time_point earliest = Clock::time_point::max();
  std::optional<size_t> by_credit, by_priority;
  double credit_spare = 0;
  for (size_t c = 0; c < n; ++c) {
    const bool is_ready = c < ready.size() && ready[c].has_value();
    const unsigned k = policies_[c].priority;
    // Back from idle: it starts where its class is now, with no credit saved from before.
    if (is_ready && !l.was_ready[c]) {
      l.vtime[c] = std::max(l.vtime[c], l.class_vtime[k]);
      l.credit[c] = 0;
      l.ready_since[c] = now;
    }
    l.was_ready[c] = is_ready;
    if (!is_ready) continue;
    // An item of no cost (a file's begin or end) is never held back by the cap.
    if (*ready[c] > 0 && !under_cap(c, now)) {
      earliest = std::min(earliest, cap_next_[c]);
      continue;
    }
    // Of the channels whose credit covers their next item, the one with the most left over.
    const double spare = l.credit[c] - static_cast<double>(*ready[c]);
    if (policies_[c].min_share > 0 && spare >= 0 && (!by_credit || spare > credit_spare)) {
      by_credit = c;
      credit_spare = spare;
    }
    if (!by_priority || k < policies_[*by_priority].priority ||
        (k == policies_[*by_priority].priority && l.vtime[c] < l.vtime[*by_priority])) {
      by_priority = c;
    }
  }
  const std::optional<size_t> chosen = by_credit ? by_credit : by_priority;
  if (!chosen && retry_at != nullptr) *retry_at = earliest;
  return chosen;
}

void ChannelScheduler::charge(size_t lane, size_t c, uint64_t bytes, Clock::time_point now) {
  PerLane& l = lanes_[lane];
  const double b = static_cast<double>(bytes);
  const ChannelPolicy& p = policies_[c];
  // Start-time fair queueing: the class is now at the start of what this channel sent.
  l.class_vtime[p.priority] = std::max(l.class_vtime[p.priority], l.vtime[c]);
  l.vtime[c] += b / p.weight;
  // Every byte of the lane earns the channels that wait their share of it.
  for (size_t i = 0; i < policies_.size(); ++i) {
    if (policies_[i].min_share > 0 && (l.was_ready[i] || i == c)) {
      l.credit[i] = std::min<double>(kCreditMax, l.credit[i] + policies_[i].min_share * b);
    }
  }
  l.credit[c] = std::max(0.0, l.credit[c] - b);
  if (cap_ns_per_byte_[c] > 0) {
    // Late because the lane was busy while this item waited: no time lost. Late because there
    // was nothing to send: at most kCapBurst of it caught up.
    const Clock::time_point waited = std::max(cap_next_[c], std::min(now, l.ready_since[c]));
    const Clock::time_point floor = waited - std::chrono::duration_cast<Clock::duration>(kCapBurst);
    cap_next_[c] = std::max(cap_next_[c], floor) +
                   Clock::duration(static_cast<int64_t>(b * cap_ns_per_byte_[c]));
  }
  l.ready_since[c] = now;  // the channel's next item waits from now
}

}  // namespace ddft::sender
