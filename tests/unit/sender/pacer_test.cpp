#include "sender/pacer.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ddft::sender
