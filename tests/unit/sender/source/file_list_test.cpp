#include "sender/source/file_list.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;

class FileListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "photos/2024");
    touch(root_ / "photos/b.jpg");
    touch(root_ / "photos/a.jpg");
    touch(root_ / "photos/2024/c.jpg");
    touch(root_ / "single.txt");
  }
  static void touch(const fs::path& p) { std::ofstream(p) << "x"; }
  testing::ScratchDir scratch_{"fl"};
  fs::path root_ = scratch_.path();
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

// --symlinks on a real tree: a link to a file outside, a link to a folder outside, a link that
// leads nowhere, a link that leads to itself, and a link back up the tree (a loop).
class SymlinkTest : public FileListTest {
 protected:
  void SetUp() override {
    FileListTest::SetUp();
    fs::create_directories(root_ / "outside/deeper");
    touch(root_ / "outside/x.txt");
    touch(root_ / "outside/deeper/y.txt");
    fs::create_symlink(root_ / "single.txt", root_ / "photos/file_link");
    fs::create_directory_symlink(root_ / "outside", root_ / "photos/dir_link");
    fs::create_symlink(root_ / "nowhere", root_ / "photos/dangling");
    fs::create_symlink("self", root_ / "photos/self");
    fs::create_directory_symlink("..", root_ / "photos/2024/loop");
  }
  FileList list(SymlinkMode mode) {
    return discover_files({(root_ / "photos").string()}, {}, {}, mode);
  }
  static std::vector<std::string> rels(const std::vector<SkippedLink>& v) {
    std::vector<std::string> out;
    for (const auto& l : v) out.push_back(l.rel_path);
    std::sort(out.begin(), out.end());
    return out;
  }
  static std::vector<std::string> rels(const std::vector<SourceError>& v) {
    std::vector<std::string> out;
    for (const auto& e : v) out.push_back(e.rel_path);
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::vector<std::string> real_ = {"photos/2024/c.jpg", "photos/a.jpg", "photos/b.jpg"};
  const std::vector<std::string> links_ = {"photos/2024/loop", "photos/dangling", "photos/dir_link",
                                           "photos/file_link", "photos/self"};
};

TEST_F(SymlinkTest, SkipNamesEveryLinkOnceAndSendsNoneOfThem) {
  const FileList l = list(SymlinkMode::kSkip);
  EXPECT_EQ(rel(l), real_);
  EXPECT_TRUE(l.errors.empty());
  EXPECT_TRUE(l.followed_links.empty());
  ASSERT_EQ(rels(l.skipped_links), links_);
  for (const auto& s : l.skipped_links) {
    EXPECT_NE(s.message.find("skipping symbolic link '" + (root_ / s.rel_path).string() + "'"),
              std::string::npos)
        << s.message;
    EXPECT_NE(s.message.find("--symlinks skip"), std::string::npos) << s.message;
  }
  // The default is skip.
  EXPECT_EQ(rels(discover_files({(root_ / "photos").string()}).skipped_links), links_);
}

TEST_F(SymlinkTest, ErrorMakesEachLinkAFailureAndSendsTheRest) {
  const FileList l = list(SymlinkMode::kError);
  EXPECT_EQ(rel(l), real_);
  EXPECT_TRUE(l.skipped_links.empty());
  ASSERT_EQ(rels(l.errors), links_);
  for (const auto& e : l.errors) {
    EXPECT_NE(
        e.message.find("cannot send '" + (root_ / e.rel_path).string() + "': a symbolic link"),
        std::string::npos)
        << e.message;
  }
}

TEST_F(SymlinkTest, FollowSendsLinkedFilesAndFoldersOnceAndStopsTheLoop) {
  const FileList l = list(SymlinkMode::kFollow);
  EXPECT_EQ(rel(l), (std::vector<std::string>{"photos/2024/c.jpg", "photos/a.jpg", "photos/b.jpg",
                                              "photos/dir_link/deeper/y.txt",
                                              "photos/dir_link/x.txt", "photos/file_link"}));
  // Read from where the links led when the list was made.
  const fs::path canonical_root = fs::canonical(root_);
  for (const auto& f : l.files) {
    if (f.rel_path == "photos/file_link") {
      EXPECT_EQ(f.path, (canonical_root / "single.txt").string());
    }
    if (f.rel_path == "photos/dir_link/x.txt") {
      EXPECT_EQ(f.path, (canonical_root / "outside/x.txt").string());
    }
  }
  // Leading nowhere (missing, or to itself): an error each.
  ASSERT_EQ(rels(l.errors), (std::vector<std::string>{"photos/dangling", "photos/self"}));
  EXPECT_NE(l.errors[0].message.find("leads nowhere"), std::string::npos) << l.errors[0].message;
  // The loop back up to photos: walked once, the second way named.
  ASSERT_EQ(rels(l.skipped_links), std::vector<std::string>{"photos/2024/loop"});
  EXPECT_NE(l.skipped_links[0].message.find("is sent already as 'photos'"), std::string::npos)
      << l.skipped_links[0].message;
  ASSERT_EQ(l.followed_links.size(), 2u);
  std::vector<std::string> followed = l.followed_links;
  std::sort(followed.begin(), followed.end());
  EXPECT_EQ(followed[0], "following symbolic link '" + (root_ / "photos/dir_link").string() +
                             "' to folder '" + (canonical_root / "outside").string() + "'");
  EXPECT_EQ(followed[1], "following symbolic link '" + (root_ / "photos/file_link").string() +
                             "' to '" + (canonical_root / "single.txt").string() + "'");
}

// A folder both in the tree and behind a link is sent under its own name, wherever the link is.
TEST_F(SymlinkTest, FollowSendsAFolderUnderItsOwnNameBeforeALinkToIt) {
  fs::create_directories(root_ / "photos/zz");
  touch(root_ / "photos/zz/z.jpg");
  fs::create_directory_symlink(root_ / "photos/zz", root_ / "photos/2024/alias");
  const FileList l = list(SymlinkMode::kFollow);
  const auto names = rel(l);
  EXPECT_NE(std::find(names.begin(), names.end(), "photos/zz/z.jpg"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "photos/2024/alias/z.jpg"), names.end());
  const auto skipped = rels(l.skipped_links);
  EXPECT_NE(std::find(skipped.begin(), skipped.end(), "photos/2024/alias"), skipped.end());
}

// A link to a file the filter leaves out, or another shard's, is not this host's to name.
TEST_F(SymlinkTest, FilterAndShardDecideWhoNamesALink) {
  const FileList filtered =
      discover_files({(root_ / "photos").string()}, common::PathFilter({}, {"file_link"}), {});
  auto names = rels(filtered.skipped_links);
  EXPECT_EQ(std::find(names.begin(), names.end(), "photos/file_link"), names.end());
  EXPECT_EQ(names.size(), links_.size() - 1);
  std::multiset<std::string> both;
  for (const uint32_t k : {0u, 1u}) {
    for (const auto& s :
         discover_files({(root_ / "photos").string()}, {}, Shard{k, 2}).skipped_links) {
      both.insert(s.rel_path);
    }
  }
  EXPECT_EQ(both, std::multiset<std::string>(links_.begin(), links_.end()));
}

TEST(SymlinkMode, NamesParseBack) {
  for (const SymlinkMode m : {SymlinkMode::kSkip, SymlinkMode::kFollow, SymlinkMode::kError}) {
    SymlinkMode back = SymlinkMode::kSkip;
    ASSERT_TRUE(parse_symlink_mode(symlink_mode_name(m), &back));
    EXPECT_EQ(back, m);
  }
  SymlinkMode m = SymlinkMode::kFollow;
  EXPECT_FALSE(parse_symlink_mode("Follow", &m));
  EXPECT_EQ(m, SymlinkMode::kFollow);
}

}  // namespace
}  // namespace ddft::sender
