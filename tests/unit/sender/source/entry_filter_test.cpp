// Which entries of the hot folder's tree are sent (entry_filter.hpp): what the filter, the shard,
// control characters and --symlinks leave out, each said once while it stays.
#include "sender/source/entry_filter.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/log_capture.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
using ::testing::HasSubstr;

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class EntryFilterTest : public ::testing::Test {
 protected:
  EntryFilterTest() { opt_.dir = scratch_.path().string(); }
  testing::ScratchDir scratch_{"ef"};
  HotFolderOptions opt_;
};

TEST_F(EntryFilterTest, AFileLeftOutIsSaidOnceUntilItGoesAway) {
  opt_.filter = common::PathFilter({}, {"*.tmp"});
  EntryFilter entries(opt_, ".ddft-watch-journal");
  testing::LogCapture log;
  EXPECT_TRUE(entries.admit("a/report.pdf"));
  EXPECT_FALSE(entries.admit("a/x.tmp"));
  EXPECT_FALSE(entries.admit("a/x.tmp"));
  EXPECT_FALSE(entries.admit("bad\nname"));
  EXPECT_EQ(occurrences(log.text(), "leaving 'a/x.tmp' in place"), 1u) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("the receiver refuses names with control characters"));
  entries.forget("a/x.tmp");
  EXPECT_FALSE(entries.admit("a/x.tmp"));
  EXPECT_EQ(occurrences(log.text(), "leaving 'a/x.tmp' in place"), 2u) << "it came back";
}

TEST_F(EntryFilterTest, AnotherShardsFileIsLeftWithoutAWord) {
  opt_.shard = Shard{0, 2};
  EntryFilter entries(opt_, ".ddft-watch-journal");
  testing::LogCapture log;
  size_t admitted = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string rel = "f" + std::to_string(i);
    const bool here = opt_.shard.takes(rel);
    EXPECT_EQ(entries.admit(rel), here) << rel;
    if (!here) entries.warn_not_regular(rel, S_IFIFO);
    admitted += here;
  }
  EXPECT_GT(admitted, 0u);
  EXPECT_LT(admitted, 20u);
  EXPECT_EQ(log.text(), "");
}

TEST_F(EntryFilterTest, ALinkIsCountedAndToldAsSymlinksSays) {
  std::filesystem::create_symlink("/etc/hostname", scratch_.path() / "link");
  std::vector<std::string> told;
  opt_.on_link = [&](const std::string& rel, const std::string&, bool failed) {
    told.push_back(rel + (failed ? " failed" : " skipped"));
  };
  {
    EntryFilter skip(opt_, ".ddft-watch-journal");
    skip.warn_not_regular("link", S_IFLNK);
    skip.warn_not_regular("link", S_IFLNK);
    EXPECT_EQ(skip.links_skipped(), 1u) << "once while it stays";
    EXPECT_EQ(skip.links_failed(), 0u);
  }
  opt_.symlinks = SymlinkMode::kError;
  EntryFilter error(opt_, ".ddft-watch-journal");
  testing::LogCapture log;
  error.warn_not_regular("link", S_IFLNK);
  EXPECT_EQ(error.links_failed(), 1u);
  EXPECT_THAT(log.text(), HasSubstr("'link' is a symbolic link (to '/etc/hostname'"));
  EXPECT_EQ(told, (std::vector<std::string>{"link skipped", "link failed"}));
}

TEST_F(EntryFilterTest, OnlyReservedNamesNotTheHotFoldersOwnAreSaid) {
  EntryFilter entries(opt_, ".ddft-watch-journal");
  testing::LogCapture log;
  entries.note_reserved(".ddft-watch-journal.tmp");
  entries.note_reserved("sub/.ddft-finishing-1f");
  entries.note_reserved(".ddft-other");
  EXPECT_EQ(occurrences(log.text(), "names starting '.ddft-' are reserved"), 1u) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("'.ddft-other'"));
}

}  // namespace
}  // namespace ddft::sender
