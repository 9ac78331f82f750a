#include "sender/operations/manifest.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/json.hpp"
#include "sender/pipeline.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/scoped_tz.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using namespace std::chrono_literals;
using std::chrono::system_clock;

// 2026-11-22 17:20:01.123 UTC.
const system_clock::time_point kTime = system_clock::time_point(1795368001123ms);

using ddft::testing::JsonHas;
using testing::ScopedTz;

TEST(Iso8601Local, MillisecondsAndTheZonesOffset) {
  {
    ScopedTz tz("CET-1");
    EXPECT_EQ(common::iso8601_local(kTime), "2026-11-22T18:20:01.123+01:00");
  }
  {
    ScopedTz tz("EST5");
    EXPECT_EQ(common::iso8601_local(kTime), "2026-11-22T12:20:01.123-05:00");
  }
  {
    ScopedTz tz("IST-5:30");
    EXPECT_EQ(common::iso8601_local(kTime), "2026-11-22T22:50:01.123+05:30");
  }
  {
    ScopedTz tz("UTC0");
    EXPECT_EQ(common::iso8601_local(kTime + 877ms), "2026-11-22T17:20:02.000+00:00");
  }
}

TEST(ManifestLine, ExactlyTheSpecifiedFields) {
  ScopedTz tz("CET-1");
  EXPECT_EQ(
      manifest_line(kTime, 0x0f3c9a7d12e45b60, 3, "a/b.txt", 1048576, common::VerifyType::kB2B,
                    "0x6999CF78", ManifestStatus::kSent, ""),
      R"({"time":"2026-11-22T18:20:01.123+01:00","session":"0f3c9a7d12e45b60","file_id":3,)"
      R"("path":"a/b.txt","size":1048576,"verify":"B2B","key":"0x6999CF78","status":"sent"})");
  EXPECT_EQ(manifest_line(kTime, 0x0f3c9a7d12e45b60, 0, "a/c.txt", 0, common::VerifyType::kB2B, "",
                          ManifestStatus::kFailed, "cannot read '/x/a/c.txt': Permission denied"),
            R"({"time":"2026-11-22T18:20:01.123+01:00","session":"0f3c9a7d12e45b60","file_id":0,)"
            R"("path":"a/c.txt","size":0,"verify":"B2B","key":null,"status":"failed",)"
            R"("reason":"cannot read '/x/a/c.txt': Permission denied"})");
}

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = dir_ / "sent.jsonl"; }
  // Each line parsed by Python's json module and dumped again, ASCII only, keys sorted: what any
  // JSON reader gets from the manifest.
  std::vector<std::string> parsed() const {
    const std::string cmd =
        "python3 -c 'import json,sys\n"
        "for line in open(sys.argv[1], encoding=\"utf-8\"):\n"
        "    print(json.dumps(json.loads(line), sort_keys=True))' " +
        path_.string() + " 2>&1";
    std::FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << out;
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  static FileMeta meta(uint32_t id, const std::string& name, uint64_t size) {
    FileMeta m;
    m.file_id = id;
    m.rel_path = name;
    m.size = size;
    return m;
  }
  static common::Digest digest(uint32_t key) {
    common::Digest d;
    d.size = 16;
    d.bytes[0] = static_cast<uint8_t>(key >> 24);
    d.bytes[1] = static_cast<uint8_t>(key >> 16);
    d.bytes[2] = static_cast<uint8_t>(key >> 8);
    d.bytes[3] = static_cast<uint8_t>(key);
    return d;
  }
  ManifestWriter::WallClock fixed_time() const {
    return [] { return kTime; };
  }

  testing::ScratchDir scratch_{"manifest"};
  fs::path dir_ = scratch_.path();
  fs::path path_;
  common::FakeClock clock_;
};

TEST_F(ManifestTest, EveryFileSentOrFailedIsOneJsonLine) {
  ScopedTz tz("CET-1");
  {
    ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
    m.session_started(0x0f3c9a7d12e45b60);
    m.file_sent(meta(1, "a/b.txt", 1048576), digest(0x6999CF78));
    m.file_failed(meta(0, "a/c.txt", 0), "cannot read '/x/a/c.txt': Permission denied");
    m.file_failed(meta(2, "big.iso", 5000), "sender stopped");
    m.session_finished(0x0f3c9a7d12e45b60);
    EXPECT_EQ(m.errors(), 0u);
  }
  const auto lines = parsed();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(
      lines[0],
      R"({"file_id": 1, "key": "0x6999CF78", "path": "a/b.txt", "session": "0f3c9a7d12e45b60", )"
      R"("size": 1048576, "status": "sent", "time": "2026-11-22T18:20:01.123+01:00", )"
      R"("verify": "B2B"})");
  EXPECT_EQ(
      lines[1],
      R"({"file_id": 0, "key": null, "path": "a/c.txt", "reason": "cannot read '/x/a/c.txt': )"
      R"(Permission denied", "session": "0f3c9a7d12e45b60", "size": 0, "status": "failed", )"
      R"("time": "2026-11-22T18:20:01.123+01:00", "verify": "B2B"})");
  EXPECT_EQ(lines[2],
            R"({"file_id": 2, "key": null, "path": "big.iso", "reason": "sender stopped", )"
            R"("session": "0f3c9a7d12e45b60", "size": 5000, "status": "failed", )"
            R"("time": "2026-11-22T18:20:01.123+01:00", "verify": "B2B"})");
}

// Links left out get a line each: "skipped" (--symlinks skip), or "failed" (--symlinks error in
// the hot folder); one noted before the session starts is written once its session is known.
TEST_F(ManifestTest, LinksLeftOutAreSkippedLinesOfTheirSession) {
  ScopedTz tz("CET-1");
  {
    ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
    m.link_left_out("a/l", "skipping symbolic link '/x/a/l' (to 'b'; --symlinks skip)", false);
    EXPECT_TRUE(read_file(path_).empty()) << "no session yet: kept";
    m.session_started(0x0f3c9a7d12e45b60);
    m.file_sent(meta(1, "a/b", 10), digest(1));
    m.link_left_out("hot/l", "a symbolic link (--symlinks error)", true);
    m.session_finished(0x0f3c9a7d12e45b60);
  }
  const auto lines = parsed();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            R"x({"file_id": 0, "key": null, "path": "a/l", "reason": "skipping symbolic link )x"
            R"x('/x/a/l' (to 'b'; --symlinks skip)", "session": "0f3c9a7d12e45b60", "size": 0, )x"
            R"x("status": "skipped", "time": "2026-11-22T18:20:01.123+01:00", "verify": "B2B"})x");
  EXPECT_NE(lines[1].find(R"("status": "sent")"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(R"x("path": "hot/l", "reason": "a symbolic link (--symlinks error)", )x"
                          R"x("session": "0f3c9a7d12e45b60", "size": 0, "status": "failed")x"),
            std::string::npos)
      << lines[2];
}

TEST_F(ManifestTest, VerifyNoneHasANullKeyAndSha256ItsKey) {
  {
    ManifestWriter m(path_.string(), common::VerifyType::kNone, clock_, fixed_time());
    m.session_started(1);
    m.file_sent(meta(1, "x", 1), {});
  }
  {
    ManifestWriter m(path_.string(), common::VerifyType::kSha256, clock_, fixed_time());
    m.session_started(2);
    m.file_sent(meta(1, "y", 1), digest(0x0000ABCD));
  }
  const auto lines = parsed();
  ASSERT_EQ(lines.size(), 2u);  // appended: the first session's line is kept
  EXPECT_TRUE(lines[0].find(R"("key": null)") != std::string::npos) << lines[0];
  EXPECT_TRUE(lines[0].find(R"("verify": "NONE")") != std::string::npos) << lines[0];
  EXPECT_TRUE(lines[0].find(R"("session": "0000000000000001")") != std::string::npos) << lines[0];
  EXPECT_TRUE(lines[1].find(R"("key": "0x0000ABCD")") != std::string::npos) << lines[1];
  EXPECT_TRUE(lines[1].find(R"("verify": "SHA256")") != std::string::npos) << lines[1];
}

TEST_F(ManifestTest, OddNamesSurvive) {
  {
    ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
    m.session_started(1);
    m.file_sent(meta(1, "quote\"back\\slash", 1), digest(1));
    m.file_sent(meta(2, "new\nline\ttab\x1b[31m", 1), digest(2));
    m.file_sent(meta(3, "caf\xc3\xa9 \xf0\x9f\x93\x81", 1), digest(3));  // é and a folder emoji
    m.file_sent(meta(4, "latin1-\xe9\xff", 1), digest(4));               // not UTF-8
    m.file_failed(meta(0, "x\"y", 0), "cannot read 'x\"y': No such file\nor directory");
  }
  const std::string raw = read_file(path_);
  // One line per file, whatever the names hold.
  EXPECT_EQ(std::count(raw.begin(), raw.end(), '\n'), 5);
  const auto lines = parsed();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find(R"("path": "quote\"back\\slash")"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(R"("path": "new\nline\ttab\u001b[31m")"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(R"("path": "caf\u00e9 \ud83d\udcc1")"), std::string::npos) << lines[2];
  // A byte that is not UTF-8 reads as the code point of the same value.
  EXPECT_NE(lines[3].find(R"("path": "latin1-\u00e9\u00ff")"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find(
                R"("path": "x\"y", "reason": "cannot read 'x\"y': No such file\nor directory")"),
            std::string::npos)
      << lines[4];
}

TEST_F(ManifestTest, APathThatCannotBeOpenedIsRefusedWithOneLine) {
  const std::string missing = (dir_ / "no-such-folder" / "m.jsonl").string();
  try {
    ManifestWriter m(missing, common::VerifyType::kB2B, clock_);
    FAIL() << "opened " << missing;
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open the manifest '" + missing + "': No such file or directory");
  }
  try {
    ManifestWriter m(dir_.string(), common::VerifyType::kB2B, clock_);
    FAIL() << "opened a folder";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open the manifest '" + dir_.string() + "': Is a directory");
  }
}

TEST_F(ManifestTest, AnExistingManifestIsAppendedTo) {
  std::ofstream(path_) << "{\"earlier\":true}\n";
  {
    ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
    m.session_started(1);
    m.file_sent(meta(1, "a", 1), digest(1));
  }
  const auto lines = parsed();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"earlier": true})");
}

TEST_F(ManifestTest, SyncedAtMostOnceASecondAndAtTheEnd) {
  ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
  m.session_started(1);
  for (uint32_t i = 1; i <= 100; ++i) m.file_sent(meta(i, "f", 1), digest(i));  // no time passes
  EXPECT_EQ(m.syncs(), 0u);
  clock_.advance(1s);
  m.file_sent(meta(101, "f", 1), digest(1));
  EXPECT_EQ(m.syncs(), 1u);
  m.file_sent(meta(102, "f", 1), digest(1));
  EXPECT_EQ(m.syncs(), 1u);
  m.session_finished(1);  // the end: what is not synced yet is
  EXPECT_EQ(m.syncs(), 2u);
  m.session_finished(1);  // nothing new: no sync
  EXPECT_EQ(m.syncs(), 2u);
}

TEST_F(ManifestTest, TheHotFolderHasEveryLineSyncedBeforeItRemovesTheFile) {
  ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
  m.sync_each_line(true);
  m.session_started(1);
  for (uint32_t i = 1; i <= 3; ++i) m.file_sent(meta(i, "f", 1), digest(i));  // no time passes
  EXPECT_EQ(m.syncs(), 3u);
}

TEST_F(ManifestTest, ALineThatCannotBeWrittenIsCountedAndTheRestGoesOn) {
  // /dev/full takes the open and refuses every write (ENOSPC).
  ManifestWriter m("/dev/full", common::VerifyType::kB2B, clock_, fixed_time());
  m.session_started(1);
  m.file_sent(meta(1, "a", 1), digest(1));
  m.file_sent(meta(2, "b", 1), digest(2));
  EXPECT_EQ(m.errors(), 2u);
  m.session_finished(1);  // nothing to sync on a device: not an error
  EXPECT_EQ(m.errors(), 2u);
}

TEST_F(ManifestTest, ALineCutShortLeavesTheNextOnALineOfItsOwn) {
  ManifestWriter m(path_.string(), common::VerifyType::kB2B, clock_, fixed_time());
  m.session_started(1);
  m.file_sent(meta(1, "first", 1), digest(1));
  const auto first = fs::file_size(path_);
  // A file size limit just past the first line: the second is cut short (EFBIG then, with
  // SIGXFSZ ignored), the third cannot be written at all.
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit limit = old_limit;
  limit.rlim_cur = first + 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  m.file_sent(meta(2, "second", 1), digest(2));
  m.file_sent(meta(3, "third", 1), digest(3));
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(m.errors(), 2u);
  EXPECT_EQ(fs::file_size(path_), first + 20);
  m.file_sent(meta(4, "fourth", 1), digest(4));
  EXPECT_EQ(m.errors(), 2u);
  // Three lines: the first, the cut one, the fourth; the first and the last parse.
  const std::string raw = read_file(path_);
  std::vector<std::string> lines;
  std::istringstream in(raw);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << raw;
  EXPECT_THAT(lines[0], JsonHas("path", "first"));
  EXPECT_EQ(lines[1].size(), 20u);
  EXPECT_THAT(lines[2], JsonHas("path", "fourth"));
  EXPECT_TRUE(lines[2].starts_with("{\"time\"")) << lines[2];
}

}  // namespace
}  // namespace ddft::sender
