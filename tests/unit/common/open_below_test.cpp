// open_below on a real folder: a file below the root opens; a symbolic link in the file's place,
// or in a folder's on its way, is refused with ELOOP and named, never opened through; the root
// itself may be a link (the operator named it).
#include "common/open_below.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {
namespace fs = std::filesystem;

std::string below_content(const UniqueFd& fd) {
  std::string s(64, '\0');
  const ssize_t n = read_up_to(fd.get(), s.data(), s.size());
  s.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return s;
}

class OpenBelowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "a/b");
    std::ofstream(root_ / "a/b/f.txt") << "listed";
    fs::create_directories(base_ / "elsewhere/b");
    std::ofstream(base_ / "elsewhere/b/f.txt") << "linked to";
    std::ofstream(base_ / "elsewhere/g.txt") << "linked to";
  }
  ddft::testing::ScratchDir scratch_{"below"};
  fs::path base_ = scratch_.path();
  fs::path root_ = base_ / "root";
};

TEST_F(OpenBelowTest, OpensAFileBelowTheRoot) {
  std::string link = "untouched";
  const UniqueFd fd = open_below(root_.string(), "a/b/f.txt", O_RDONLY, &link);
  ASSERT_TRUE(fd) << std::strerror(errno);
  EXPECT_EQ(below_content(fd), "listed");
  EXPECT_EQ(link, "untouched");
  // Open flags stay the caller's, with O_CLOEXEC added.
  EXPECT_NE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(OpenBelowTest, RefusesALinkInTheFilesPlace) {
  fs::remove(root_ / "a/b/f.txt");
  fs::create_symlink(base_ / "elsewhere/g.txt", root_ / "a/b/f.txt");
  std::string link;
  const UniqueFd fd = open_below(root_.string(), "a/b/f.txt", O_RDONLY, &link);
  EXPECT_FALSE(fd);
  EXPECT_EQ(errno, ELOOP);
  EXPECT_EQ(link, (root_ / "a/b/f.txt").string());
}

TEST_F(OpenBelowTest, RefusesALinkInAFoldersPlaceOnTheWay) {
  for (const char* swapped : {"a", "a/b"}) {
    SCOPED_TRACE(swapped);
    fs::remove_all(root_);
    fs::create_directories(root_ / "a/b");
    std::ofstream(root_ / "a/b/f.txt") << "listed";
    fs::remove_all(root_ / swapped);
    fs::create_directory_symlink(
        std::string(swapped) == "a" ? base_ / "elsewhere" : base_ / "elsewhere/b", root_ / swapped);
    ASSERT_TRUE(fs::exists(root_ / "a/b/f.txt")) << "the path leads to the other file";
    std::string link;
    const UniqueFd fd = open_below(root_.string(), "a/b/f.txt", O_RDONLY, &link);
    EXPECT_FALSE(fd);
    EXPECT_EQ(errno, ELOOP);
    EXPECT_EQ(link, (root_ / swapped).string());
  }
}

TEST_F(OpenBelowTest, FollowsALinkThatIsTheRootItself) {
  fs::create_directory_symlink(root_, base_ / "root_link");
  const UniqueFd fd = open_below((base_ / "root_link").string(), "a/b/f.txt", O_RDONLY);
  ASSERT_TRUE(fd) << std::strerror(errno);
  EXPECT_EQ(below_content(fd), "listed");
}

TEST_F(OpenBelowTest, SaysWhyAMissingOrNonFolderComponentFails) {
  std::string link;
  EXPECT_FALSE(open_below(root_.string(), "a/none/f.txt", O_RDONLY, &link));
  EXPECT_EQ(errno, ENOENT);
  EXPECT_FALSE(open_below(root_.string(), "a/b/f.txt/x", O_RDONLY, &link));
  EXPECT_EQ(errno, ENOTDIR);
  EXPECT_FALSE(open_below((base_ / "nowhere").string(), "a/b/f.txt", O_RDONLY, &link));
  EXPECT_EQ(errno, ENOENT);
  EXPECT_TRUE(link.empty());
}

}  // namespace
}  // namespace ddft::common
