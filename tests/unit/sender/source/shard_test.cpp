// --shard K/N: the split of relative paths over N hosts is a partition (each path in exactly one
// shard), it is stable (pinned values, from xxHash's own command line), and bad values are one
// line each.
#include "sender/source/shard.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace ddft::sender {
namespace {

// Relative paths as a hot folder or a folder source would give them: names, folders, non-ASCII.
std::vector<std::string> sample_paths() {
  std::vector<std::string> paths = {"a.txt", "b.txt",           "sub/deeper/b.txt",
                                    "x",     "caf\xc3\xa9.pdf", "reports/2026-11/q3.pdf"};
  for (int i = 0; i < 500; ++i) paths.push_back("batch/" + std::to_string(i) + ".bin");
  return paths;
}

TEST(Shard, EveryPathIsInExactlyOneShard) {
  const std::vector<std::string> paths = sample_paths();
  for (const uint32_t n : {1u, 2u, 3u, 7u, 16u}) {
    std::vector<size_t> per_shard(n, 0);
    for (const std::string& p : paths) {
      int takers = 0;
      for (uint32_t k = 0; k < n; ++k) {
        if (Shard{k, n}.takes(p)) {
          ++takers;
          ++per_shard[k];
        }
      }
      EXPECT_EQ(takers, 1) << p << " among " << n;
    }
    // Not a proof of balance, but a hash that put everything in one shard would show here.
    for (uint32_t k = 0; k < n; ++k) {
      EXPECT_GT(per_shard[k], paths.size() / n / 2) << "shard " << k << "/" << n;
    }
  }
}

// Pinned: every host must compute the same split, on any machine and after any upgrade. The hex
// values are `printf %s PATH | xxhsum -H3` (xxHash 0.8.1's command line); a shard is that modulo N.
TEST(Shard, TheSplitIsPinned) {
  EXPECT_EQ(shard_of("a.txt", 2), 0u);             // f01e5cbbc09d4fc4
  EXPECT_EQ(shard_of("b.txt", 2), 1u);             // 3c697ec236bbf61f
  EXPECT_EQ(shard_of("sub/deeper/b.txt", 3), 2u);  // cf5a8bea833815e4
  EXPECT_EQ(shard_of("sub/deeper/b.txt", 7), 6u);
  EXPECT_EQ(shard_of("reports/2026-11/q3.pdf", 16), 13u);    // ad0159b669ccac8d
  EXPECT_EQ(shard_of("photos/2026/IMG_0001.jpg", 16), 12u);  // 9e9ef7ba25f8bbdc
  EXPECT_TRUE((Shard{1, 2}.takes("b.txt")));
  EXPECT_FALSE((Shard{0, 2}.takes("b.txt")));
  // The path as the receiver is told it: another spelling is another file.
  EXPECT_NE(shard_of("sub/deeper/b.txt", 1u << 30), shard_of("sub//deeper/b.txt", 1u << 30));
}

TEST(Shard, NotShardedTakesEverything) {
  const Shard none;
  EXPECT_FALSE(none.enabled());
  EXPECT_EQ(none.to_string(), "");
  for (const std::string& p : sample_paths()) EXPECT_TRUE(none.takes(p)) << p;
}

TEST(Shard, ParsesKOfN) {
  Shard s;
  std::string error;
  ASSERT_TRUE(parse_shard("1/2", &s, &error)) << error;
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.to_string(), "1/2");
  ASSERT_TRUE(parse_shard("0/1", &s, &error)) << error;
  EXPECT_TRUE(s.enabled());
  EXPECT_TRUE(s.takes("anything"));
}

TEST(Shard, BadValuesAreOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3/3", "3/3: K counts from 0 and must be below N (the 3 shards are 0/3 to 2/3)"},
      {"0/0", "0/0: N, the number of shards, must be at least 1"},
      {"1",
       "'1' is not K/N (this host takes shard K of N, counted from 0: 0/2 and 1/2 for two "
       "hosts)"},
      {"a/b", "'a/b' is not K/N"},
      {"", "'' is not K/N"},
      {"-1/2", "'-1/2' is not K/N"},
      {"+1/2", "'+1/2' is not K/N"},
      {" 1/2", "' 1/2' is not K/N"},
      {"1/2/3", "'1/2/3' is not K/N"},
      {"0/99999999999", "'0/99999999999' is not K/N"},
  };
  for (const auto& [text, want] : cases) {
    Shard s{7, 9};
    std::string error;
    EXPECT_FALSE(parse_shard(text, &s, &error)) << text;
    EXPECT_EQ(error.rfind(want, 0), 0u) << text << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_EQ(s.index, 7u) << "left as it was: " << text;
  }
}

}  // namespace
}  // namespace ddft::sender
