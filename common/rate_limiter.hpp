// A token bucket on absolute deadlines: the next deadline is the previous one plus the cost, not
// "now" plus the cost, so sleep overshoot never accumulates into a slower average (asio timer3).
// The sender paces its wire rate with it (--rate, sender/transmit/pacer.hpp) and dd_linksim caps
// the simulated link's bandwidth with it.
//
// One thread uses an instance (a lane's transmit thread, dd_linksim's forwarding loop). The
// Clock is the caller's and must outlive it. Throws nothing.
#pragma once

#include <chrono>
#include <cstddef>

#include "common/clock.hpp"

namespace ddft::common {

// Limits the average rate of bytes put on the wire. One thread uses an instance.
class RateLimiter {
 public:
  // `bytes_per_s` of 0 means unlimited. `burst` is how far behind schedule the limiter may fall
  // and then catch up at full speed (bounds the burst after a stall). `clock` must outlive this.
  RateLimiter(Clock& clock, double bytes_per_s,
              std::chrono::nanoseconds burst = std::chrono::milliseconds(2));

  // Blocks until `bytes` may be sent under the limit, then books them.
  void acquire(size_t bytes);

  bool unlimited() const { return ns_per_byte_ == 0.0; }

 private:
  Clock& clock_;
  double ns_per_byte_;
  std::chrono::nanoseconds burst_;
  Clock::time_point next_{};
  bool started_ = false;
};

}  // namespace ddft::common
