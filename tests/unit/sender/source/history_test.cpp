// The sender's state on its host: its id, and its history of files sent, in a real folder.
#include "sender/source/history.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sender/work_item.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;

// A wall clock the test moves (ns since the epoch).
struct FakeWall {
  int64_t ns = int64_t{1'800'000'000} * 1'000'000'000;
  History::WallNs fn() {
    return [this] { return ns; };
  }
  void advance(std::chrono::seconds s) { ns += s.count() * 1'000'000'000; }
};

HistoryEntry entry(uint32_t id, std::string path, int64_t sent_ns) {
  HistoryEntry e;
  e.sender_id = 0xfeed;
  e.file = {0x5e55,
            id,
            std::move(path),
            1000u + id,
            common::VerifyType::kB2B,
            "00112233445566778899aabbccddeeff"};
  e.mtime_ns = 1234;
  e.sent_ns = sent_ns;
  return e;
}

size_t lines_of(const fs::path& p) {
  std::istringstream in(testing::read_file(p));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

class HistoryTest : public ::testing::Test {
 protected:
  std::string state() const { return (dir_.path() / "state").string(); }
  testing::ScratchDir dir_{"history"};
};

TEST(HistoryFormat, RoundTripsEveryFieldAndRefusesDamage) {
  for (const std::string path : {"a.txt", "dir with spaces/q\"uote", "not utf-8 \xff", "x y 1 2"}) {
    HistoryEntry e = entry(7, path, 99);
    HistoryEntry got;
    ASSERT_TRUE(parse_history_entry(format_history_entry(e), &got)) << path;
    EXPECT_EQ(got.sender_id, e.sender_id);
    EXPECT_EQ(got.file, e.file);
    EXPECT_EQ(got.mtime_ns, e.mtime_ns);
    EXPECT_EQ(got.sent_ns, e.sent_ns);
    EXPECT_EQ(got.lane, e.lane);
  }
  for (const int lane : {common::kLaneUnsaid, common::kLaneAll, 0, 63}) {
    HistoryEntry e = entry(7, "l", 99);
    e.lane = lane;
    HistoryEntry got;
    ASSERT_TRUE(parse_history_entry(format_history_entry(e), &got)) << lane;
    EXPECT_EQ(got.lane, lane);
  }
  HistoryEntry none = entry(8, "n", 1);
  none.file.verify = common::VerifyType::kNone;
  none.file.digest.clear();
  HistoryEntry got;
  ASSERT_TRUE(parse_history_entry(format_history_entry(none), &got));
  EXPECT_EQ(got.file, none.file);
  const std::string line = format_history_entry(entry(9, "p", 5));
  for (size_t cut = 0; cut < line.size(); ++cut) {
    EXPECT_FALSE(parse_history_entry(line.substr(0, cut), &got)) << cut;
  }
  EXPECT_FALSE(parse_history_entry("X" + line.substr(1), &got));
  EXPECT_FALSE(parse_history_entry(line + " extra", &got));
}

TEST(HistoryFormat, SenderIdsAreOneToSixteenHexDigitsNotZero) {
  uint64_t id = 0;
  EXPECT_TRUE(parse_sender_id("1", &id));
  EXPECT_EQ(id, 1u);
  EXPECT_TRUE(parse_sender_id("FFFFffffFFFFffff", &id));
  EXPECT_EQ(id, UINT64_MAX);
  for (const char* bad : {"", "0", "0000", "12345678901234567", "xyz", "-1", " 1", "1 "}) {
    EXPECT_FALSE(parse_sender_id(bad, &id)) << bad;
  }
}

TEST_F(HistoryTest, TheSenderIdIsMadeOnceKeptAndReplacedOnlyWhenAsked) {
  const uint64_t first = sender_id_in(state(), std::nullopt);
  EXPECT_NE(first, 0u);
  EXPECT_EQ(sender_id_in(state(), std::nullopt), first) << "kept across runs";
  struct stat st {};
  ASSERT_EQ(::stat(state().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(sender_id_in(state(), 0xabcdefu), 0xabcdefu);
  EXPECT_EQ(sender_id_in(state(), std::nullopt), 0xabcdefu);
  EXPECT_EQ(testing::read_file(fs::path(state()) / kSenderIdFile), "0000000000abcdef\n");
  // A damaged id file stops the sender with one line, and is left for the operator.
  std::ofstream(fs::path(state()) / kSenderIdFile) << "not an id\n";
  try {
    sender_id_in(state(), std::nullopt);
    FAIL() << "a damaged id was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no id"), std::string::npos) << e.what();
  }
}

TEST_F(HistoryTest, ALaterRunReadsWhatEarlierRunsSent) {
  FakeWall wall;
  {
    History h(state(), {}, wall.fn());
    EXPECT_TRUE(h.entries().empty());
    ASSERT_TRUE(h.append(entry(1, "one", wall.ns)));
    ASSERT_TRUE(h.append(entry(2, "two", wall.ns)));
    ASSERT_TRUE(h.sync());
  }
  History again(state(), {}, wall.fn());
  ASSERT_EQ(again.entries().size(), 2u);
  EXPECT_EQ(again.entries()[0].file.path, "one");
  EXPECT_EQ(again.entries()[1].file, entry(2, "two", 0).file);
}

TEST_F(HistoryTest, EntriesPastTheWindowOrTheSizeBoundAreDroppedAtOpening) {
  FakeWall wall;
  HistoryLimits limits;
  limits.keep_for = std::chrono::hours(2);
  {
    History h(state(), limits, wall.fn());
    ASSERT_TRUE(h.append(entry(1, "old", wall.ns)));
    wall.advance(std::chrono::hours(3));
    ASSERT_TRUE(h.append(entry(2, "new", wall.ns)));
  }
  // A half line (a crash mid-write) is dropped too.
  std::ofstream(fs::path(state()) / kHistoryFile, std::ios::app) << "H 00ff 12";
  {
    History h(state(), limits, wall.fn());
    ASSERT_EQ(h.entries().size(), 1u);
    EXPECT_EQ(h.entries()[0].file.path, "new");
  }
  EXPECT_EQ(lines_of(fs::path(state()) / kHistoryFile), 1u) << "rewritten without them";
  // Past the size bound the oldest go.
  limits.keep_for = std::chrono::hours(100);
  limits.max_bytes = 1 << 20;
  {
    History h(state(), limits, wall.fn());
    const std::string pad(200, 'p');
    for (uint32_t id = 3; id < 10'000; ++id) ASSERT_TRUE(h.append(entry(id, pad, wall.ns)));
  }
  History h(state(), limits, wall.fn());
  EXPECT_LE(fs::file_size(fs::path(state()) / kHistoryFile), limits.max_bytes);
  ASSERT_FALSE(h.entries().empty());
  EXPECT_EQ(h.entries().back().file.file_id, 9'999u);
  EXPECT_GT(h.entries().front().file.file_id, 3u);
}

// Two runs on one host at once: one appends while the other opens and rewrites; every line
// appended ends whole in the file under the name.
TEST_F(HistoryTest, AppendsOfOneRunSurviveAnotherRunsRewrite) {
  FakeWall wall;
  HistoryLimits limits;
  limits.keep_for = std::chrono::hours(1);
  {
    // Over 1 MiB of them: enough for an opening to rewrite the file.
    History seed(state(), limits, wall.fn());
    const std::string old = "old/" + std::string(4000, 'o');
    for (uint32_t id = 1; id <= 300; ++id) ASSERT_TRUE(seed.append(entry(id, old, wall.ns)));
  }
  wall.advance(std::chrono::hours(2));  // every entry so far is past the window
  const int64_t now = wall.ns;
  History writer(state(), limits, [now] { return now; });
  std::jthread appender([&] {
    for (uint32_t id = 1000; id < 3000; ++id) ASSERT_TRUE(writer.append(entry(id, "new", now)));
  });
  for (int i = 0; i < 20; ++i) {
    // Another run opens it: the "old" lines (if any are left) go, the file is rewritten.
    History other(state(), limits, [now] { return now; });
  }
  appender.join();
  History last(state(), limits, [now] { return now; });
  size_t fresh = 0;
  for (const HistoryEntry& e : last.entries()) fresh += e.file.path == "new";
  EXPECT_EQ(fresh, 2000u);
  EXPECT_EQ(lines_of(fs::path(state()) / kHistoryFile), 2000u);
}

TEST_F(HistoryTest, TheRecorderAppendsEachFileSentWithItsSessionAndDigest) {
  FakeWall wall;
  History h(state(), {}, wall.fn());
  HistoryRecorder rec(h, 0xbeef, common::VerifyType::kB2B, wall.fn());
  rec.session_started(0x77);
  FileMeta meta;
  meta.file_id = 4;
  meta.rel_path = "d/f.bin";
  meta.size = 12;
  meta.mtime_ns = 55;
  common::Digest d;
  d.type = common::VerifyType::kB2B;
  d.size = 16;
  d.bytes[0] = 0xAB;
  rec.file_sent_via(meta, d, 3);
  rec.session_finished(0x77);
  EXPECT_EQ(rec.errors(), 0u);
  History again(state(), {}, wall.fn());
  ASSERT_EQ(again.entries().size(), 1u);
  const HistoryEntry& e = again.entries()[0];
  EXPECT_EQ(e.sender_id, 0xbeefu);
  EXPECT_EQ(e.file,
            (common::FileIdentity{0x77, 4, "d/f.bin", 12, common::VerifyType::kB2B, d.hex()}));
  EXPECT_EQ(e.mtime_ns, 55);
  EXPECT_EQ(e.sent_ns, wall.ns);
  EXPECT_EQ(e.lane, 3);
}

TEST_F(HistoryTest, TheLatestSentUpToMarkIsReadBackAndSurvivesARewrite) {
  FakeWall wall;
  HistoryLimits limits;
  limits.keep_for = std::chrono::hours(1);
  {
    History h(state(), limits, wall.fn());
    EXPECT_EQ(h.sent_up_to(), 0);
    ASSERT_TRUE(h.append(entry(1, "one", wall.ns)));
    ASSERT_TRUE(h.mark_sent_up_to(500));
    ASSERT_TRUE(h.mark_sent_up_to(900));
    ASSERT_TRUE(h.mark_sent_up_to(700));  // another run's, behind
  }
  {
    History h(state(), limits, wall.fn());
    EXPECT_EQ(h.sent_up_to(), 900);
    ASSERT_EQ(h.entries().size(), 1u);
  }
  // A crash's half line makes the next opening rewrite the file: the mark stays, once.
  std::ofstream(fs::path(state()) / kHistoryFile, std::ios::app) << "W 12";
  {
    History h(state(), limits, wall.fn());
    EXPECT_EQ(h.sent_up_to(), 900);
  }
  EXPECT_EQ(lines_of(fs::path(state()) / kHistoryFile), 2u);
  History h(state(), limits, wall.fn());
  EXPECT_EQ(h.sent_up_to(), 900);
}

}  // namespace
}  // namespace ddft::sender
