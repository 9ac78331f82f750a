// The bounded set of a session's recent file ids.
#include "receiver/assembly/recent_ids.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace ddft::receiver {
namespace {

TEST(RecentIds, ForgetsTheOldestNotTheSmallestAcrossTheWrap) {
  RecentIds ids(2);
  ids.insert(UINT32_MAX - 1);
  ids.insert(UINT32_MAX);
  ids.insert(1);  // the session's ids wrapped
  EXPECT_TRUE(ids.contains(1)) << "the id just seen is remembered";
  EXPECT_TRUE(ids.contains(UINT32_MAX));
  EXPECT_FALSE(ids.contains(UINT32_MAX - 1));
  EXPECT_EQ(ids.size(), 2u);
}

TEST(RecentIds, AnIdSeenTwiceTakesOnePlace) {
  RecentIds ids(2);
  ids.insert(5);
  ids.insert(5);
  ids.insert(6);
  EXPECT_TRUE(ids.contains(5));
  EXPECT_TRUE(ids.contains(6));
  ids.clear();
  EXPECT_FALSE(ids.contains(5));
  EXPECT_EQ(ids.size(), 0u);
}

}  // namespace
}  // namespace ddft::receiver
