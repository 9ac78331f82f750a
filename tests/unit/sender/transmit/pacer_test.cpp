#include "sender/transmit/pacer.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace ddft::sender {
namespace {
using namespace std::chrono;

TEST(SleepAlgorithm, RuleFromFileSize) {
  constexpr uint64_t MiB = 1 << 20;
  EXPECT_EQ(sleep_alg_pause_s(0), 0u);
  EXPECT_EQ(sleep_alg_pause_s(100 * MiB - 1), 0u);
  EXPECT_EQ(sleep_alg_pause_s(100 * MiB), 3u);  // seed 004's 104,857,600-byte file paused 3 s
  EXPECT_EQ(sleep_alg_pause_s(1024 * MiB), 4u);
  EXPECT_EQ(sleep_alg_pause_s(17 * 1024 * MiB), 20u);
  EXPECT_EQ(sleep_alg_pause_s(uint64_t{1} << 50), 20u);
}

TEST(Pacer, IntraPacketSleepsAfterEveryIntervalPackets) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.intra_pkt_interval = 10;
  cfg.intra_pkt_delay_ms = 5;
  Pacer p(clock, cfg);
  EXPECT_EQ(p.packets_before_sleep(), 10u);
  p.after_send(4, 4000);
  EXPECT_EQ(p.packets_before_sleep(), 6u);
  EXPECT_EQ(clock.sleeps(), 0);
  p.after_send(6, 6000);
  EXPECT_EQ(clock.sleeps(), 1);
  EXPECT_EQ(p.intra_slept(), milliseconds(5));
  EXPECT_EQ(p.packets_before_sleep(), 10u);
}

TEST(Pacer, IntervalWithoutDelayOrDelayWithoutIntervalIsOff) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.intra_pkt_interval = 10;  // INTRA_PKT_DELAY=0
  Pacer p(clock, cfg);
  for (int i = 0; i < 100; ++i) p.after_send(10, 10000);
  cfg = {};
  cfg.intra_pkt_delay_ms = 10;  // INTRA_PKT_INTERVAL=0
  Pacer q(clock, cfg);
  for (int i = 0; i < 100; ++i) q.after_send(10, 10000);
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(Pacer, ForcedSleepEveryFsIntervalMegabytes) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.fs_interval_mb = 32;
  cfg.fs_delay_ms = 1000;  // DFTS's values when neither is set in owlDftsSend
  Pacer p(clock, cfg);
  const auto start = clock.now();
  std::vector<int> slept_after_mib;     // the MiB count after which time moved
  for (int q = 1; q <= 100 * 4; ++q) {  // 100 MiB in quarter MiB sends
    const auto before = clock.now();
    p.after_send(1, 256 * 1024);
    if (clock.now() - before == seconds(1)) slept_after_mib.push_back(q / 4);
  }
  EXPECT_EQ(slept_after_mib, (std::vector<int>{32, 64, 96}));
  EXPECT_EQ(clock.now() - start, seconds(3));
  EXPECT_EQ(p.forced_slept(), seconds(3));
}

TEST(Pacer, StopEndsLongSleepsPromptly) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.sleep_alg = true;
  cfg.fs_interval_mb = 1;
  cfg.fs_delay_ms = 60'000;
  Pacer p(clock, cfg);
  std::stop_source stop;
  p.set_stop(stop.get_token());
  stop.request_stop();  // Ctrl-C
  const auto start = clock.now();
  p.pause(20);
  p.after_send(1, 1 << 20);  // a forced sleep of a minute is due
  EXPECT_LT(clock.now() - start, milliseconds(100));
}

TEST(Pacer, SleepAlgorithmAndEofDelay) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.eof_delay_ms = 250;
  Pacer off(clock, cfg);
  EXPECT_EQ(off.pause_for(1ull << 30), 0u);  // -NOSLEEPALG
  cfg.sleep_alg = true;
  Pacer on(clock, cfg);
  EXPECT_EQ(on.pause_for(1ull << 30), 4u);
  const auto start = clock.now();
  on.pause(4);
  on.after_file();
  EXPECT_EQ(clock.now() - start, milliseconds(4250));
}

// A keepalive as the transmitter's: "sends" once the last send is a second old.
struct BeatRecorder {
  common::FakeClock& clock;
  common::Clock::time_point last;
  std::vector<nanoseconds> beats;  // since `last` was set by restart()
  common::Clock::time_point start;
  void restart() {
    last = start = clock.now();
    beats.clear();
  }
  common::Clock::time_point operator()(common::Clock::time_point now) {
    if (now - last < seconds(1)) return last + seconds(1);
    beats.push_back(now - start);
    last = now;
    return now + seconds(1);
  }
};

TEST(Pacer, EveryDftsSleepCallsTheKeepaliveWhenItAsks) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.intra_pkt_interval = 1;
  cfg.intra_pkt_delay_ms = 1500;
  cfg.fs_interval_mb = 1;
  cfg.fs_delay_ms = 2000;
  cfg.sleep_alg = true;
  cfg.eof_delay_ms = 3500;
  Pacer p(clock, cfg);
  BeatRecorder rec{clock, clock.now(), {}, clock.now()};
  p.set_keepalive([&rec](common::Clock::time_point now) { return rec(now); });
  const std::vector<nanoseconds> one = {seconds(1)};
  const std::vector<nanoseconds> two = {seconds(1), seconds(2)};
  const std::vector<nanoseconds> three = {seconds(1), seconds(2), seconds(3)};

  rec.restart();
  p.after_send(1, 100);  // INTRA_PKT_DELAY: 1.5 s
  EXPECT_EQ(rec.beats, one);
  EXPECT_EQ(clock.now() - rec.start, milliseconds(1500));

  rec.restart();
  cfg.intra_pkt_interval = 0;
  Pacer forced(clock, cfg);
  forced.set_keepalive([&rec](common::Clock::time_point now) { return rec(now); });
  forced.after_send(1, 1 << 20);  // -fsdelay: 2 s; none at its very end
  EXPECT_EQ(rec.beats, one);
  EXPECT_EQ(clock.now() - rec.start, seconds(2));

  rec.restart();
  forced.pause(3);  // the sleep algorithm
  EXPECT_EQ(rec.beats, two);
  EXPECT_EQ(clock.now() - rec.start, seconds(3));

  rec.restart();
  forced.after_file();  // EOF_DELAY: 3.5 s
  EXPECT_EQ(rec.beats, three);
  EXPECT_EQ(clock.now() - rec.start, milliseconds(3500));
  EXPECT_EQ(forced.forced_slept(), seconds(2));  // the keepalive takes nothing off a sleep
}

TEST(Pacer, AKeepaliveThatAsksForThePastIsCalledEvery100Ms) {
  common::FakeClock clock;
  PacingConfig cfg;
  cfg.eof_delay_ms = 1000;
  Pacer p(clock, cfg);
  int calls = 0;
  p.set_keepalive([&calls](common::Clock::time_point now) {
    ++calls;
    return now;
  });
  const auto start = clock.now();
  p.after_file();
  EXPECT_EQ(calls, 10);  // at 0, 100, ... 900 ms: no busy loop
  EXPECT_EQ(clock.now() - start, seconds(1));
}

}  // namespace
}  // namespace ddft::sender
