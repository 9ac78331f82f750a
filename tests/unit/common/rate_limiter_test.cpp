// The token bucket: average rate, absolute deadlines, bounded catch-up (fake clock).
#include "common/rate_limiter.hpp"

#include <gtest/gtest.h>

namespace ddft::common {
namespace {
using namespace std::chrono;

TEST(RateLimiter, UnlimitedNeverSleeps) {
  FakeClock clock;
  RateLimiter r(clock, 0);
  for (int i = 0; i < 1000; ++i) r.acquire(1 << 20);
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(RateLimiter, HoldsTheAverageRate) {
  FakeClock clock;
  RateLimiter r(clock, 10e6);  // 10 MB/s
  const auto start = clock.now();
  for (int i = 0; i < 1000; ++i) r.acquire(100'000);  // 100 MB in all
  // The last batch may leave at t = 9.99 s: 100 MB at 10 MB/s, less one batch's cost.
  EXPECT_EQ(duration_cast<milliseconds>(clock.now() - start).count(), 9990);
}

TEST(RateLimiter, SleepOvershootDoesNotAccumulate) {
  // Deadlines are absolute: when each sleep returns 1 ms late, the next one is shorter, so the
  // total stays on schedule instead of drifting by 1 ms per packet.
  FakeClock clock;
  RateLimiter r(clock, 1e6, milliseconds(0));  // 1 MB/s, no burst
  const auto start = clock.now();
  for (int i = 0; i < 100; ++i) {
    r.acquire(10'000);                 // 10 ms worth
    clock.advance(microseconds(500));  // the send itself and sleep jitter
  }
  const auto elapsed = duration_cast<milliseconds>(clock.now() - start).count();
  EXPECT_GE(elapsed, 990);
  EXPECT_LE(elapsed, 1001);
}

TEST(RateLimiter, CatchUpAfterStallIsBounded) {
  FakeClock clock;
  RateLimiter r(clock, 1e6, milliseconds(2));  // 1 byte per microsecond
  r.acquire(1000);
  clock.advance(seconds(10));  // a long stall (a slow disk on the read side)
  const auto resumed = clock.now();
  // Without a bound, 10 s of unused "credit" would let 10 MB out at once. With a 2 ms bound the
  // schedule restarts 2 ms in the past: the 10th kilobyte may leave at resumed + 7 ms.
  for (int i = 0; i < 10; ++i) r.acquire(1000);
  EXPECT_EQ(duration_cast<microseconds>(clock.now() - resumed).count(), 7000);
}

}  // namespace
}  // namespace ddft::common
