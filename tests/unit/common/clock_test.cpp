// The clocks: FakeClock moves only when told (advance) or slept on (sleep_until), and counts the
// sleeps; SteadyClock is the real monotonic clock.
#include "common/clock.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace ddft::common {
namespace {
using namespace std::chrono_literals;

TEST(FakeClock, StartsAtOneSecondAndMovesOnlyWhenAdvanced) {
  FakeClock c;
  const Clock::time_point t0 = c.now();
  EXPECT_EQ(t0.time_since_epoch(), 1s);
  EXPECT_EQ(c.now(), t0);
  c.advance(250ms);
  EXPECT_EQ(c.now() - t0, 250ms);
  EXPECT_EQ(c.slept(), 0ns);
  EXPECT_EQ(c.sleeps(), 0);
}

TEST(FakeClock, SleepUntilJumpsToTheDeadlineAndCountsIt) {
  FakeClock c;
  const Clock::time_point t0 = c.now();
  c.sleep_until(t0 + 3ms);
  EXPECT_EQ(c.now(), t0 + 3ms);
  EXPECT_EQ(c.slept(), 3ms);
  EXPECT_EQ(c.sleeps(), 1);
  c.sleep_until(t0 + 1ms);  // already past: no sleep, time does not go back
  c.sleep_until(t0 + 3ms);  // now: no sleep either
  EXPECT_EQ(c.now(), t0 + 3ms);
  EXPECT_EQ(c.sleeps(), 1);
  c.sleep_until(t0 + 10ms);
  EXPECT_EQ(c.slept(), 10ms);
  EXPECT_EQ(c.sleeps(), 2);
}

TEST(FakeClock, WorksThroughTheClockInterface) {
  FakeClock fake;
  Clock& c = fake;
  const auto t0 = c.now();
  c.sleep_until(t0 + 1s);
  EXPECT_EQ(c.now() - t0, 1s);
}

TEST(SteadyClock, IsMonotonicAndOneInstance) {
  Clock& c = SteadyClock::instance();
  EXPECT_EQ(&c, &SteadyClock::instance());
  const auto a = c.now();
  const auto b = c.now();
  EXPECT_LE(a, b);
  c.sleep_until(a);  // a deadline already past returns at once
  EXPECT_GE(c.now(), b);
}

}  // namespace
}  // namespace ddft::common
