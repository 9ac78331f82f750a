// The assembler follows the senders' sessions: a sender's new session fails its old one's files
// in flight and ignores its stragglers, another sender's session fails nothing, --max-senders
// refuses one more, the final heartbeat (or silence) ends a session, a silence of three
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

// The id both sessions of a restarted sender give (its --state-dir's).
constexpr uint64_t kSenderId = 0x5e5e;

TEST_P(AssemblerTest, NewSessionFailsTheOldOnesFilesAndIgnoresItsStragglers) {
  FakeSender a(21);
  FakeSender b(22);
  const std::string content = pattern(5000, 11);
  auto a_data = a.data(1, content);
  feed(a.sender_info(kSenderId, {0}));
  feed(a.announce(1, "a.bin", content.size()));
  feed(a_data[0]);
  feed(b.sender_info(kSenderId, {0}));  // the sender restarted
  feed(a_data[1]);                      // a straggler of the old session
  feed(b.file(1, "b.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/b.bin") == content);
  EXPECT_FALSE(fs::exists(base_ / "out/a.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]),
              JsonHas("reason",
                      "sender restarted (new session 0000000000000016 of sender "
                      "0000000000005e5e)"));
  EXPECT_GE(asm_->counters().other_session, 1u);
}

TEST_P(AssemblerTest, NewSessionLetsTheOldOnesFinishedFilesBeWritten) {
  FakeSender a(24);
  FakeSender b(25);
  const std::string content = pattern(5000, 12);
  // a.bin came whole, end included, but no poll() yet: its writes and sync are still in flight
  // (a receiver behind a slow disk) when the sender restarts.
  feed(a.sender_info(kSenderId, {0}));
  feed(a.file(1, "a.bin", content));
  feed(a.announce(2, "cut.bin", content.size()));
  feed(a.data(2, content)[0]);
  feed(b.sender_info(kSenderId, {0}));
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
  feed(a.sender_info(kSenderId, {0}));
  feed(a.announce(1, "a.bin", old_content.size()));
  feed(a_data);
  feed(b.sender_info(kSenderId, {0}));
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

// Two senders, neither with an id, send files of the same ids at once: each is its own session.
TEST_P(AssemblerTest, TwoSendersAtOnceDeliverEveryFileAndFailNothingOfEachOther) {
  FakeSender a(41);
  FakeSender b(42);
  const std::string one = pattern(150'000, 1);
  const std::string two = pattern(120'000, 2);
  auto a_data = a.data(1, one);
  auto b_data = b.data(1, two);
  feed(a.heartbeat(false));
  feed(a.announce(1, "a/one.bin", one.size()));
  feed(b.heartbeat(false));
  feed(b.announce(1, "b/two.bin", two.size()));
  for (size_t i = 0; i < std::max(a_data.size(), b_data.size()); ++i) {
    if (i < a_data.size()) feed(a_data[i]);
    if (i < b_data.size()) feed(b_data[i]);
  }
  feed(b.end(1, two));
  feed(a.end(1, one));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/a/one.bin") == one);
  EXPECT_TRUE(read_file(base_ / "out/b/two.bin") == two);
  EXPECT_EQ(asm_->counters().files_passed, 2u);
  EXPECT_TRUE(records().empty());
  EXPECT_EQ(asm_->counters().other_session, 0u);
  EXPECT_EQ(asm_->senders().size(), 2u);
  // The metrics' per-sender counts: a sender without an id is known by its session.
  const auto& by_sender = asm_->counters().senders;
  ASSERT_EQ(by_sender.count("session-0000000000000029"), 1u);
  EXPECT_EQ(by_sender.at("session-0000000000000029").passed, 1u);
  EXPECT_EQ(by_sender.at("session-000000000000002a").bytes, two.size());
}

// Sender A restarts mid-file while B's file is in flight: only A's file fails.
TEST_P(AssemblerTest, ASenderStartingAnewFailsOnlyItsOwnFileInFlight) {
  FakeSender a(43);
  FakeSender b(44);
  FakeSender a2(45);
  const std::string content = pattern(50'000, 3);
  auto a_data = a.data(1, content);
  auto b_data = b.data(1, content);
  feed(a.sender_info(kSenderId, {0}));
  feed(a.announce(1, "a.bin", content.size()));
  feed(b.heartbeat(false));
  feed(b.announce(1, "b.bin", content.size()));
  feed(a_data[0]);
  feed(b_data[0]);
  feed(a2.sender_info(kSenderId, {0}));  // A again, a new session
  for (size_t i = 1; i < b_data.size(); ++i) feed(b_data[i]);
  feed(b.end(1, content));
  feed(a2.file(1, "a.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/b.bin") == content);
  EXPECT_TRUE(read_file(base_ / "out/a.bin") == content) << "A's new session sent it whole";
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]),
              AllOf(JsonHas("name", "a.bin"), JsonHas("session", "000000000000002b"),
                    JsonHas("reason", HasSubstr("sender restarted (new session "
                                                "000000000000002d of sender 0000000000005e5e)"))));
  const auto& by_sender = asm_->counters().senders;
  ASSERT_EQ(by_sender.count("0000000000005e5e"), 1u) << "both of A's sessions, under its id";
  EXPECT_EQ(by_sender.at("0000000000005e5e").passed, 1u);
  EXPECT_EQ(by_sender.at("0000000000005e5e").failed, 1u);
}

// A sender with no id is known by its session: a new session of it is another sender, and the
// old one's file fails once its lane is silent for --file-timeout.
TEST_P(AssemblerTest, ASenderWithoutAnIdThatStartsAnewFailsItsOldFileOnceSilent) {
  FakeSender a(46);
  FakeSender a2(47);
  const std::string content = pattern(5000, 4);
  feed(a.announce(1, "cut.bin", content.size()));
  feed(a.data(1, content)[0]);
  feed(a2.file(1, "next.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/next.bin") == content);
  EXPECT_TRUE(records().empty()) << "nothing says the first session is over yet";
  clock_.advance(std::chrono::seconds(6));
  asm_->poll();  // it times out
  settle();
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]), AllOf(JsonHas("name", "cut.bin"),
                                        JsonHas("reason", HasSubstr("no packet for 5.0 s"))));
}

// --max-senders 2: a third sender is refused and named, at most once a minute, and counted; once
// one of the two is quiet, the third takes its place.
TEST_P(AssemblerTest, ASenderBeyondMaxSendersIsRefusedAndNamedUntilAPlaceFrees) {
  cfg_.max_senders = 2;
  build();
  LogCapture log;
  FakeSender a(51);
  FakeSender b(52);
  FakeSender c(53);
  feed(a.heartbeat(false));
  feed(b.heartbeat(false));
  feed(c.sender_info(0xc, {0}));
  feed(c.file(1, "c.bin", "refused"));
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/c.bin"));
  EXPECT_EQ(log.count("Warn: sender 000000000000000c (session 0000000000000035) refused: "
                      "--max-senders 2 reached (2 live, none quiet)"),
            1u)
      << log.text();
  EXPECT_EQ(asm_->counters().senders_refused, 1u);
  // b goes on; a falls silent for 3 heartbeats and gives way.
  clock_.advance(std::chrono::seconds(2));
  feed(b.heartbeat(false));
  clock_.advance(std::chrono::seconds(2));
  feed(b.heartbeat(false));
  feed(c.file(2, "c2.bin", "taken"));
  settle();
  EXPECT_EQ(read_file(base_ / "out/c2.bin"), "taken");
  EXPECT_THAT(log.text(), HasSubstr("Info: session 0000000000000033: 0 file(s) passed"));
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
