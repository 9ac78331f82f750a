// The hot folder's watch on its tree (tree_watch.hpp), with a real inotify and a fake clock: the
// start scans what is there, events bring what lands later (in new folders too), a file going is
// forgotten, and DIR's removal ends it.
#include "sender/source/tree_watch.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using ddft::testing::write_file;

class TreeWatchTest : public ::testing::Test {
 protected:
  TreeWatchTest() {
    fs::create_directories(dir_ / "a/b");
    opt_.dir = dir_.string();
    opt_.rescan_s = 0;  // events only
  }
  FileIdentity root_id() const {
    struct stat st {};
    EXPECT_EQ(::stat(dir_.c_str(), &st), 0);
    return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), 0, 0};
  }

  testing::ScratchDir scratch_{"tw"};
  fs::path dir_ = scratch_.path() / "hot";
  HotFolderOptions opt_;
  common::FakeClock clock_;
  ReadinessTracker tracker_{std::chrono::seconds(1)};
  EntryFilter entries_{opt_, ".ddft-watch-journal"};
};

TEST_F(TreeWatchTest, TheStartScansTheTreeAndEventsBringWhatLandsLater) {
  write_file(dir_ / "a/b/old.bin", "old");
  write_file(dir_ / ".ddft-watch-journal", "");
  TreeWatch watch(opt_, dir_.string(), root_id(), tracker_, entries_);
  watch.start(clock_.now());
  EXPECT_EQ(watch.folders(), 3u);
  EXPECT_TRUE(tracker_.is_tracked("a/b/old.bin"));
  EXPECT_FALSE(tracker_.is_tracked(".ddft-watch-journal")) << "reserved";
  EXPECT_EQ(watch.next_rescan(), std::nullopt);
  fs::create_directories(dir_ / "c");
  write_file(dir_ / "c/new.bin", "new");
  write_file(dir_ / "top.bin", "top");
  fs::remove(dir_ / "a/b/old.bin");
  ASSERT_TRUE(watch.update(clock_.now()));
  EXPECT_EQ(watch.folders(), 4u);
  EXPECT_TRUE(tracker_.is_tracked("c/new.bin"));
  EXPECT_TRUE(tracker_.is_tracked("top.bin"));
  EXPECT_FALSE(tracker_.is_tracked("a/b/old.bin"));
}

TEST_F(TreeWatchTest, DirGoneEndsTheWatch) {
  TreeWatch watch(opt_, dir_.string(), root_id(), tracker_, entries_);
  watch.start(clock_.now());
  ASSERT_TRUE(watch.update(clock_.now()));
  fs::remove_all(dir_);
  EXPECT_FALSE(watch.update(clock_.now()));
  EXPECT_TRUE(watch.lost_root());
}

TEST_F(TreeWatchTest, ASetRescanIntervalSchedulesTheNextScan) {
  opt_.rescan_s = 2;
  TreeWatch watch(opt_, dir_.string(), root_id(), tracker_, entries_);
  const auto start = clock_.now();
  watch.start(start);
  EXPECT_EQ(watch.next_rescan(), start + std::chrono::seconds(2));
  clock_.advance(std::chrono::seconds(3));
  ASSERT_TRUE(watch.update(clock_.now()));
  EXPECT_EQ(watch.next_rescan(), clock_.now() + std::chrono::seconds(2));
}

}  // namespace
}  // namespace ddft::sender
