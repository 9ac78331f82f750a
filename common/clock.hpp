// Time sources. Pacing, timeouts and reports take a Clock so tests can use FakeClock and never
// assert on real time.
//
// Every Clock is thread-safe and throws nothing. SteadyClock::instance() lives for the whole
// program; whoever takes a Clock& says how long it must live.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace ddft::common {

// The wall clock in ns since the epoch (for what is written down with a date: journals,
// histories); pass a function of this type where a test must set the date.
inline int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A monotonic clock that can also sleep. Implementations are thread-safe.
class Clock {
 public:
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<std::chrono::steady_clock, duration>;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  // Blocks until now() >= t (returns at once when t is in the past).
  virtual void sleep_until(time_point t) = 0;
};

// The real monotonic clock.
class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  void sleep_until(time_point t) override { std::this_thread::sleep_until(t); }
  // A process-wide instance; lives for the whole program.
  static SteadyClock& instance() {
    static SteadyClock clock;
    return clock;
  }
};

// A clock that moves only when told to. sleep_until() advances it to the target instantly and
// records the total time slept, which is what pacing tests assert on.
class FakeClock final : public Clock {
 public:
  time_point now() const override { return time_point(duration(now_ns_.load())); }
  void sleep_until(time_point t) override {
    const auto target = t.time_since_epoch().count();
    auto cur = now_ns_.load();
    if (target > cur) {
      slept_ns_ += target - cur;
      ++sleeps_;
      now_ns_.store(target);
    }
  }
  void advance(duration d) { now_ns_ += d.count(); }
  duration slept() const { return duration(slept_ns_.load()); }
  long sleeps() const { return sleeps_.load(); }

 private:
  std::atomic<long long> now_ns_{1'000'000'000};
  std::atomic<long long> slept_ns_{0};
  std::atomic<long> sleeps_{0};
};

}  // namespace ddft::common
