// dd_linksim's link model: its statistics match what was asked, and a seed repeats a run exactly.
#include "linksim/link_model.hpp"

#include <gtest/gtest.h>

namespace ddft::linksim {
namespace {

LinkStats run(const Impairments& imp, size_t n) {
  LinkModel m(imp);
  for (size_t i = 0; i < n; ++i) m.next(1000);
  return m.stats();
}

TEST(LinkModel, RandomLossRate) {
  Impairments imp;
  imp.loss_pct = 1;
  const LinkStats s = run(imp, 200'000);
  EXPECT_NEAR(static_cast<double>(s.dropped_random) / 200'000, 0.01, 0.001);
  EXPECT_EQ(s.dropped_burst, 0u);
}

TEST(LinkModel, GilbertElliottBurstsHaveTheAskedShareAndMeanLength) {
  Impairments imp;
  imp.burst_loss_pct = 2;
  imp.burst_len = 20;
  const LinkStats s = run(imp, 2'000'000);
  EXPECT_NEAR(static_cast<double>(s.dropped_burst) / 2'000'000, 0.02, 0.003);
  ASSERT_GT(s.bursts, 1000u);
  EXPECT_NEAR(static_cast<double>(s.dropped_burst) / static_cast<double>(s.bursts), 20.0, 1.5);
  EXPECT_GT(s.longest_burst, 40u);  // geometric lengths: some much longer than the mean
}

TEST(LinkModel, BurstMaxCapsEveryBurst) {
  Impairments imp;
  imp.burst_loss_pct = 2;
  imp.burst_len = 20;
  imp.burst_max = 20;
  const LinkStats s = run(imp, 1'000'000);
  EXPECT_EQ(s.longest_burst, 20u);
  EXPECT_GT(s.bursts, 500u);
}

TEST(LinkModel, SameSeedSameRunOtherSeedOtherRun) {
  Impairments imp;
  imp.loss_pct = 3;
  imp.duplicate_pct = 1;
  imp.reorder_pct = 1;
  imp.corrupt_pct = 1;
  auto trace = [&](uint64_t seed) {
    imp.seed = seed;
    LinkModel m(imp);
    std::string t;
    for (int i = 0; i < 5000; ++i) {
      const Verdict v = m.next(1200);
      t += v.drop ? 'd' : v.reorder ? 'r' : v.duplicate ? '2' : v.flip_bit >= 0 ? 'c' : '.';
    }
    return t;
  };
  EXPECT_EQ(trace(7), trace(7));
  EXPECT_NE(trace(7), trace(8));
}

TEST(LinkModel, CorruptionFlipsABitInsideThePacket) {
  Impairments imp;
  imp.corrupt_pct = 100;
  LinkModel m(imp);
  for (int i = 0; i < 1000; ++i) {
    const Verdict v = m.next(100);
    ASSERT_GE(v.flip_bit, 0);
    ASSERT_LT(v.flip_bit, 800);
  }
}

TEST(LinkModel, BadSettingsAreNamed) {
  Impairments imp;
  imp.loss_pct = 101;
  EXPECT_NE(imp.check().value_or("").find("--loss 101"), std::string::npos);
  imp = {};
  imp.burst_loss_pct = 1;
  EXPECT_NE(imp.check().value_or("").find("--burst-len"), std::string::npos);
  imp.burst_len = 5;
  EXPECT_EQ(imp.check(), std::nullopt);
}

}  // namespace
}  // namespace ddft::linksim
