// The assembler follows the sender's sessions: a new session fails the old one's files in flight
// and ignores its stragglers, the final heartbeat (or silence) ends a session, a silence of three
// heartbeats is warned, and each session's summary counts its own files.
#include <chrono>
#include <filesystem>
#include <string>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::FakeSender;
using ddft::testing::JsonHas;
using ddft::testing::LogCapture;
using ddft::testing::read_file;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST_P(AssemblerTest, NewSessionFailsTheOldOnesFilesAndIgnoresItsStragglers) {
  FakeSender a(21);
  FakeSender b(22);
  const std::string content = pattern(5000, 11);
  auto a_data = a.data(1, content);
  feed(a.announce(1, "a.bin", content.size()));
  feed(a_data[0]);
  feed(b.heartbeat(false));  // the sender restarted
  feed(a_data[1]);           // a straggler of the old session
  feed(b.file(1, "b.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/b.bin") == content);
  EXPECT_FALSE(fs::exists(base_ / "out/a.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]), JsonHas("reason", HasSubstr("sender restarted")));
  EXPECT_GE(asm_->counters().other_session, 1u);
}

TEST_P(AssemblerTest, NewSessionLetsTheOldOnesFinishedFilesBeWritten) {
  FakeSender a(24);
  FakeSender b(25);
  const std::string content = pattern(5000, 12);
  // a.bin came whole, end included, but no poll() yet: its writes and sync are still in flight
  // (a receiver behind a slow disk) when the sender restarts.
  feed(a.file(1, "a.bin", content));
  feed(a.announce(2, "cut.bin", content.size()));
  feed(a.data(2, content)[0]);
  feed(b.heartbeat(false));
  feed(b.file(1, "b.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/a.bin") == content);
  EXPECT_TRUE(read_file(base_ / "out/b.bin") == content);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);  // only the file that was cut off
  EXPECT_THAT(read_file(recs[0]),
              AllOf(JsonHas("name", "cut.bin"), JsonHas("reason", HasSubstr("sender restarted"))));
  EXPECT_EQ(asm_->counters().files_passed, 2u);
}

TEST_P(AssemblerTest, RestartedSenderReusingIdsLosesNothing) {
  // Session A's file 1 has a write in flight when session B starts and sends its own file 1.
  FakeSender a(31, 1000);
  FakeSender b(32, 1000);
  const std::string old_content = pattern(70'000, 14);  // more than one 64 KiB write block
  const std::string new_content = pattern(3'000, 15);
  auto a_data = a.data(1, old_content);
  a_data.resize(66);
  feed(a.announce(1, "a.bin", old_content.size()));
  feed(a_data);
  feed(b.file(1, "b.bin", new_content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/b.bin") == new_content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const std::string rec = read_file(recs[0]);
  EXPECT_THAT(rec, JsonHas("session", "000000000000001f"));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("sender restarted")));
}

TEST_P(AssemblerTest, SessionSummaryCountsThatSessionsFilesOnly) {
  LogCapture log;
  FakeSender a(26);
  FakeSender b(27);
  feed(a.file(1, "one.bin", pattern(3000, 1)));
  feed(a.file(2, "two.bin", pattern(3000, 2)));
  settle();
  feed(b.heartbeat(false));
  feed(b.file(1, "three.bin", pattern(3000, 3)));
  settle();
  asm_->log_summary();
  const std::string text = log.text();
  EXPECT_NE(
      text.find("session 000000000000001a: 2 file(s) passed, 0 failed, 0 refused, 0 filtered;"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("session 000000000000001b: 1 file(s) passed, 0 failed, 0 refused, 0 filtered;"),
      std::string::npos)
      << text;
}

TEST_P(AssemblerTest, DataWithoutASessionOpenerIsDropped) {
  FakeSender tx(23);
  feed(tx.data(1, "hello"));
  settle();
  EXPECT_EQ(asm_->counters().other_session, 1u);
  EXPECT_EQ(asm_->counters().files_passed, 0u);
}

TEST_P(AssemblerTest, FinalHeartbeatFinishesTheSession) {
  FakeSender tx(28);
  feed(tx.file(1, "a", "abc"));
  feed(tx.heartbeat(true));
  settle();
  EXPECT_TRUE(asm_->session_finished());
}

TEST_P(AssemblerTest, LostFinalHeartbeatStillEndsTheSessionAfterSilence) {
  FakeSender tx(37);
  feed(tx.file(1, "a", "abc"));  // no final heartbeat: all its copies were lost
  settle();
  EXPECT_FALSE(asm_->session_finished());
  clock_.advance(std::chrono::seconds(4));
  EXPECT_FALSE(asm_->session_finished());  // file timeout is 5 s
  clock_.advance(std::chrono::seconds(2));
  EXPECT_TRUE(asm_->session_finished());
}

TEST_P(AssemblerTest, SilenceOfThreeHeartbeatsIsWarnedAndTheResumeLogged) {
  FakeSender tx(59, 1000);
  LogCapture log;
  feed(tx.heartbeat(false));  // interval 1000 ms
  clock_.advance(std::chrono::milliseconds(2900));
  asm_->poll();
  EXPECT_EQ(log.text().find("no packet from sender session"), std::string::npos);
  clock_.advance(std::chrono::milliseconds(200));
  asm_->poll();
  asm_->poll();
  const std::string t = log.text();
  const size_t first = t.find("no packet from sender session 000000000000003b for 3.1 s");
  EXPECT_NE(first, std::string::npos) << t;
  EXPECT_EQ(t.find("no packet from sender session", first + 1), std::string::npos);  // once
  clock_.advance(std::chrono::seconds(2));
  feed(tx.heartbeat(false));
  EXPECT_NE(log.text().find("packets again after 5.1 s of silence"), std::string::npos)
      << log.text();
}

}  // namespace
}  // namespace ddft::receiver
