// The FEC vocabulary and codec (common/fec.hpp): parsing and checking K:M and the interleave,
// and the ISA-L Reed-Solomon codec rebuilding every loss pattern it can.
#include "common/fec.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <vector>

namespace ddft {
namespace {

TEST(FecParams, ParsesAndChecks) {
  common::FecParams p;
  std::string err;
  ASSERT_TRUE(common::parse_fec("32:4", &p, &err));
  EXPECT_EQ(p.k, 32u);
  EXPECT_EQ(p.m, 4u);
  EXPECT_TRUE(common::parse_fec("off", &p, &err));
  EXPECT_FALSE(p.enabled());
  EXPECT_FALSE(common::parse_fec("32", &p, &err));
  EXPECT_NE(err.find("is not K:M"), std::string::npos);
  EXPECT_FALSE(common::parse_fec("250:10", &p, &err));
  EXPECT_NE(err.find("at most 255"), std::string::npos);
  EXPECT_FALSE(common::parse_fec("0:4", &p, &err));
  EXPECT_FALSE(common::parse_fec("4:x", &p, &err));
  p = {200, 4, 255};
  EXPECT_TRUE(common::check_fec_interleave(p, &err));
  p = {32, 4, 256};
  EXPECT_FALSE(common::check_fec_interleave(p, &err));
  EXPECT_NE(err.find("outside 1..255"), std::string::npos);
  EXPECT_EQ(common::format_fec({32, 4, 8}), "32:4 x8");
}

// Every loss pattern of up to m shards of a group is rebuilt exactly, shorter shards included.
TEST(RsCodec, RebuildsEveryPatternOfUpToMLosses) {
  const unsigned k = 6, m = 3;
  const size_t len = 100;
  common::RsCodec codec(k, m);
  std::mt19937 rng(1);
  std::vector<std::vector<uint8_t>> src(k, std::vector<uint8_t>(len, 0));
  for (unsigned i = 0; i < k; ++i) {
    const size_t n = 40 + 10 * i;  // shorter shards are zero-padded
    for (size_t b = 0; b < n; ++b) src[i][b] = static_cast<uint8_t>(rng());
  }
  std::vector<std::vector<uint8_t>> par(m, std::vector<uint8_t>(len, 0));
  std::vector<uint8_t*> pp;
  for (auto& p : par) pp.push_back(p.data());
  for (unsigned i : {3u, 0u, 5u, 1u, 4u, 2u})
    codec.accumulate(i, {src[i].data(), 40 + 10 * i}, pp.data());
  unsigned patterns = 0;
  for (unsigned mask = 0; mask < (1u << (k + m)); ++mask) {
    if (std::popcount(mask) > static_cast<int>(m)) continue;
    std::vector<std::vector<uint8_t>> shards(k + m);
    std::vector<uint8_t*> ptrs(k + m);
    std::vector<bool> present(k + m);
    for (unsigned i = 0; i < k + m; ++i) {
      present[i] = !(mask & (1u << i));
      shards[i] = present[i] ? (i < k ? src[i] : par[i - k]) : std::vector<uint8_t>(len, 0xEE);
      ptrs[i] = shards[i].data();
    }
    ASSERT_TRUE(codec.rebuild(len, present, ptrs.data())) << mask;
    for (unsigned i = 0; i < k; ++i)
      ASSERT_EQ(shards[i], src[i]) << "mask " << mask << " shard " << i;
    ++patterns;
  }
  EXPECT_EQ(patterns, 130u);  // 1 + 9 + 36 + 84
  std::vector<bool> too_few(k + m, false);
  std::vector<uint8_t*> ptrs(k + m, src[0].data());
  for (unsigned i = 0; i < k - 1; ++i) too_few[i] = true;
  EXPECT_FALSE(codec.rebuild(len, too_few, ptrs.data()));
}

}  // namespace
}  // namespace ddft
