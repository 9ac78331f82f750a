#include "receiver/delivery/output_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/scratch_fs.hpp"
#include "unit/receiver/delivery/origin_sample.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::JsonHas;
using ddft::testing::JsonText;
using ddft::testing::read_file;
using ::testing::HasSubstr;

TEST(WirePath, AcceptsOrdinaryRelativePaths) {
  for (const char* ok : {"a.txt", "dir/sub/file.bin", ".hidden", "caf\xc3\xa9/r\xc3\xa9sum\xc3\xa9",
                         "a..b", "...", "name with spaces"}) {
    EXPECT_EQ(check_wire_path(ok), std::nullopt) << ok;
  }
}

TEST(WirePath, RefusesHostileNames) {
  const std::string long_comp(256, 'x');
  const std::string long_path = std::string(4000, 'a') + "/" + std::string(200, 'b');
  const std::vector<std::string> bad = {"",
                                        "/etc/passwd",
                                        "../x",
                                        "a/../../x",
                                        "a/..",
                                        "./a",
                                        "a//b",
                                        "a/",
                                        std::string("a\0b", 3),
                                        "a\nb",
                                        "a\x1b[31m",
                                        "a\x7f",
                                        long_comp,
                                        long_path,
                                        ".ddft-0123456789abcdef-1.part",
                                        "d/.ddft-1-2.part"};
  for (const auto& p : bad) EXPECT_NE(check_wire_path(p).value_or(""), "") << p;
}

TEST(CollisionName, KeepsExtension) {
  EXPECT_EQ(collision_name("report.pdf", 1), "report.1.pdf");
  EXPECT_EQ(collision_name("a.tar.gz", 2), "a.tar.2.gz");
  EXPECT_EQ(collision_name("README", 3), "README.3");
  EXPECT_EQ(collision_name(".bashrc", 1), ".bashrc.1");
}

class OutputDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(base_ / "out");
    fs::create_directories(base_ / "outside");
  }

  OutputDir make(CollisionPolicy p = CollisionPolicy::kRename) {
    return OutputDir((base_ / "out").string(), (base_ / "out/.failed").string(), p);
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
      rec.file.path = rel;
      rec.file.file_id = id_;
      rec.file.size = rec.bytes_received = content.size();
      rec.reason = reason;
      EXPECT_NE(od.fail(f, rec), "") << "the failure record could not be written";
    }
    return ok;
  }

  testing::ScratchDir scratch_{"od"};
  fs::path base_ = scratch_.path();
  uint32_t id_ = 0;
};

TEST_F(OutputDirTest, CreatesFoldersAndRenamesIntoPlace) {
  auto od = make();
  ASSERT_TRUE(write_file(od, "a/b/c.txt", "hello"));
  EXPECT_EQ(read_file(base_ / "out/a/b/c.txt"), "hello");
  EXPECT_EQ(fs::last_write_time(base_ / "out/a/b/c.txt").time_since_epoch().count() != 0, true);
  // No temporary file is left behind.
  for (const auto& e : fs::recursive_directory_iterator(base_ / "out")) {
    EXPECT_FALSE(is_temp_name(e.path().filename().string())) << e.path();
  }
}

TEST_F(OutputDirTest, AChannelsFilesLandInItsOwnFolder) {
  auto od = make();
  od.map_channel("alarms", (base_ / "outside").string());
  ASSERT_TRUE(write_file(od, "alarms/a/b.txt", "urgent"));
  ASSERT_TRUE(write_file(od, "bulk/c.txt", "bulk"));
  ASSERT_TRUE(write_file(od, "alarms.txt", "not a channel's"));
  EXPECT_EQ(read_file(base_ / "outside/a/b.txt"), "urgent");
  EXPECT_EQ(read_file(base_ / "out/bulk/c.txt"), "bulk");
  EXPECT_EQ(read_file(base_ / "out/alarms.txt"), "not a channel's");
  EXPECT_FALSE(fs::exists(base_ / "out/alarms"));
  EXPECT_EQ(od.final_path("alarms/a/b.txt"), (base_ / "outside/a/b.txt").string());
  EXPECT_EQ(od.final_path("bulk/c.txt"), (base_ / "out/bulk/c.txt").string());
}

TEST_F(OutputDirTest, AChannelsFolderIsRefusedWhereItWouldMixWithAnother) {
  auto od = make();
  const auto refusal = [&](const std::string& name, const fs::path& path) {
    try {
      od.map_channel(name, path.string());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  fs::create_directories(base_ / "outside/sub");
  EXPECT_THAT(refusal("x", base_ / "out/.failed"), HasSubstr("inside the output folder"));
  EXPECT_THAT(refusal("x", base_ / "out"), HasSubstr("inside the output folder or holds it"));
  EXPECT_THAT(refusal("x", base_ / "missing"), HasSubstr("cannot open it"));
  EXPECT_EQ(refusal("x", base_ / "outside"), "");
  EXPECT_THAT(refusal("y", base_ / "outside/sub"), HasSubstr("channel x's folder"));
  EXPECT_THAT(refusal("x", base_ / "outside/sub"), HasSubstr("channel x's folder"));
  // A failed-files folder outside the output folder.
  fs::create_directories(base_ / "out2");
  OutputDir other((base_ / "out2").string(), (base_ / "failed2").string(),
                  CollisionPolicy::kRename);
  try {
    other.map_channel("x", (base_ / "failed2").string());
    ADD_FAILURE() << "the failed-files folder was taken as a channel's";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("failed-files folder"));
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
  EXPECT_EQ(read_file(base_ / "out/r.txt"), "three");
  EXPECT_EQ(read_file(base_ / "out/r.1.txt"), "one");
  EXPECT_EQ(read_file(base_ / "out/r.2.txt"), "two");
}

TEST_F(OutputDirTest, CollisionOverwriteAndReject) {
  {
    auto od = make(CollisionPolicy::kOverwrite);
    ASSERT_TRUE(write_file(od, "o.txt", "one"));
    ASSERT_TRUE(write_file(od, "o.txt", "two"));
    EXPECT_EQ(read_file(base_ / "out/o.txt"), "two");
    EXPECT_FALSE(fs::exists(base_ / "out/o.1.txt"));
  }
  auto od = make(CollisionPolicy::kReject);
  std::string reason;
  EXPECT_FALSE(write_file(od, "o.txt", "three", nullptr, &reason));
  EXPECT_NE(reason.find("same name"), std::string::npos);
  EXPECT_EQ(read_file(base_ / "out/o.txt"), "two");  // the old file is untouched
  // The rejected file is kept in the failed folder, not lost.
  int kept = 0;
  for (const auto& e : fs::directory_iterator(base_ / "out/.failed")) {
    if (e.path().extension() != ".json") {
      EXPECT_EQ(read_file(e.path()), "three");
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
  rec.file.path = "dir/part.bin";
  rec.file.session = 9;
  rec.file.file_id = 3;
  rec.file.size = 100;
  rec.bytes_received = 3;
  rec.missing = {{3, 100}};
  rec.missing_ranges_total = 1;
  rec.reason = "incomplete";
  const std::string where = od.fail(f, rec);
  ASSERT_FALSE(where.empty());
  const std::string json = read_file(where);
  EXPECT_THAT(json, JsonHas("name", "dir/part.bin"));
  EXPECT_THAT(json, JsonHas("missing_ranges", JsonText("[[3, 100]]")));
  EXPECT_THAT(json, JsonHas("reason", "incomplete"));
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

// --sink null without --output: no folder at all. Files go to /dev/null, the replay state is
// never found (kept in memory by its owner), and a failure writes no record anywhere.
TEST_F(OutputDirTest, NullSinkWithoutAFolderTouchesNothing) {
  EXPECT_THROW(OutputDir("", "", CollisionPolicy::kRename), std::runtime_error);
  OutputDir od("", "", CollisionPolicy::kRename, /*null_sink=*/true);
  od.lock_exclusive();
  EXPECT_FALSE(od.has_records());
  std::optional<std::string> state;
  std::string reason;
  EXPECT_TRUE(od.read_state(kSessionStateName, &state, &reason)) << reason;
  EXPECT_EQ(state, std::nullopt);
  EXPECT_TRUE(od.write_state(kSessionStateName, "x", &reason));
  TempFile f;
  ASSERT_TRUE(od.create_temp("a/b.txt", temp_name(1, 1), &f, &reason)) << reason;
  EXPECT_EQ(::write(f.fd.get(), "data", 4), 4);
  FailureRecord rec;
  rec.file.path = "a/b.txt";
  rec.reason = "lost";
  EXPECT_EQ(od.fail(f, rec), "");
  EXPECT_FALSE(f.fd);
  EXPECT_TRUE(od.recover_leftovers().empty());
  // Refusals still apply.
  TempFile bad;
  EXPECT_FALSE(od.create_temp("../x", temp_name(1, 2), &bad, &reason));
  // With a folder, records are written there.
  EXPECT_TRUE(OutputDir((base_ / "out").string(), (base_ / "out/.failed").string(),
                        CollisionPolicy::kRename, true)
                  .has_records());
}

// ---- The origin: what is written beside a file so that a crash can still name it. ----

enum class FsKind { kTempFolder, kTmpfs, kRamfs };

std::string fs_kind_name(const ::testing::TestParamInfo<FsKind>& info) {
  switch (info.param) {
    case FsKind::kTempFolder:
      return "TempFolder";
    case FsKind::kTmpfs:
      return "Tmpfs";
    case FsKind::kRamfs:
      return "Ramfs";
  }
  return "unknown";
}

// The output folder on a file system of each kind: the temporary folder (ext4 here), a tmpfs
// (user xattrs since Linux 6.6) and a ramfs (no user xattrs at all: the origin goes into a
// sidecar). The mounts need root; without it those cases are skipped.
class OriginFsTest : public ::testing::TestWithParam<FsKind> {
 protected:
  void SetUp() override {
    fs::path top = scratch_.path();
    if (GetParam() != FsKind::kTempFolder) {
      top /= "mnt";
      fs::create_directory(top);
      mount_ = std::make_unique<testing::ScopedMount>(
          top, GetParam() == FsKind::kTmpfs ? "tmpfs" : "ramfs");
      if (!mount_->mounted()) GTEST_SKIP() << mount_->skip_reason();
    }
    root_ = top / "out";
    fs::create_directory(root_);
    xattrs_ = testing::has_user_xattrs(root_);
    // The premise of the ramfs case: that file system refuses user xattrs.
    if (GetParam() == FsKind::kRamfs) {
      ASSERT_FALSE(xattrs_);
    }
    holes_ = reports_holes();
    od_ = std::make_unique<OutputDir>(root_.string(), (root_ / ".failed").string(),
                                      CollisionPolicy::kRename);
  }
  void TearDown() override { od_.reset(); }

  // Whether the file system tells holes from data (SEEK_HOLE), probed with a sparse file.
  bool reports_holes() const {
    const fs::path probe = root_ / ".hole-probe";
    common::UniqueFd fd(::open(probe.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_EQ(::pwrite(fd.get(), "x", 1, 1 << 20), 1);
    const bool holes = ::lseek(fd.get(), 0, SEEK_HOLE) == 0;
    fs::remove(probe);
    return holes;
  }

  TempFile create(const std::string& rel, const Origin& o) {
    TempFile f;
    std::string reason;
    EXPECT_TRUE(od_->create_temp(rel, temp_name(o.file.session, o.file.file_id), &f, &reason, &o))
        << reason;
    return f;
  }
  static std::string sidecar_name(uint64_t session, uint32_t id) {
    const std::string t = temp_name(session, id);
    return t.substr(0, t.size() - 5) + ".meta";
  }
  // The origin's text beside file `file` of folder `dir`: its xattr, or the sidecar of
  // (session, id). "" when there is none.
  std::string origin_text(const fs::path& dir, const std::string& file, uint64_t session,
                          uint32_t id) const {
    if (xattrs_) {
      int err = 0;
      return testing::get_xattr(dir / file, kOriginXattr, &err);
    }
    const fs::path side = dir / sidecar_name(session, id);
    return fs::exists(side) ? testing::read_file(side) : "";
  }
  std::vector<fs::path> failed_files(const std::string& ext) const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(root_ / ".failed")) {
      if ((e.path().extension() == ".json") == (ext == ".json")) out.push_back(e.path());
    }
    return out;
  }

  testing::ScratchDir scratch_{"origin"};
  std::unique_ptr<testing::ScopedMount> mount_;
  fs::path root_;
  bool xattrs_ = false;
  bool holes_ = false;
  std::unique_ptr<OutputDir> od_;
};

TEST_P(OriginFsTest, CreateTempWritesTheOriginBesideTheFile) {
  const Origin o = sample_origin("d/e/sub file.bin", 0x1234, 5, 1000);
  TempFile f = create(o.file.path, o);
  ASSERT_TRUE(f.fd);
  const fs::path dir = root_ / "d/e";
  ASSERT_TRUE(fs::exists(dir / temp_name(0x1234, 5)));
  int err = 0;
  const std::string x = testing::get_xattr(dir / temp_name(0x1234, 5), kOriginXattr, &err);
  if (xattrs_) {
    EXPECT_EQ(x, format_origin(o));
    EXPECT_TRUE(f.sidecar.empty());
    EXPECT_FALSE(fs::exists(dir / sidecar_name(0x1234, 5)));
  } else {
    EXPECT_EQ(err, EOPNOTSUPP);
    EXPECT_EQ(f.sidecar, sidecar_name(0x1234, 5));
    EXPECT_EQ(testing::read_file(dir / f.sidecar), format_origin(o));
  }
  EXPECT_EQ(origin_text(dir, temp_name(0x1234, 5), 0x1234, 5), format_origin(o));
}

TEST_P(OriginFsTest, ForgetOriginRemovesIt) {
  const Origin o = sample_origin("f.bin", 0x99, 1, 3);
  TempFile f = create(o.file.path, o);
  ASSERT_EQ(origin_text(root_, temp_name(0x99, 1), 0x99, 1), format_origin(o));
  od_->forget_origin(f);
  EXPECT_EQ(origin_text(root_, temp_name(0x99, 1), 0x99, 1), "");
  EXPECT_TRUE(f.sidecar.empty());
  EXPECT_FALSE(fs::exists(root_ / sidecar_name(0x99, 1)));
  EXPECT_TRUE(fs::exists(root_ / temp_name(0x99, 1)));  // the file itself stays
}

TEST_P(OriginFsTest, RenameIntoPlaceSetsRenamedAndKeepsTheDescriptor) {
  const Origin o = sample_origin("r/file.txt", 0x42, 2, 5);
  TempFile f = create(o.file.path, o);
  ASSERT_EQ(::write(f.fd.get(), "hello", 5), 5);
  std::string moved, reason;
  ASSERT_TRUE(od_->rename_into_place(f, &moved, &reason)) << reason;
  EXPECT_TRUE(f.renamed);
  EXPECT_EQ(f.tmp_name, "file.txt");
  EXPECT_EQ(moved, "");
  EXPECT_FALSE(fs::exists(root_ / "r" / temp_name(0x42, 2)));
  EXPECT_EQ(testing::read_file(root_ / "r/file.txt"), "hello");
  // The descriptor is still the file's (a failed folder sync may have to move it away).
  ASSERT_TRUE(f.fd);
  struct stat by_fd {
  }, by_name{};
  ASSERT_EQ(::fstat(f.fd.get(), &by_fd), 0);
  ASSERT_EQ(::stat((root_ / "r/file.txt").c_str(), &by_name), 0);
  EXPECT_EQ(by_fd.st_ino, by_name.st_ino);
  // The origin stays until forget_origin(): the file is not delivered yet.
  EXPECT_EQ(origin_text(root_ / "r", "file.txt", 0x42, 2), format_origin(o));

  // A second file of that name: the first is moved aside under the collision policy.
  const Origin o2 = sample_origin("r/file.txt", 0x42, 3, 3);
  TempFile f2 = create(o2.file.path, o2);
  ASSERT_EQ(::write(f2.fd.get(), "two", 3), 3);
  ASSERT_TRUE(od_->rename_into_place(f2, &moved, &reason)) << reason;
  EXPECT_EQ(moved, "file.1.txt");
  EXPECT_EQ(testing::read_file(root_ / "r/file.txt"), "two");
  EXPECT_EQ(testing::read_file(root_ / "r/file.1.txt"), "hello");
}

TEST_P(OriginFsTest, FlushFilesReturnsZeroForEachFile) {
  std::vector<TempFile> files;
  for (uint32_t i = 0; i < 4; ++i) {
    files.push_back(create("flush/" + std::to_string(i), sample_origin("flush/x", 7, i, 4)));
    ASSERT_EQ(::write(files.back().fd.get(), "data", 4), 4);
  }
  for (bool datasync : {true, false}) {
    EXPECT_EQ(od_->flush_files({&files[0]}, datasync), FlushErrors{0});
    EXPECT_EQ(od_->flush_files({&files[0], &files[1], &files[2], &files[3]}, datasync),
              (FlushErrors{0, 0, 0, 0}));
  }
  EXPECT_EQ(od_->flush_files({}, true), FlushErrors{});
}

TEST_P(OriginFsTest, RecoversALeftoverNamedByItsOrigin) {
  const Origin o = sample_origin("in/some dir/big file.bin", 0x1234abcd, 42, 200000);
  {
    TempFile f = create(o.file.path, o);
    // Data at [0, 8192) and [65536, 69632); the rest never came (the receiver "crashed").
    const std::string a(8192, 'A'), b(4096, 'B');
    ASSERT_EQ(::pwrite(f.fd.get(), a.data(), a.size(), 0), ssize_t(a.size()));
    ASSERT_EQ(::pwrite(f.fd.get(), b.data(), b.size(), 65536), ssize_t(b.size()));
  }
  const auto got = od_->recover_leftovers();
  ASSERT_EQ(got.size(), 1u);
  const Leftover& l = got[0];
  EXPECT_TRUE(l.named);
  EXPECT_EQ(l.file.path, o.file.path);
  EXPECT_EQ(l.temp_path, "in/some dir/" + temp_name(0x1234abcd, 42));
  EXPECT_EQ(l.file.session, 0x1234abcdu);
  EXPECT_EQ(l.file.file_id, 42u);
  EXPECT_EQ(l.file.size, 200000u);
  EXPECT_FALSE(l.data_kept);
  // Where the file system reports holes they are what is missing; where it does not (ramfs) all
  // of the file's length counts as data.
  const std::string ranges = holes_ ? "[[8192, 65536], [69632, 200000]]" : "[[69632, 200000]]";
  EXPECT_EQ(l.bytes_present, holes_ ? 12288u : 69632u);
  EXPECT_EQ(l.missing_text, holes_ ? "8192-65536, 69632-200000" : "69632-200000");
  if (GetParam() != FsKind::kRamfs) {
    EXPECT_TRUE(holes_) << "this file system hides its holes";
  }

  ASSERT_FALSE(l.record.empty());
  const std::string json = testing::read_file(l.record);
  for (const std::string& want :
       {std::string("\"name\": \"in/some dir/big file.bin\""),
        std::string("\"session\": \"000000001234abcd\""), std::string("\"file_id\": 42"),
        std::string("\"expected_size\": 200000"),
        "\"bytes_received\": " + std::to_string(l.bytes_present), "\"missing_ranges\": " + ranges,
        std::string("\"missing_ranges_exact\": false"), std::string("\"verify\": \"B2B\""),
        std::string("\"data_file\": \"\""), std::string("(sender 127.0.0.1:40000)"),
        std::string("the receiver stopped")}) {
    EXPECT_NE(json.find(want), std::string::npos) << want << " not in\n" << json;
  }
  // The data is removed by default, the origin with it: only the record is left.
  EXPECT_FALSE(fs::exists(root_ / "in/some dir" / temp_name(0x1234abcd, 42)));
  EXPECT_FALSE(fs::exists(root_ / "in/some dir" / sidecar_name(0x1234abcd, 42)));
  EXPECT_TRUE(failed_files("data").empty());
  EXPECT_EQ(failed_files(".json").size(), 1u);
  // Nothing is found twice.
  EXPECT_TRUE(od_->recover_leftovers().empty());
}

TEST_P(OriginFsTest, KeepPartialMovesTheLeftoversDataToTheFailedFolder) {
  const Origin o = sample_origin("k/part.bin", 0x77, 9, 100000);
  {
    TempFile f = create(o.file.path, o);
    const std::string a(4096, 'A');
    ASSERT_EQ(::pwrite(f.fd.get(), a.data(), a.size(), 0), ssize_t(a.size()));
  }
  const auto got = od_->recover_leftovers(/*keep_partial=*/true);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].data_kept);
  EXPECT_EQ(got[0].bytes_present, 4096u);
  EXPECT_EQ(got[0].missing_text, "4096-100000");
  const auto data = failed_files("data");
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(testing::read_file(data[0]), std::string(4096, 'A'));
  const std::string json = testing::read_file(got[0].record);
  EXPECT_THAT(json, JsonHas("data_file", data[0].filename().string()));
  EXPECT_FALSE(fs::exists(root_ / "k" / sidecar_name(0x77, 9)));
}

// BUG (minor, reported to the lead): fail() removes the origin xattr of a file it moves to the
// failed folder ("the record says it all now"), but recover_one() closes the leftover's
// descriptor before calling fail(), so with --keep-partial the kept data still carries
// user.ddft.origin naming its session and file id (the sidecar, on ramfs, is removed).
TEST_P(OriginFsTest, KeptLeftoverDataCarriesNoOrigin) {
  const Origin o = sample_origin("k/part.bin", 0x77, 9, 100000);
  {
    TempFile f = create(o.file.path, o);
    ASSERT_EQ(::write(f.fd.get(), "abc", 3), 3);
  }
  ASSERT_EQ(od_->recover_leftovers(/*keep_partial=*/true).size(), 1u);
  const auto data = failed_files("data");
  ASSERT_EQ(data.size(), 1u);
  int err = 0;
  const std::string left = testing::get_xattr(data[0], kOriginXattr, &err);
  EXPECT_NE(err, 0) << "the kept data still has its origin:\n" << left;
  EXPECT_FALSE(fs::exists(root_ / "k" / sidecar_name(0x77, 9)));
}

TEST_P(OriginFsTest, ALeftoverWithoutOriginIsRecordedUnderItsTemporaryName) {
  {
    TempFile f;
    std::string reason;
    ASSERT_TRUE(od_->create_temp("u/old.bin", temp_name(0xaa, 3), &f, &reason)) << reason;
    ASSERT_EQ(::write(f.fd.get(), "xyz", 3), 3);
  }
  const auto got = od_->recover_leftovers();
  ASSERT_EQ(got.size(), 1u);
  const Leftover& l = got[0];
  EXPECT_FALSE(l.named);
  EXPECT_EQ(l.temp_path, "u/" + temp_name(0xaa, 3));
  EXPECT_EQ(l.file.path, l.temp_path);
  EXPECT_EQ(l.file.session, 0xaau);  // from the temporary name
  EXPECT_EQ(l.file.file_id, 3u);
  EXPECT_EQ(l.bytes_present, 3u);
  EXPECT_EQ(l.missing_text, "");
  ASSERT_FALSE(l.record.empty());
  const std::string json = testing::read_file(l.record);
  EXPECT_THAT(json, JsonHas("name", "u/" + temp_name(0xaa, 3)));
  EXPECT_THAT(json, JsonHas("reason", HasSubstr("its origin could not be read")));
  EXPECT_FALSE(fs::exists(root_ / "u" / temp_name(0xaa, 3)));
}

// A leftover without an origin keeps its data in the failed folder: recovery logs "moved to the
// failed folder (record: R)" for an unnamed leftover, so its data must be there. Either keep the
// data (as here) or change the line.
TEST_P(OriginFsTest, ALeftoverWithoutOriginKeepsItsDataAsBefore) {
  {
    TempFile f;
    std::string reason;
    ASSERT_TRUE(od_->create_temp("u/old.bin", temp_name(0xaa, 3), &f, &reason)) << reason;
    ASSERT_EQ(::write(f.fd.get(), "xyz", 3), 3);
  }
  const auto got = od_->recover_leftovers();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].data_kept);
  const auto data = failed_files("data");
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(testing::read_file(data[0]), "xyz");
}

TEST_P(OriginFsTest, ADamagedOriginLeavesTheLeftoverUnnamed) {
  {
    TempFile f;
    std::string reason;
    ASSERT_TRUE(od_->create_temp("bad/o.bin", temp_name(0xbb, 4), &f, &reason)) << reason;
    const std::string junk = "not an origin\n";
    if (xattrs_) {
      ASSERT_EQ(::fsetxattr(f.fd.get(), kOriginXattr, junk.data(), junk.size(), 0), 0);
    } else {
      std::ofstream(root_ / "bad" / sidecar_name(0xbb, 4)) << junk;
    }
  }
  const auto got = od_->recover_leftovers();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].named);
  EXPECT_EQ(got[0].file.session, 0xbbu);
  EXPECT_EQ(got[0].file.file_id, 4u);
  EXPECT_FALSE(fs::exists(root_ / "bad" / sidecar_name(0xbb, 4)));
}

TEST_P(OriginFsTest, TheSweepRemovesOrphanSidecarsAndLeavesTheRestAlone) {
  fs::create_directories(root_ / "s");
  std::ofstream(root_ / "s" / sidecar_name(0x5, 5)) << format_origin(sample_origin("s/a", 5, 5, 1));
  std::ofstream(root_ / "s/.ddft-notes.meta.txt") << "not ours";
  std::ofstream(root_ / "s/keep.part") << "not a temp name";
  // Something under a temporary name in the failed folder (kept data) is not a leftover.
  fs::create_directories(root_ / ".failed");
  std::ofstream(root_ / ".failed" / temp_name(6, 6)) << "kept";
  EXPECT_TRUE(od_->recover_leftovers().empty());
  EXPECT_FALSE(fs::exists(root_ / "s" / sidecar_name(0x5, 5)));
  EXPECT_TRUE(fs::exists(root_ / "s/.ddft-notes.meta.txt"));
  EXPECT_TRUE(fs::exists(root_ / "s/keep.part"));
  EXPECT_TRUE(fs::exists(root_ / ".failed" / temp_name(6, 6)));
}

TEST_P(OriginFsTest, FinishRenamedRecognisesOnlyItsOwnFile) {
  const Origin o = sample_origin("fin/done.bin", 0xfeed, 11, 6);
  {
    TempFile f = create(o.file.path, o);
    ASSERT_EQ(::write(f.fd.get(), "123456", 6), 6);
    std::string moved, reason;
    ASSERT_TRUE(od_->rename_into_place(f, &moved, &reason)) << reason;
  }
  std::string error;
  // Whether finish_renamed() finished the file (false: not ours); a failed sync fails the test.
  const auto finish = [&](const common::FileIdentity& id) {
    bool finished = false;
    EXPECT_TRUE(od_->finish_renamed(id, &finished, &error)) << error;
    return finished;
  };
  // Not ours: another session, another file id, another size, or nothing there.
  EXPECT_FALSE(
      finish(common::FileIdentity{0xbeef, 11, o.file.path, 6, common::VerifyType::kNone, {}}));
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 12, o.file.path, 6, common::VerifyType::kNone, {}}));
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, o.file.path, 7, common::VerifyType::kNone, {}}));
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, "fin/other.bin", 6, common::VerifyType::kNone, {}}));
  EXPECT_FALSE(finish(
      common::FileIdentity{0xfeed, 11, "nowhere/done.bin", 6, common::VerifyType::kNone, {}}));
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, "../escape", 6, common::VerifyType::kNone, {}}));
  EXPECT_EQ(error, "");
  // A symlink under the final name is not followed.
  fs::create_symlink(root_ / "fin/done.bin", root_ / "fin/link.bin");
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, "fin/link.bin", 6, common::VerifyType::kNone, {}}));
  // None of that touched the origin.
  ASSERT_EQ(origin_text(root_ / "fin", "done.bin", 0xfeed, 11), format_origin(o));

  EXPECT_TRUE(
      finish(common::FileIdentity{0xfeed, 11, o.file.path, 6, common::VerifyType::kNone, {}}))
      << error;
  EXPECT_EQ(error, "");
  EXPECT_EQ(origin_text(root_ / "fin", "done.bin", 0xfeed, 11), "");
  EXPECT_FALSE(fs::exists(root_ / "fin" / sidecar_name(0xfeed, 11)));
  EXPECT_EQ(testing::read_file(root_ / "fin/done.bin"), "123456");
  // Once its origin is gone it is an ordinary file: never finished twice.
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, o.file.path, 6, common::VerifyType::kNone, {}}));
}

TEST_P(OriginFsTest, FinishRenamedRefusesAFileOfTheRightNameWithoutItsOrigin) {
  // An operator's file (or one already delivered) under the name the journal gives.
  fs::create_directories(root_ / "fin");
  std::ofstream(root_ / "fin/done.bin") << "123456";
  std::string error;
  // Whether finish_renamed() finished the file (false: not ours); a failed sync fails the test.
  const auto finish = [&](const common::FileIdentity& id) {
    bool finished = false;
    EXPECT_TRUE(od_->finish_renamed(id, &finished, &error)) << error;
    return finished;
  };
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, "fin/done.bin", 6, common::VerifyType::kNone, {}}));
  EXPECT_EQ(error, "");
  // Nor does another file's origin make it ours.
  const Origin other = sample_origin("fin/done.bin", 0xfeed, 12, 6);
  if (xattrs_) {
    const std::string text = format_origin(other);
    ASSERT_EQ(
        ::setxattr((root_ / "fin/done.bin").c_str(), kOriginXattr, text.data(), text.size(), 0), 0);
  } else {
    std::ofstream(root_ / "fin" / sidecar_name(0xfeed, 11)) << format_origin(other);
  }
  EXPECT_FALSE(
      finish(common::FileIdentity{0xfeed, 11, "fin/done.bin", 6, common::VerifyType::kNone, {}}));
  EXPECT_EQ(error, "");
}

INSTANTIATE_TEST_SUITE_P(FileSystems, OriginFsTest,
                         ::testing::Values(FsKind::kTempFolder, FsKind::kTmpfs, FsKind::kRamfs),
                         fs_kind_name);

}  // namespace
}  // namespace ddft::receiver
