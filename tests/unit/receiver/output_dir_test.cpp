#include "receiver/output_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;

TEST(WirePath, AcceptsOrdinaryRelativePaths) {
  for (const char* ok : {"a.txt", "dir/sub/file.bin", ".hidden", "caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9",
                         "a..b", "...", "name with spaces"}) {
    EXPECT_EQ(check_wire_path(ok), "") << ok;
  }
}

TEST(WirePath, RefusesHostileNames) {
  const std::string long_comp(256, 'x');
  const std::string long_path = std::string(4000, 'a') + "/" + std::string(200, 'b');
  const std::vector<std::string> bad = {
      "",          "/etc/passwd", "../x",          "a/../../x", "a/..",     "./a",
      "a//b",      "a/",          std::string("a\0b", 3),   "a\nb",      "a\x1b[31m", "a\x7f",
      long_comp,   long_path,     ".ddft-0123456789abcdef-1.part", "d/.ddft-1-2.part"};
  for (const auto& p : bad) EXPECT_NE(check_wire_path(p), "") << p;
}

TEST(CollisionName, KeepsExtension) {
  EXPECT_EQ(collision_name("report.pdf", 1), "report.1.pdf");
  EXPECT_EQ(collision_name("a.tar.gz", 2), "a.tar.2.gz");
  EXPECT_EQ(collision_name("README", 3), "README.3");
  EXPECT_EQ(collision_name(".bashrc", 1), ".bashrc.1");
}

TEST(TempName, IsRecognised) {
  const auto t = temp_name(0xabcdef, 7);
  EXPECT_TRUE(is_temp_name(t));
  EXPECT_FALSE(is_temp_name("file.part"));
}

class OutputDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("ddft_od_" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "out");
    fs::create_directories(base_ / "outside");
  }
  void TearDown() override { fs::remove_all(base_); }

  OutputDir make(CollisionPolicy p = CollisionPolicy::kRename) {
    return OutputDir((base_ / "out").string(), (base_ / "out/.failed").string(), p);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool write_file(OutputDir& od, const std::string& rel, const std::string& content,
                  std::string* moved = nullptr, std::string* reason_out = nullptr) {
    TempFile f;
    std::string reason;
    if (!od.create_temp(rel, temp_name(1, ++id_), &f, &reason)) {
      if (reason_out) *reason_out = reason;
      return false;
    }
    EXPECT_EQ(::write(f.fd.get(), content.data(), content.size()), ssize_t(content.size()));
    std::string m;
    const bool ok = od.finalize(f, 0644, 1'600'000'000'000'000'000, &m, &reason);
    if (moved) *moved = m;
    if (reason_out) *reason_out = reason;
    if (!ok) {
      FailureRecord rec;
      rec.rel_path = rel;
      rec.file_id = id_;
      rec.expected_size = rec.bytes_received = content.size();
      rec.reason = reason;
      od.fail(f, rec);
    }
    return ok;
  }

  fs::path base_;
  uint32_t id_ = 0;
};

TEST_F(OutputDirTest, CreatesFoldersAndRenamesIntoPlace) {
  auto od = make();
  ASSERT_TRUE(write_file(od, "a/b/c.txt", "hello"));
  EXPECT_EQ(read(base_ / "out/a/b/c.txt"), "hello");
  EXPECT_EQ(fs::last_write_time(base_ / "out/a/b/c.txt").time_since_epoch().count() != 0, true);
  // No temporary file is left behind.
  for (const auto& e : fs::recursive_directory_iterator(base_ / "out")) {
    EXPECT_FALSE(is_temp_name(e.path().filename().string())) << e.path();
  }
}

TEST_F(OutputDirTest, CollisionRenameKeepsOldFile) {
  auto od = make();
  std::string moved;
  ASSERT_TRUE(write_file(od, "r.txt", "one"));
  ASSERT_TRUE(write_file(od, "r.txt", "two", &moved));
  EXPECT_EQ(moved, "r.1.txt");
  ASSERT_TRUE(write_file(od, "r.txt", "three", &moved));
  EXPECT_EQ(moved, "r.2.txt");
  EXPECT_EQ(read(base_ / "out/r.txt"), "three");
  EXPECT_EQ(read(base_ / "out/r.1.txt"), "one");
  EXPECT_EQ(read(base_ / "out/r.2.txt"), "two");
}

TEST_F(OutputDirTest, CollisionOverwriteAndReject) {
  {
    auto od = make(CollisionPolicy::kOverwrite);
    ASSERT_TRUE(write_file(od, "o.txt", "one"));
    ASSERT_TRUE(write_file(od, "o.txt", "two"));
    EXPECT_EQ(read(base_ / "out/o.txt"), "two");
    EXPECT_FALSE(fs::exists(base_ / "out/o.1.txt"));
  }
  auto od = make(CollisionPolicy::kReject);
  std::string reason;
  EXPECT_FALSE(write_file(od, "o.txt", "three", nullptr, &reason));
  EXPECT_NE(reason.find("same name"), std::string::npos);
  EXPECT_EQ(read(base_ / "out/o.txt"), "two");  // the old file is untouched
  // The rejected file is kept in the failed folder, not lost.
  int kept = 0;
  for (const auto& e : fs::directory_iterator(base_ / "out/.failed")) {
    if (e.path().extension() != ".json") {
      EXPECT_EQ(read(e.path()), "three");
      ++kept;
    }
  }
  EXPECT_EQ(kept, 1);
}

TEST_F(OutputDirTest, SymlinkInTheWayIsRefused) {
  auto od = make();
  fs::create_directory_symlink(base_ / "outside", base_ / "out/link");
  std::string reason;
  EXPECT_FALSE(write_file(od, "link/evil.txt", "x", nullptr, &reason));
  EXPECT_NE(reason.find("symlink"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(base_ / "outside"));
}

TEST_F(OutputDirTest, FailedFolderCannotBeWrittenInto) {
  auto od = make();
  std::string reason;
  EXPECT_FALSE(write_file(od, ".failed/planted.json", "x", nullptr, &reason));
  EXPECT_NE(reason.find("failed-files folder"), std::string::npos);
}

TEST_F(OutputDirTest, FailWritesRecordWithMissingRanges) {
  auto od = make();
  TempFile f;
  std::string reason;
  ASSERT_TRUE(od.create_temp("dir/part.bin", temp_name(9, 3), &f, &reason));
  ASSERT_EQ(::write(f.fd.get(), "abc", 3), 3);
  FailureRecord rec;
  rec.rel_path = "dir/part.bin";
  rec.session = 9;
  rec.file_id = 3;
  rec.expected_size = 100;
  rec.bytes_received = 3;
  rec.missing = {{3, 100}};
  rec.missing_ranges_total = 1;
  rec.reason = "incomplete";
  const std::string where = od.fail(f, rec);
  ASSERT_FALSE(where.empty());
  const std::string json = read(where);
  EXPECT_NE(json.find("\"name\": \"dir/part.bin\""), std::string::npos);
  EXPECT_NE(json.find("\"missing_ranges\": [[3, 100]]"), std::string::npos);
  EXPECT_NE(json.find("\"reason\": \"incomplete\""), std::string::npos);
  EXPECT_FALSE(fs::exists(base_ / "out/dir/part.bin"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(base_ / "out/.failed")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 2u);  // the partial data and its record
}

TEST_F(OutputDirTest, StartupErrorsAreOneLine) {
  try {
    OutputDir od((base_ / "missing").string(), (base_ / "missing/.failed").string(),
                 CollisionPolicy::kRename);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be used"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace ddft::receiver
