// The hot folder's retention folder, in a real folder on a fake wall clock: files past the window
// go, oldest first; past the size bound the oldest go too, but never one the history may still
// name; the index survives a restart.
#include "sender/source/retention.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using std::chrono::hours;

constexpr int64_t kHour = int64_t{3600} * 1'000'000'000;

class RetentionTest : public ::testing::Test {
 protected:
  // A file of `size` bytes moved in now.
  void keep(Retention& r, const std::string& rel, size_t size) {
    fs::create_directories((dir_.path() / rel).parent_path());
    std::ofstream(dir_.path() / rel) << std::string(size, 'x');
    r.kept((dir_.path() / rel).string(), size);
  }
  bool there(const std::string& rel) const { return fs::exists(dir_.path() / rel); }
  Retention::WallNs wall() {
    return [this] { return now_; };
  }
  testing::ScratchDir dir_{"retention"};
  int64_t now_ = int64_t{1'800'000'000} * 1'000'000'000;
};

TEST_F(RetentionTest, FilesPastTheWindowGoOldestFirstAndTheIndexSurvivesARestart) {
  RetentionLimits limits;
  limits.keep_for = hours(10);
  {
    Retention r(dir_.path().string(), limits, wall());
    keep(r, "a/one.bin", 100);
    now_ += 5 * kHour;
    keep(r, "two.bin", 200);
    EXPECT_EQ(r.files(), 2u);
    EXPECT_EQ(r.bytes(), 300u);
    now_ += 6 * kHour;  // one is 11 h old, two 6 h
    EXPECT_EQ(r.prune(true), 1u);
    EXPECT_FALSE(there("a/one.bin"));
    EXPECT_TRUE(there("two.bin"));
  }
  Retention again(dir_.path().string(), limits, wall());
  EXPECT_EQ(again.bytes(), 200u) << "what the index still holds, read at start";
  now_ += 5 * kHour;
  EXPECT_EQ(again.prune(true), 1u);
  EXPECT_FALSE(there("two.bin"));
  EXPECT_EQ(again.files(), 0u);
}

TEST_F(RetentionTest, PastTheSizeBoundTheOldestGoButNotOneTheHistoryMayStillName) {
  RetentionLimits limits;
  limits.max_bytes = 250;
  limits.protect_for = hours(24);
  Retention r(dir_.path().string(), limits, wall());
  keep(r, "old.bin", 100);
  now_ += 30 * kHour;
  keep(r, "mid.bin", 100);
  keep(r, "new.bin", 100);
  EXPECT_EQ(r.prune(true), 1u) << "the one past the history's last repeat";
  EXPECT_FALSE(there("old.bin"));
  keep(r, "newer.bin", 100);
  EXPECT_EQ(r.prune(true), 0u) << "over the bound, but each may still be asked for";
  EXPECT_EQ(r.bytes(), 300u);
  now_ += 25 * kHour;
  EXPECT_EQ(r.prune(true), 1u);
  EXPECT_FALSE(there("mid.bin"));
  EXPECT_EQ(r.bytes(), 200u);
  EXPECT_EQ(r.prune(false), 0u) << "at most once a minute unless asked";
}

}  // namespace
}  // namespace ddft::sender
