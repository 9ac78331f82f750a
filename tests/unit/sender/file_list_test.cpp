#include "sender/file_list.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;

class FileListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ddft_fl_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "photos/2024");
    touch(root_ / "photos/b.jpg");
    touch(root_ / "photos/a.jpg");
    touch(root_ / "photos/2024/c.jpg");
    touch(root_ / "single.txt");
  }
  void TearDown() override { fs::remove_all(root_); }
  static void touch(const fs::path& p) { std::ofstream(p) << "x"; }
  fs::path root_;
};

std::vector<std::string> rel(const FileList& l) {
  std::vector<std::string> out;
  for (const auto& f : l.files) out.push_back(f.rel_path);
  return out;
}

TEST_F(FileListTest, FolderKeepsItsNameAndOrder) {
  const auto l = discover_files({(root_ / "photos").string()});
  EXPECT_TRUE(l.errors.empty());
  EXPECT_EQ(rel(l),
            (std::vector<std::string>{"photos/2024/c.jpg", "photos/a.jpg", "photos/b.jpg"}));
}

TEST_F(FileListTest, EachFileCarriesItsListedSize) {
  std::ofstream(root_ / "photos/2024/c.jpg") << std::string(1234, 'c');
  const auto l = discover_files(
      {(root_ / "photos").string(), (root_ / "single.txt").string(), "synthetic:2K"});
  ASSERT_EQ(l.files.size(), 5u);
  EXPECT_EQ(l.files[0].rel_path, "photos/2024/c.jpg");
  EXPECT_EQ(l.files[0].size, 1234u);
  EXPECT_EQ(l.files[1].size, 1u);
  EXPECT_EQ(l.files[3].rel_path, "single.txt");
  EXPECT_EQ(l.files[3].size, 1u);
  EXPECT_EQ(l.files[4].size, 2048u);
}

TEST_F(FileListTest, TrailingSlashSendsContentsOnly) {
  const auto l = discover_files({(root_ / "photos").string() + "/"});
  EXPECT_EQ(rel(l), (std::vector<std::string>{"2024/c.jpg", "a.jpg", "b.jpg"}));
}

TEST_F(FileListTest, SingleFileUsesBaseName) {
  const auto l = discover_files({(root_ / "single.txt").string()});
  EXPECT_EQ(rel(l), (std::vector<std::string>{"single.txt"}));
}

TEST_F(FileListTest, MissingSourceIsAnErrorAndOthersStillListed) {
  const auto l = discover_files({(root_ / "nope").string(), (root_ / "single.txt").string()});
  ASSERT_EQ(l.errors.size(), 1u);
  EXPECT_NE(l.errors[0].message.find("No such file"), std::string::npos);
  EXPECT_EQ(l.errors[0].rel_path, "nope");
  EXPECT_EQ(rel(l), (std::vector<std::string>{"single.txt"}));
}

TEST_F(FileListTest, SymlinkedFolderIsNotDescendedAndFifoIsSkipped) {
  fs::create_directory_symlink(root_ / "photos", root_ / "photos/2024/loop");
  ASSERT_EQ(::mkfifo((root_ / "photos/pipe").c_str(), 0600), 0);
  const auto l = discover_files({(root_ / "photos").string()});
  EXPECT_EQ(rel(l),
            (std::vector<std::string>{"photos/2024/c.jpg", "photos/a.jpg", "photos/b.jpg"}));
  ASSERT_EQ(l.errors.size(), 1u);
  EXPECT_NE(l.errors[0].message.find("not a regular file"), std::string::npos);
  EXPECT_EQ(l.errors[0].rel_path, "photos/pipe");
  // One the filter leaves out anyway is not an error.
  const auto quiet =
      discover_files({(root_ / "photos").string()}, common::PathFilter({}, {"pipe"}));
  EXPECT_TRUE(quiet.errors.empty());
}

TEST_F(FileListTest, FilterAppliesToRelativePathsAndNamedFiles) {
  touch(root_ / "photos/2024/c.tmp");
  const common::PathFilter filter({}, {"*.tmp", "photos/2024/*"});
  const auto l =
      discover_files({(root_ / "photos").string(), (root_ / "single.txt").string()}, filter);
  EXPECT_TRUE(l.errors.empty());
  EXPECT_EQ(rel(l), (std::vector<std::string>{"photos/a.jpg", "photos/b.jpg", "single.txt"}));
  EXPECT_EQ(l.filtered, (std::vector<std::string>{"photos/2024/c.jpg", "photos/2024/c.tmp"}));
  // A file named on the command line is filtered too (by its base name, what it is sent as).
  const auto named =
      discover_files({(root_ / "single.txt").string()}, common::PathFilter({"*.jpg"}, {}));
  EXPECT_TRUE(named.files.empty());
  EXPECT_EQ(named.filtered, std::vector<std::string>{"single.txt"});
}

// --shard: two hosts given the same sources list disjoint files, together every file; the filter
// and a folder entry that cannot be sent concern one host only, a missing source both.
TEST_F(FileListTest, TwoShardsSplitTheSourcesWithoutOverlap) {
  for (int i = 0; i < 40; ++i) touch(root_ / "photos" / ("n" + std::to_string(i) + ".jpg"));
  for (int i = 0; i < 10; ++i) touch(root_ / "photos" / ("n" + std::to_string(i) + ".tmp"));
  ASSERT_EQ(::mkfifo((root_ / "photos/pipe").c_str(), 0600), 0);
  const std::vector<std::string> sources = {
      (root_ / "photos").string(), (root_ / "single.txt").string(), (root_ / "nope").string()};
  const common::PathFilter filter({}, {"*.tmp"});
  const FileList all = discover_files(sources, filter);
  ASSERT_EQ(all.files.size(), 44u);
  std::multiset<std::string> files, filtered;
  std::vector<std::string> pipe_errors;
  for (const uint32_t k : {0u, 1u}) {
    const FileList mine = discover_files(sources, filter, Shard{k, 2});
    for (const auto& f : mine.files) {
      EXPECT_EQ(shard_of(f.rel_path, 2), k) << f.rel_path;
      files.insert(f.rel_path);
    }
    filtered.insert(mine.filtered.begin(), mine.filtered.end());
    EXPECT_EQ(mine.other_shards + mine.files.size() + mine.filtered.size(),
              all.files.size() + all.filtered.size());
    bool missing_reported = false;
    for (const auto& e : mine.errors) {
      if (e.rel_path == "photos/pipe") pipe_errors.push_back(e.rel_path);
      if (e.rel_path == "nope") missing_reported = true;
    }
    EXPECT_TRUE(missing_reported) << "a missing source is every host's to report";
  }
  const std::vector<std::string> want = rel(all);
  EXPECT_EQ(files, std::multiset<std::string>(want.begin(), want.end()));
  EXPECT_EQ(filtered, std::multiset<std::string>(all.filtered.begin(), all.filtered.end()));
  EXPECT_EQ(pipe_errors.size(), 1u) << "a folder entry's error is its shard's host's";
}

}  // namespace
}  // namespace ddft::sender
