// How a sent file leaves the hot folder (sent_removal.hpp): deleted or moved to the sent folder
// through its private name, a name taken there numbered, a new version renamed over it in the
// instant put back, and one replaced before left alone.
#include "sender/source/sent_removal.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "sender/source/hot_folder_paths.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using ddft::testing::write_file;

class SentRemovalTest : public ::testing::Test {
 protected:
  SentRemovalTest() {
    fs::create_directories(dir_ / "sub");
    opt_.dir = dir_.string();
  }
  // The journal record of the file at `rel` as it is now.
  JournalRecord record(const std::string& rel) const {
    struct stat st {};
    EXPECT_EQ(::lstat((dir_ / rel).c_str(), &st), 0) << rel;
    return {rel, hot_folder_paths::identity_of(st)};
  }

  testing::ScratchDir scratch_{"srm"};
  fs::path dir_ = scratch_.path() / "hot";
  HotFolderOptions opt_;
  std::string moved_to_, put_back_, why_;
};

TEST_F(SentRemovalTest, ASentFileIsDeletedThroughItsPrivateName) {
  write_file(dir_ / "sub/a.bin", "sent");
  const JournalRecord r = record("sub/a.bin");
  EXPECT_EQ(finishing_name(r).rfind("sub/.ddft-finishing-", 0), 0u) << finishing_name(r);
  std::vector<std::string> points;
  opt_.test_hook = [&](std::string_view point, const std::string&) { points.emplace_back(point); };
  SentRemoval removal(opt_);
  ASSERT_TRUE(removal.finish(r, &moved_to_, &put_back_, &why_)) << why_;
  EXPECT_EQ(moved_to_, "");
  EXPECT_EQ(put_back_, "");
  EXPECT_FALSE(fs::exists(dir_ / "sub/a.bin"));
  EXPECT_FALSE(fs::exists(dir_ / finishing_name(r)));
  EXPECT_EQ(points, (std::vector<std::string>{"finish", "finish-moved"}));
}

TEST_F(SentRemovalTest, AMoveToTheSentFolderNeverOverwritesWhatIsThere) {
  const fs::path sent = scratch_.path() / "sent";
  fs::create_directories(sent / "sub");
  write_file(sent / "sub/a.bin", "older");
  opt_.sent_dir = sent.string();
  write_file(dir_ / "sub/a.bin", "newer");
  SentRemoval removal(opt_);
  ASSERT_TRUE(removal.finish(record("sub/a.bin"), &moved_to_, &put_back_, &why_)) << why_;
  EXPECT_EQ(moved_to_, (sent / "sub/a.1.bin").string());
  EXPECT_EQ(read_file(sent / "sub/a.bin"), "older");
  EXPECT_EQ(read_file(sent / "sub/a.1.bin"), "newer");
}

TEST_F(SentRemovalTest, ANewVersionUnderThePrivateNameIsPutBackNeverRemoved) {
  write_file(dir_ / "sub/a.bin", "sent");
  const JournalRecord r = record("sub/a.bin");
  fs::remove(dir_ / "sub/a.bin");
  write_file(dir_ / finishing_name(r), "a new version, longer");
  write_file(dir_ / "sub/a.bin", "newest");  // the name is taken again
  SentRemoval removal(opt_);
  ASSERT_TRUE(
      removal.finish_private(r, (dir_ / finishing_name(r)).string(), &moved_to_, &put_back_, &why_))
      << why_;
  EXPECT_EQ(put_back_, "sub/a.1.bin");
  EXPECT_EQ(read_file(dir_ / "sub/a.1.bin"), "a new version, longer");
  EXPECT_EQ(read_file(dir_ / "sub/a.bin"), "newest");
}

TEST_F(SentRemovalTest, AFileReplacedJustAfterItWasSentStays) {
  write_file(dir_ / "a.bin", "sent");
  const JournalRecord r = record("a.bin");
  fs::remove(dir_ / "a.bin");
  write_file(dir_ / "a.bin", "replaced, and longer");
  SentRemoval removal(opt_);
  EXPECT_FALSE(removal.finish(r, &moved_to_, &put_back_, &why_));
  EXPECT_EQ(why_, "'a.bin' was replaced just after it was sent; the new version stays");
  EXPECT_EQ(read_file(dir_ / "a.bin"), "replaced, and longer");
}

}  // namespace
}  // namespace ddft::sender
