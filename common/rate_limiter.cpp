#include "common/rate_limiter.hpp"

#include <algorithm>

namespace ddft::common {

RateLimiter::RateLimiter(Clock& clock, double bytes_per_s, std::chrono::nanoseconds burst)
    : clock_(clock), ns_per_byte_(bytes_per_s > 0 ? 1e9 / bytes_per_s : 0.0), burst_(burst) {}

void RateLimiter::acquire(size_t bytes) {
  if (unlimited()) return;
  const auto now = clock_.now();
  if (!started_) {
    next_ = now;
    started_ = true;
  }
  // Falling behind (a slow disk, a stall) earns at most `burst_` of catch-up, never more.
  const auto start = std::max(next_, now - burst_);
  if (start > now) clock_.sleep_until(start);
  next_ = start + std::chrono::nanoseconds(
                      static_cast<long long>(static_cast<double>(bytes) * ns_per_byte_));
}

}  // namespace ddft::common
