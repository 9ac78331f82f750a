// What the receiver knows the fate of, by (session, file id): kept at least the window, at most
// twice it, so a receiver that runs for months does not grow without bound.
#include "receiver/assembly/settled_files.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace ddft::receiver {
namespace {
using std::chrono::hours;

TEST(SettledFiles, RemembersForTheWindowAndForgetsWithinTwice) {
  common::FakeClock clock;
  SettledFiles s(hours(25));
  s.add(1, 10, clock.now());
  s.add(2, 10, clock.now());
  EXPECT_TRUE(s.contains(1, 10));
  EXPECT_TRUE(s.contains(2, 10));
  EXPECT_FALSE(s.contains(1, 11));
  EXPECT_FALSE(s.contains(3, 10));
  clock.advance(hours(24));
  s.add(1, 11, clock.now());
  EXPECT_TRUE(s.contains(1, 10)) << "within the window";
  clock.advance(hours(2));
  s.add(1, 12, clock.now());  // a new generation: the first one is kept once more
  EXPECT_TRUE(s.contains(1, 10));
  EXPECT_TRUE(s.contains(1, 11));
  clock.advance(hours(26));
  s.add(1, 13, clock.now());
  EXPECT_FALSE(s.contains(1, 10)) << "past twice the window";
  EXPECT_FALSE(s.contains(1, 11));
  EXPECT_TRUE(s.contains(1, 12));
  EXPECT_TRUE(s.contains(1, 13));
  EXPECT_EQ(s.size(), 2u);
}

TEST(SettledFiles, AFileKeepsItsFateAndAFailureItsRecordUntilAResendResolvesIt) {
  common::FakeClock clock;
  SettledFiles s(hours(25));
  using Fate = SettledFiles::Fate;
  s.add(1, 1, clock.now());
  EXPECT_EQ(s.fate(1, 1), Fate::kSeen);
  s.add(1, 1, clock.now(), Fate::kFailed, "/out/.failed/r1.json");
  EXPECT_EQ(s.fate(1, 1), Fate::kFailed);
  EXPECT_EQ(s.record(1, 1), "/out/.failed/r1.json");
  s.add(1, 1, clock.now());  // seen again (a late repeat): its fate stays
  EXPECT_EQ(s.fate(1, 1), Fate::kFailed);
  clock.advance(hours(26));
  s.add(2, 1, clock.now());  // a new generation: the failure is in the older one
  s.add(1, 1, clock.now());
  EXPECT_EQ(s.fate(1, 1), Fate::kFailed) << "kept across the rotation";
  EXPECT_EQ(s.record(1, 1), "/out/.failed/r1.json");
  s.add(1, 1, clock.now(), Fate::kPassed);  // resolved by a resend
  EXPECT_EQ(s.fate(1, 1), Fate::kPassed);
  EXPECT_EQ(s.record(1, 1), "");
  EXPECT_EQ(s.fate(9, 9), std::nullopt);
}

}  // namespace
}  // namespace ddft::receiver
