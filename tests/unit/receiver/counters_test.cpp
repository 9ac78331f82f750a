// SeqCounter, IntervalStat and the AuthReject names, alone.
#include "receiver/counters.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace ddft::receiver {
namespace {

TEST(SeqCounter, HighestSequenceNumberDoesNotHang) {
  SeqCounter c;
  c.record(5);
  c.record(UINT64_MAX);  // the highest number there is: counting the gap before it still ends
  EXPECT_EQ(c.received(), 2u);
  EXPECT_FALSE(c.record(UINT64_MAX));
}

TEST(SeqCounter, CountsGapsAndDuplicates) {
  SeqCounter c;
  for (uint64_t s : {5, 6, 7, 9, 10, 10, 8, 15}) c.record(s);
  EXPECT_EQ(c.lost(), 4u);  // 11..14
  EXPECT_EQ(c.received(), 7u);
  EXPECT_FALSE(c.record(9));
}

TEST(SeqCounter, ResetForgetsTheOldSession) {
  SeqCounter c;
  for (uint64_t s : {1, 2, 5}) c.record(s);
  EXPECT_EQ(c.lost(), 2u);
  c.reset();
  EXPECT_EQ(c.lost(), 0u);
  EXPECT_EQ(c.received(), 0u);
  EXPECT_TRUE(c.record(2));  // not a duplicate any more
}

TEST(SeqCounter, ALateNumberBelowTheFirstFillsNoGapTwice) {
  SeqCounter c;
  c.record(10);
  c.record(12);
  EXPECT_EQ(c.lost(), 1u);
  c.record(9);  // earlier than the first: the range grows, nothing is lost
  EXPECT_EQ(c.lost(), 1u);
  EXPECT_EQ(c.received(), 3u);
}

TEST(IntervalStat, KeepsSumCountAndPeak) {
  IntervalStat s;
  s.add(1'000'000);
  s.add(3'000'000);
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.max_ns, 3'000'000u);
  EXPECT_EQ(s.format(), "2.00/3");
}

TEST(IntervalStat, FormatsLikeDfts) {
  IntervalStat s;
  EXPECT_EQ(s.format(), "0.00/1");  // the peak is never shown as 0
  s.add(2'190'000);
  s.add(2'190'000);
  EXPECT_EQ(s.format(), "2.19/3");
  s.add(880'000'000);
  EXPECT_EQ(s.format().substr(s.format().find('/')), "/880");
}

TEST(CountersAuth, EveryReasonHasItsLogName) {
  EXPECT_EQ(auth_reject_name(AuthReject::kBadTag), "bad tag");
  EXPECT_EQ(auth_reject_name(AuthReject::kStaleSession), "of an earlier session");
  for (size_t i = 0; i < kAuthRejectCount; ++i) {
    EXPECT_NE(auth_reject_name(static_cast<AuthReject>(i)), "?") << i;
  }
}

}  // namespace
}  // namespace ddft::receiver
