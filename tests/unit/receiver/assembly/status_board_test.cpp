// The senders' status on the receiver, on a fake clock: a status is taken once per seq, a line is
// logged when a sender crosses a threshold and when it recovers, a silent sender is named after
// three intervals, and the JSON file holds the last statuses whole.
#include "receiver/assembly/status_board.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/json_check.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

common::SenderStatus status_of(uint32_t seq) {
  common::SenderStatus s;
  s.seq = seq;
  s.version = "0.3.0";
  s.lanes_up = 0b11;
  s.watch_size = 1000;
  s.watch_free = 500;
  return s;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class StatusBoardTest : public ::testing::Test {
 protected:
  testing::ScratchDir dir_{"status-board"};
  common::FakeClock clock_;
  std::string json_ = (dir_.path() / "sender-status.json").string();
  StatusBoard board_{clock_, json_, [] { return int64_t{1'795'978'980'000'000'000}; }};
};

TEST_F(StatusBoardTest, TakesEachStatusOnceAndKeepsTheLast) {
  board_.take("00000000000000aa", 1, 2, status_of(1));
  common::SenderStatus later = status_of(2);
  later.queued_files = 7;
  board_.take("00000000000000aa", 1, 2, later);
  // A copy of an older status of the session: dropped.
  board_.take("00000000000000aa", 1, 2, status_of(1));
  auto views = board_.snapshot();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].status.queued_files, 7u);
  EXPECT_EQ(views[0].lanes, 2u);
  EXPECT_EQ(views[0].received_wall_ns, 1'795'978'980'000'000'000);
  // A new session of the sender numbers from 1 again.
  board_.take("00000000000000aa", 2, 2, status_of(1));
  views = board_.snapshot();
  EXPECT_EQ(views[0].session, 2u);
  EXPECT_EQ(views[0].status.queued_files, 0u);
}

TEST_F(StatusBoardTest, LogsTheBacklogWhenItBeginsAndWhenItDrains) {
  testing::LogCapture log;
  common::SenderStatus s = status_of(1);
  s.queued_files = 40;
  s.queued_bytes = 4000;
  s.oldest_wait_s = 30;
  board_.take("aa", 1, 2, s);
  EXPECT_THAT(log.text(), Not(HasSubstr("backing up")));
  s.seq = 2;
  s.oldest_wait_s = common::kBacklogWarnS;
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.count("Warn: sender aa: the low side is backing up: 40 file(s) (4,000 bytes) "
                      "waiting, the oldest for 600 s"),
            1u)
      << log.text();
  s.seq = 3;
  s.oldest_wait_s = 900;
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.count("backing up"), 1u);  // once, while it lasts
  s.seq = 4;
  s.queued_files = 0;
  s.oldest_wait_s = 0;
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.count("Info: sender aa: the low side's backlog has drained"), 1u) << log.text();
}

TEST_F(StatusBoardTest, LogsReadFailuresLanesAndDisks) {
  testing::LogCapture log;
  common::SenderStatus s = status_of(1);
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.text(), "");
  s.seq = 2;
  s.read_failures = 3;
  s.lanes_up = 0b01;
  s.watch_free = 50;
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.count("Warn: sender aa: 3 file(s) it could not read since its last status (3 "
                      "since it started)"),
            1u)
      << log.text();
  EXPECT_EQ(log.count("Warn: sender aa: lane(s) 1 down, 1 of its 2 lanes up"), 1u);
  EXPECT_EQ(log.count("Warn: sender aa: the file system of its watched folder is filling: 5.0% "
                      "free (50 of 1,000 bytes)"),
            1u);
  // Nothing new: no line; a quarter of an hour without a new failure: recovered.
  s.seq = 3;
  clock_.advance(kReadQuietS - seconds(1));
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.count("could not read"), 1u);
  s.seq = 4;
  s.lanes_up = 0b11;
  s.watch_free = 500;
  clock_.advance(seconds(1));
  board_.take("aa", 1, 2, s);
  EXPECT_EQ(log.count("Info: sender aa: no file it could not read for 900 s (3 since it started)"),
            1u)
      << log.text();
  EXPECT_EQ(log.count("Info: sender aa: all its 2 lane(s) up"), 1u);
  EXPECT_EQ(log.count("Info: sender aa: the file system of its watched folder has room again"), 1u);
}

TEST_F(StatusBoardTest, NamesASenderSilentForThreeIntervals) {
  testing::LogCapture log;
  board_.take("aa", 1, 1, status_of(1));
  clock_.advance(seconds(3 * common::kStatusIntervalS));
  board_.poll(clock_.now());
  EXPECT_EQ(log.count("no status"), 0u);
  clock_.advance(seconds(1));
  board_.poll(clock_.now());
  board_.poll(clock_.now());
  EXPECT_EQ(log.count("Warn: sender aa: no status for 31 s (3 intervals of 10 s)"), 1u)
      << log.text();
  EXPECT_TRUE(board_.snapshot()[0].missing);
  EXPECT_THAT(slurp(json_), HasSubstr("\"alarms\": [\"status_missing\"]"));
  board_.take("aa", 1, 1, status_of(2));
  EXPECT_EQ(log.count("Info: sender aa: its status comes again, after 31 s"), 1u);
  EXPECT_FALSE(board_.snapshot()[0].missing);
}

TEST_F(StatusBoardTest, ASenderThatEndedItsSessionIsForgottenNotMissing) {
  testing::LogCapture log;
  board_.take("aa", 1, 1, status_of(1));
  board_.take("bb", 2, 1, status_of(1));
  board_.ended(7);  // no such session: nothing goes
  ASSERT_EQ(board_.snapshot().size(), 2u);
  board_.ended(1);
  const auto views = board_.snapshot();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].sender, "bb");
  EXPECT_THAT(slurp(json_), Not(HasSubstr("\"aa\"")));
  clock_.advance(seconds(60));
  board_.poll(clock_.now());
  EXPECT_EQ(log.count("Warn: sender aa"), 0u);
  EXPECT_EQ(log.count("Warn: sender bb: no status"), 1u) << log.text();
}

TEST_F(StatusBoardTest, WritesTheLastStatusesAsJson) {
  common::SenderStatus s = status_of(1);
  s.queued_files = 2;
  s.channels = {{"urgent", 2, 20, 4}};
  board_.take("00000000000000aa", 0x1234, 2, s);
  board_.take("session-00000000000000bb", 0x5678, 1, status_of(1));
  const std::string text = slurp(json_);
  std::string error;
  const auto doc = testing::JsonChecker::parse_object(text, &error);
  ASSERT_TRUE(doc) << error << "\n" << text;
  EXPECT_THAT(text,
              HasSubstr("\"sender\": \"00000000000000aa\", \"session\": \"0000000000001234\""));
  EXPECT_THAT(text, HasSubstr("\"channels\": [{\"name\": \"urgent\", \"queued_files\": 2"));
  EXPECT_THAT(text, HasSubstr("\"sender\": \"session-00000000000000bb\""));
  EXPECT_FALSE(std::filesystem::exists(json_ + ".new"));
}

TEST_F(StatusBoardTest, ACantWriteFileIsOneErrorLine) {
  testing::LogCapture log;
  StatusBoard board(clock_, (dir_.path() / "missing" / "sender-status.json").string());
  board.take("aa", 1, 1, status_of(1));
  board.take("aa", 1, 1, status_of(2));
  EXPECT_EQ(log.count("Error: cannot write the senders' status to"), 1u) << log.text();
  EXPECT_EQ(board.snapshot().size(), 1u);
}

}  // namespace
}  // namespace ddft::receiver
