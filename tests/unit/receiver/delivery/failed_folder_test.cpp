// The failed folder (failed_folder.hpp) on a scratch output folder: a record written whole with
// the data beside it, its name and path each other's inverse, resolved once, and the halves of
// records a crash cut short removed at start-up.
#include "receiver/delivery/failed_folder.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::JsonHas;
using ddft::testing::read_file;
using ::testing::StartsWith;

class FailedFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_fd_.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_fd_);
    failed_.open((root_ / ".failed").string(), root_.string(), root_fd_.get(), root_fd_.get(),
                 false);
  }
  // A temporary file in the output folder holding `content`.
  TempFile temp(const std::string& name, const std::string& content) {
    TempFile f;
    f.dir.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    f.fd.reset(::openat(f.dir.get(), name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    EXPECT_EQ(::write(f.fd.get(), content.data(), content.size()),
              static_cast<ssize_t>(content.size()));
    f.tmp_name = name;
    return f;
  }
  static FailureRecord record_of(const std::string& path, uint32_t id) {
    FailureRecord r;
    r.file.path = path;
    r.file.session = 0x51;
    r.file.file_id = id;
    r.file.size = 10;
    r.reason = "lost on the link";
    return r;
  }

  testing::ScratchDir scratch_{"ff"};
  fs::path root_ = scratch_.path();
  common::UniqueFd root_fd_;
  FailedFolder failed_;
};

TEST_F(FailedFolderTest, AFailedFilesDataGoesBesideItsWholeRecord) {
  ASSERT_TRUE(failed_.has_records());
  TempFile f = temp(temp_name(0x51, 1), "0123");
  const std::string where = failed_.fail(f, record_of("d/a.bin", 1));
  ASSERT_NE(where, "");
  EXPECT_FALSE(f.fd) << "the descriptor goes with the file";
  EXPECT_FALSE(fs::exists(root_ / temp_name(0x51, 1)));
  const std::string name = failed_.record_name_at(where);
  EXPECT_EQ(failed_.record_path(name), where);
  EXPECT_TRUE(failed_.record_exists(where));
  EXPECT_FALSE(fs::exists(where + ".tmp"));
  EXPECT_EQ(read_file(root_ / ".failed" / name), "0123");
  EXPECT_THAT(read_file(where), JsonHas("data_file", name));
  EXPECT_THAT(read_file(where), JsonHas("reason", "lost on the link"));
}

TEST_F(FailedFolderTest, ARecordIsResolvedOnceAndOnlyInThisFolder) {
  TempFile f = temp(temp_name(0x51, 2), "x");
  const std::string where = failed_.fail(f, record_of("b.bin", 2));
  ASSERT_NE(where, "");
  EXPECT_TRUE(failed_.resolve_record(where, "delivered on resend"));
  EXPECT_THAT(read_file(where), StartsWith("{\n  \"resolved\": \"delivered on resend\",\n"));
  EXPECT_FALSE(failed_.resolve_record(where, "again")) << "resolved already";
  EXPECT_FALSE(failed_.resolve_record((root_ / "elsewhere.json").string(), "x"));
  EXPECT_EQ(failed_.record_name_at((root_ / "b.json").string()), "");
}

TEST_F(FailedFolderTest, ARecordNameFitsAFolderEntryAndHalvesAreRemovedAtStartUp) {
  const std::string name = failed_.record_name(record_of("d/" + std::string(300, 'n'), 3));
  EXPECT_LE(name.size() + std::string(".json.tmp").size(), kNameMax);
  testing::write_file(root_ / ".failed" / "cut.json.tmp", "{\n  \"na");
  testing::write_file(root_ / ".failed" / "whole.json", "{}\n");
  failed_.remove_torn_records();
  EXPECT_FALSE(fs::exists(root_ / ".failed" / "cut.json.tmp"));
  EXPECT_TRUE(fs::exists(root_ / ".failed" / "whole.json"));
}

TEST_F(FailedFolderTest, AFolderNeverOpenedWritesNoRecordAndTheTemporaryFileGoes) {
  FailedFolder none;
  EXPECT_FALSE(none.has_records());
  TempFile f = temp(temp_name(0x51, 4), "data");
  EXPECT_EQ(none.fail(f, record_of("c.bin", 4)), "");
  EXPECT_FALSE(fs::exists(root_ / temp_name(0x51, 4)));
}

}  // namespace
}  // namespace ddft::receiver
