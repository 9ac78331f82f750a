// SeqWindow: which of the last Size sequence numbers were taken: new, seen, or too old to tell;
// the window slides with the highest number seen and reuses the bits it slides over.
#include "receiver/seq_window.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace ddft::receiver {
namespace {
using Take = SeqWindow<128>::Take;

TEST(SeqWindow, FirstNumberStartsItAnywhere) {
  SeqWindow<128> w;
  EXPECT_FALSE(w.started());
  EXPECT_EQ(w.take(1000), Take::kNew);
  EXPECT_TRUE(w.started());
  EXPECT_EQ(w.max(), 1000u);
  EXPECT_EQ(w.take(1000), Take::kSeen);
}

TEST(SeqWindow, OutOfOrderWithinTheWindowIsNewOnceThenSeen) {
  SeqWindow<128> w;
  w.take(200);
  for (uint64_t s : {150u, 199u, 73u}) {
    EXPECT_EQ(w.take(s), Take::kNew) << s;
    EXPECT_EQ(w.take(s), Take::kSeen) << s;
  }
  EXPECT_EQ(w.max(), 200u) << "older numbers do not move the window";
  EXPECT_EQ(w.take(72), Take::kTooOld) << "exactly Size below the highest";
  EXPECT_EQ(w.take(0), Take::kTooOld);
}

TEST(SeqWindow, SlidingForwardForgetsTheReusedBits) {
  SeqWindow<64> w;
  for (uint64_t s = 0; s < 64; ++s) ASSERT_EQ(w.take(s), SeqWindow<64>::Take::kNew);
  // 64 + 10 reuses the bits of 0..10: the numbers 65..73 skipped over must read as new later.
  EXPECT_EQ(w.take(74), SeqWindow<64>::Take::kNew);
  EXPECT_EQ(w.max(), 74u);
  for (uint64_t s = 64; s < 74; ++s) EXPECT_EQ(w.take(s), SeqWindow<64>::Take::kNew) << s;
  EXPECT_EQ(w.take(11), SeqWindow<64>::Take::kSeen) << "still in the window, taken before";
  EXPECT_EQ(w.take(10), SeqWindow<64>::Take::kTooOld);
}

TEST(SeqWindow, AJumpFartherThanTheWindowClearsEverything) {
  SeqWindow<128> w;
  for (uint64_t s = 0; s < 128; ++s) w.take(s);
  EXPECT_EQ(w.take(1'000'000), Take::kNew);
  for (uint64_t s = 1'000'000 - 127; s < 1'000'000; ++s) {
    ASSERT_EQ(w.take(s), Take::kNew) << s;
  }
}

TEST(SeqWindow, TheTopOfTheRangeDoesNotWrap) {
  SeqWindow<64> w;
  EXPECT_EQ(w.take(UINT64_MAX - 1), SeqWindow<64>::Take::kNew);
  EXPECT_EQ(w.take(UINT64_MAX), SeqWindow<64>::Take::kNew);
  EXPECT_EQ(w.take(UINT64_MAX - 1), SeqWindow<64>::Take::kSeen);
  EXPECT_EQ(w.take(UINT64_MAX - 63), SeqWindow<64>::Take::kNew);
  EXPECT_EQ(w.take(UINT64_MAX - 64), SeqWindow<64>::Take::kTooOld);
}

}  // namespace
}  // namespace ddft::receiver
