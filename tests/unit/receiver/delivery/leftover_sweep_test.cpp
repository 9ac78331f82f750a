// The start-up sweep (leftover_sweep.hpp) on a scratch output folder: every temporary file an
// earlier run left is recorded once, under the name a claim gives it; scratch files and orphan
// sidecars go; the failed folder is not swept.
#include "receiver/delivery/leftover_sweep.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::JsonHas;
using ddft::testing::read_file;
using ddft::testing::write_file;

class LeftoverSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_fd_.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_fd_);
    failed_.open((root_ / ".failed").string(), root_.string(), root_fd_.get(), root_fd_.get(),
                 false);
  }
  std::vector<Leftover> sweep(const LeftoverClaim& claim = {}) {
    return LeftoverSweep(root_fd_.get(), failed_, /*keep_partial=*/false, claim).run();
  }

  testing::ScratchDir scratch_{"lsw"};
  fs::path root_ = scratch_.path();
  common::UniqueFd root_fd_;
  FailedFolder failed_;
};

TEST_F(LeftoverSweepTest, ATemporaryFileWithoutOriginIsRecordedUnderItsTemporaryName) {
  fs::create_directories(root_ / "a");
  const std::string tmp = temp_name(0xabc, 7);
  write_file(root_ / "a" / tmp, "half");
  const std::vector<Leftover> found = sweep();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].named);
  EXPECT_EQ(found[0].temp_path, "a/" + tmp);
  EXPECT_EQ(found[0].file.session, 0xabcu);
  EXPECT_EQ(found[0].file.file_id, 7u);
  EXPECT_EQ(found[0].bytes_present, 4u);
  EXPECT_TRUE(found[0].data_kept) << "without an origin its data is all there is";
  ASSERT_TRUE(failed_.record_exists(found[0].record));
  EXPECT_THAT(read_file(found[0].record), JsonHas("name", "a/" + tmp));
  EXPECT_TRUE(sweep().empty()) << "recorded once";
}

TEST_F(LeftoverSweepTest, ScratchFilesAndOrphanSidecarsGoAndTheFailedFolderIsLeftAlone) {
  const std::string scratch = ".ddft-0000000000000abc-8.new";
  write_file(root_ / scratch, "");
  write_file(root_ / sidecar_name(temp_name(0xabc, 9)), "ddft-origin=1\n");
  write_file(root_ / ".failed" / temp_name(0xabc, 10), "kept data");
  write_file(root_ / "plain.txt", "mine");
  EXPECT_TRUE(sweep().empty());
  EXPECT_FALSE(fs::exists(root_ / scratch));
  EXPECT_FALSE(fs::exists(root_ / sidecar_name(temp_name(0xabc, 9))));
  EXPECT_TRUE(fs::exists(root_ / ".failed" / temp_name(0xabc, 10)));
  EXPECT_TRUE(fs::exists(root_ / "plain.txt"));
}

TEST_F(LeftoverSweepTest, AClaimNamesTheRecordBeforeItIsWritten) {
  write_file(root_ / temp_name(0xabc, 11), "x");
  std::vector<std::string> claimed;
  const std::vector<Leftover> found = sweep([&](const Leftover& l, const FailureRecord& r) {
    claimed.push_back(l.temp_path);
    EXPECT_EQ(r.file.file_id, 11u);
    return std::string("20260101-000000-claimed");
  });
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(claimed, std::vector<std::string>{temp_name(0xabc, 11)});
  EXPECT_EQ(found[0].record, failed_.record_path("20260101-000000-claimed"));
  EXPECT_TRUE(failed_.record_exists(found[0].record));
}

}  // namespace
}  // namespace ddft::receiver
