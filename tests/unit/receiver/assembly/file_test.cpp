// File's chunk bitmap and missing_ranges(), alone.
#include "receiver/assembly/file.hpp"

#include <gtest/gtest.h>

namespace ddft::receiver {
namespace {

File sized(uint64_t size, uint64_t chunk) {
  File f;
  f.size = size;
  f.chunk_size = chunk;
  f.chunks_total = size / chunk + (size % chunk != 0);
  f.bitmap.assign(f.chunks_total / 64 + 1, 0);
  return f;
}

TEST(File, NothingReceivedIsOneRangeCutAtTheSize) {
  File f = sized(2500, 1000);
  uint64_t total = 0;
  const auto r = missing_ranges(f, 10, &total);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], std::make_pair(uint64_t{0}, uint64_t{2500}));
  EXPECT_EQ(total, 1u);
}

TEST(File, HolesAreListedUpToTheLimitAndCountedInAll) {
  File f = sized(200 * 100, 100);
  for (uint64_t i = 0; i < 200; i += 2) f.set_chunk(i);  // every odd chunk missing
  uint64_t total = 0;
  const auto r = missing_ranges(f, 3, &total);
  EXPECT_EQ(total, 100u);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], std::make_pair(uint64_t{100}, uint64_t{200}));
  EXPECT_EQ(r[2], std::make_pair(uint64_t{500}, uint64_t{600}));
}

TEST(File, AllReceivedHasNoRangeAndBlockCountRoundsUp) {
  File f = sized(130 * 10, 10);
  for (uint64_t i = 0; i < f.chunks_total; ++i) f.set_chunk(i);
  EXPECT_TRUE(f.has_chunk(129));
  uint64_t total = 7;
  EXPECT_TRUE(missing_ranges(f, 5, &total).empty());
  EXPECT_EQ(total, 0u);
  EXPECT_EQ(f.block_count(1000), 2u);
  EXPECT_EQ(f.block_count(1300), 1u);
}

}  // namespace
}  // namespace ddft::receiver
