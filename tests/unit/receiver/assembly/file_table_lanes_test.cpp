// The file table with two lanes (tests/unit/receiver/assembly/table_fixture.hpp): striped files,
// a lane's next file, held list entries, lanes of other hosts.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "receiver/assembly/file_table.hpp"
#include "receiver/link/session_gate.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using Datagram = std::vector<uint8_t>;
using ddft::testing::JsonHas;
using ddft::testing::JsonText;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;
using FileTableLanesTest = FileTableFixture;

TEST_F(FileTableLanesTest, AStripedFileWaitsForEveryLanesEndAndIsVerifiedOnce) {
  const std::string content = lane_content(10000, 3);
  // Lane 0 carries bytes 0-6000 and ends; lane 1 is slower.
  feed(0, lane_[0].striped_announce(1, "big.bin", content.size()));
  feed_all(0, lane_[0].data(1, content, 0, 0, 6000));
  feed(0, lane_[0].end(1, content));
  later(3);  // past the end's grace: lane 1 still holds the file open
  EXPECT_EQ(table_->size(), 1u);
  EXPECT_EQ(counters_.files_failed, 0u);
  feed(1, lane_[1].striped_announce(1, "big.bin", content.size()));
  feed_all(1, lane_[1].data(1, content, 0, 6000));
  feed(1, lane_[1].end(1, content));
  settle();
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_TRUE(read_file(base_ / "big.bin") == content);
}

TEST_F(FileTableLanesTest, AStripedFileMissingALanesDataFailsOnceEveryLaneHasEnded) {
  const std::string content = lane_content(10000, 5);
  feed(0, lane_[0].striped_announce(1, "holed.bin", content.size()));
  feed(1, lane_[1].striped_announce(1, "holed.bin", content.size()));
  feed_all(0, lane_[0].data(1, content, 0, 0, 4000));
  feed(0, lane_[0].end(1, content));
  feed(1, lane_[1].end(1, content));  // lane 1's data (4000-10000) was lost
  later(3);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u);
  const std::string rec = record();
  EXPECT_THAT(rec, JsonHas("missing_ranges", JsonText("[[4000, 10000]]")));
  EXPECT_THAT(rec, JsonHas("lane", "striped"));
}

TEST_F(FileTableLanesTest, ANextFileSupersedesOnlyTheFilesOfItsOwnLane) {
  const std::string a = lane_content(5000, 1);
  const std::string b = lane_content(3000, 2);
  feed(0, lane_[0].announce(1, "a.bin", a.size()));
  feed_all(0, lane_[0].data(1, a, 0, 0, 2000));  // the rest (and the end) lost on lane 0
  feed_all(1, lane_[1].file(2, "b.bin", b));     // lane 1 goes on to its next file
  later(3);
  settle();
  EXPECT_EQ(counters_.files_failed, 0u) << "lane 1's file is no sign that lane 0's is over";
  EXPECT_EQ(counters_.files_passed, 1u);
  feed(0, lane_[0].announce(3, "c.bin", 10));  // lane 0 goes on: a.bin lost its end
  later(3);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u);
  const std::string rec = record();
  EXPECT_THAT(rec, JsonHas("lane", 0));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("lane 0, 127.0.0.1:5000")));
  EXPECT_THAT(rec, JsonHas("missing_ranges", JsonText("[[2000, 5000]]")));
}

// Channels interleave their files on one lane: another channel's file announced mid-file closes
// nothing; the same channel's next file does, as without channels.
TEST_F(FileTableLanesTest, AnotherChannelsFileOnTheLaneSupersedesNothing) {
  const std::string bulk = lane_content(5000, 3);
  const std::string urgent = lane_content(800, 4);
  feed(0, lane_[0].channel_announce(1, "bulk/big.bin", bulk.size()));
  feed_all(0, lane_[0].data(1, bulk, 0, 0, 2000));
  // The urgent channel's file, whole, in the middle of the bulk one.
  feed(0, lane_[0].channel_announce(2, "urgent/alarm.txt", urgent.size()));
  feed_all(0, lane_[0].data(2, urgent));
  feed(0, lane_[0].end(2, urgent));
  later(3);
  settle();
  EXPECT_EQ(counters_.files_failed, 0u) << "the bulk file is not over";
  EXPECT_EQ(counters_.files_passed, 1u);
  feed_all(0, lane_[0].data(1, bulk, 0, 2000));
  feed(0, lane_[0].end(1, bulk));
  settle();
  EXPECT_EQ(counters_.files_passed, 2u);
  EXPECT_EQ(read_file(base_ / "bulk/big.bin"), bulk);
  EXPECT_EQ(read_file(base_ / "urgent/alarm.txt"), urgent);
  // The bulk channel's next file, while file 3 of it misses data: it supersedes it.
  feed(0, lane_[0].channel_announce(3, "bulk/next.bin", 5000));
  feed_all(0, lane_[0].data(3, bulk, 0, 0, 1000));
  feed(0, lane_[0].channel_announce(4, "bulk/after.bin", 10));
  later(3);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u);
  EXPECT_THAT(record(), JsonHas("name", "bulk/next.bin"));
}

// Without the channel flag, the same interleaving ends the first file: as a receiver takes a
// sender of one channel, which never interleaves.
TEST_F(FileTableLanesTest, AFileAnnouncedMidFileWithoutChannelsSupersedesTheOneBefore) {
  const std::string bulk = lane_content(5000, 3);
  feed(0, lane_[0].announce(1, "bulk/big.bin", bulk.size()));
  feed_all(0, lane_[0].data(1, bulk, 0, 0, 2000));
  feed(0, lane_[0].announce(2, "urgent/alarm.txt", 10));
  later(3);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u);
  EXPECT_THAT(record(), JsonHas("name", "bulk/big.bin"));
}

// A session's ids wrap from 2^32 - 1 to 1: the lane's next file is still a later one, so the
// file before it that lost its end fails after the grace, not after the silence timeout.
TEST_F(FileTableLanesTest, ANextFileAfterTheIdWrapStillSupersedesTheOneBefore) {
  constexpr uint32_t kLast = UINT32_MAX;
  const std::string a = lane_content(5000, 1);
  const std::string b = lane_content(3000, 2);
  feed(0, lane_[0].announce(kLast, "a.bin", a.size()));
  feed_all(0, lane_[0].data(kLast, a, 0, 0, 2000));  // the rest (and the end) lost
  feed_all(0, lane_[0].file(common::next_file_id(kLast), "b.bin", b));
  later(3);
  settle();
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(counters_.files_failed, 1u) << "file 1 comes after file 2^32 - 1 on its lane";
  EXPECT_THAT(record(), JsonHas("missing_ranges", JsonText("[[2000, 5000]]")));
}

TEST_F(FileTableLanesTest, AListEntryForAnotherLaneWaitsForThatLane) {
  const std::string late = lane_content(3000, 4);
  const std::string lost = lane_content(2000, 6);
  const std::string own = lane_content(1000, 8);
  // Lane 0's list overtakes lane 1's files: neither is named yet.
  feed(0, lane_[0].file_list({{7, "late.bin", late, common::VerifyType::kB2B, false, 1},
                              {8, "lost.bin", lost, common::VerifyType::kB2B, false, 1}}));
  later(1);
  settle();
  EXPECT_EQ(counters_.files_unannounced, 0u);
  EXPECT_TRUE(table_->holds_list_entries(kSession));
  // One arrives after all; the list of lane 1 names a file of its own that never came.
  feed_all(1, lane_[1].file(7, "late.bin", late));
  feed(1, lane_[1].file_list({{9, "own.bin", own, common::VerifyType::kB2B, false, 1}}));
  settle();
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(counters_.files_unannounced, 1u) << "lane 1's own list names its lost file at once";
  // Lane 1 ends: the file its list never vouched for and that never came is named now.
  feed(1, lane_[1].heartbeat(true, 1000, 1, 2));
  later(2);
  settle();
  EXPECT_EQ(counters_.files_unannounced, 2u);
  EXPECT_FALSE(table_->holds_list_entries(kSession));
  EXPECT_THAT(records(),
              UnorderedElementsAre(AllOf(JsonHas("name", "lost.bin"), JsonHas("lane", 1)),
                                   AllOf(JsonHas("name", "own.bin"), JsonHas("lane", 1))));
}

// A list entry still waiting for its lane when the sender starts a new session is settled under
// the session that listed it: the new session's ids start afresh and must not inherit it.
TEST_F(FileTableLanesTest, AHeldListEntryIsSettledUnderItsOwnSessionWhenANewOneStarts) {
  const std::string lost = lane_content(2000, 6);
  feed(0, lane_[0].file_list({{8, "lost.bin", lost, common::VerifyType::kB2B, false, 1}}));
  ASSERT_TRUE(table_->holds_list_entries(kSession));
  // What the assembler does when the sender starts a new session.
  constexpr uint64_t kNext = 0x6262;
  table_->fail_receiving(kSession, "sender restarted (new session)");
  table_->end_session(kSession);
  gate_ = std::make_unique<SenderSession>(cfg_, clock_, counters_, kNext, 2);
  table_->start_session(kNext, gate_.get());
  settle();
  EXPECT_FALSE(table_->holds_list_entries(kSession));
  EXPECT_EQ(counters_.files_unannounced, 1u);
  const std::string rec = record();
  EXPECT_THAT(rec, JsonHas("name", "lost.bin"));
  EXPECT_THAT(rec, JsonHas("session", fmt::format("{:016x}", kSession)));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("the session ended before that lane brought it")));
  // The new session's own file 8 is a file of its own, delivered.
  testing::FakeSender next{kNext};
  const std::string fresh = lane_content(1500, 2);
  feed(0, next.heartbeat(false, 1000, 0, 2));
  feed_all(0, next.file(8, "fresh.bin", fresh));
  later(5);
  settle();
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(counters_.files_unannounced, 1u);
  EXPECT_THAT(records(), Not(Contains(JsonHas("session", fmt::format("{:016x}", kNext)))));
}

// The receiver stopping settles them too, and says so.
TEST_F(FileTableLanesTest, AHeldListEntryIsRecordedWhenTheReceiverStops) {
  const std::string lost = lane_content(2000, 6);
  feed(0, lane_[0].file_list({{8, "lost.bin", lost, common::VerifyType::kB2B, false, 1}}));
  ASSERT_TRUE(table_->holds_list_entries(kSession));
  table_->fail_receiving("receiver stopped");
  table_->settle_lists(/*receiver_stopping=*/true);
  settle();
  EXPECT_FALSE(table_->holds_list_entries(kSession));
  EXPECT_EQ(counters_.files_unannounced, 1u);
  EXPECT_THAT(record(), JsonHas("reason", HasSubstr("(lane 1, 127.0.0.1:5001; the receiver "
                                                    "stopped before that lane brought it)")));
}

// A receiver that starts after the sender: the files the list names from before its first
// packet were sent while it was not receiving, and their records say so; a file lost after it
// joined keeps the reason of a loss.
TEST_F(FileTableLanesTest, AListedFileSentBeforeTheReceiverJoinedIsNamedWithThatReason) {
  constexpr uint64_t kLate = 0x7373;
  table_->end_session(kSession);
  gate_ = std::make_unique<SenderSession>(cfg_, clock_, counters_, kLate, 2);
  table_->start_session(kLate, gate_.get());
  testing::FakeSender late{kLate};
  *late.seq() = 500;  // the receiver's first packet of the session is the sender's 500th
  const std::string early = lane_content(1000, 3);
  const std::string seen = lane_content(1500, 4);
  const std::string lost = lane_content(700, 5);
  feed(0, late.heartbeat(false, 1000, 0, 2));
  feed_all(0, late.file(5, "seen.bin", seen));
  feed(0, late.file_list({{4, "early.bin", early, common::VerifyType::kB2B, false, 0},
                          {5, "seen.bin", seen, common::VerifyType::kB2B, false, 0},
                          {6, "lost.bin", lost, common::VerifyType::kB2B, false, 0}}));
  later(5);
  settle();
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(counters_.files_unannounced, 2u);
  const std::vector<std::string> recs = records();
  EXPECT_THAT(recs,
              Contains(AllOf(JsonHas("name", "early.bin"),
                             JsonHas("reason", HasSubstr("sent before its first packet of "
                                                         "the session (packet 500 of the "
                                                         "lane), while it was not receiving")))));
  EXPECT_THAT(recs,
              Contains(AllOf(JsonHas("name", "lost.bin"),
                             JsonHas("reason", "never announced: all its packets were lost"))))
      << "lost.bin came after the receiver joined";
}

// A striped file that only the list names (every packet of it lost) is recorded once every lane
// is gone, and its record says it was striped, as a striped file that failed says.
TEST_F(FileTableLanesTest, AStripedFileOnlyTheListNamesIsRecordedAsStriped) {
  const std::string gone = lane_content(5000, 10);
  feed(0, lane_[0].file_list(
              {{11, "gone.bin", gone, common::VerifyType::kB2B, false, common::kLaneAll}}));
  later(1);
  settle();
  EXPECT_EQ(counters_.files_unannounced, 0u) << "lane 1 may still bring it";
  feed(0, lane_[0].heartbeat(true, 1000, 0, 2));
  feed(1, lane_[1].heartbeat(true, 1000, 1, 2));
  later(2);
  settle();
  EXPECT_EQ(counters_.files_unannounced, 1u);
  const std::string rec = record();
  EXPECT_THAT(rec, JsonHas("name", "gone.bin"));
  EXPECT_THAT(rec, JsonHas("lane", "striped"));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("striped over every lane")));
}

TEST_F(FileTableLanesTest, AListEntryOfALaneNoLaneHereCarriesIsLeftToItsReceiver) {
  // The sender drives three lanes; this receiver's two carry its lanes 0 and 1.
  const std::string other = lane_content(1000, 9);
  feed(0, lane_[0].file_list({{5, "other.bin", other, common::VerifyType::kB2B, false, 2}}));
  later(1);
  EXPECT_FALSE(table_->holds_list_entries(kSession));
  EXPECT_EQ(counters_.listed_elsewhere, 1u);
  EXPECT_EQ(counters_.files_unannounced, 0u);
}

// The sender drives three lanes to this host, whose receiver listens on two: the third lane's
// files can come from nowhere else, so the list's entries for them are recorded, not dropped.
TEST_F(FileTableLanesTest, AListEntryOfALaneToThisHostThatNoListenTakesIsRecorded) {
  feed(0, lane_[0].heartbeat(false, 1000, 0, 3));
  feed(0, lane_[0].sender_info(0xabc, {0, 0, 0}));
  EXPECT_EQ(gate_->sender_id(), 0xabcu);
  const std::string unheard = lane_content(1000, 9);
  feed(0, lane_[0].file_list({{5, "unheard.bin", unheard, common::VerifyType::kB2B, false, 2}}));
  later(1);
  settle();
  EXPECT_FALSE(table_->holds_list_entries(kSession));
  EXPECT_EQ(counters_.listed_elsewhere, 0u);
  EXPECT_EQ(counters_.files_unannounced, 1u);
  const std::string rec = record();
  EXPECT_THAT(rec, JsonHas("name", "unheard.bin"));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("the sender's lane 2 goes to this receiver's host, "
                                               "but no --listen here takes it")));
}

// The same lane on another host is left to that host's receiver: logged and counted.
TEST_F(FileTableLanesTest, AListEntryOfALaneToAnotherHostIsLoggedAndLeftToItsReceiver) {
  testing::LogCapture log;
  feed(0, lane_[0].heartbeat(false, 1000, 0, 3));
  feed(0, lane_[0].sender_info(0xabc, {0, 0, 2}));
  const std::string other = lane_content(1000, 9);
  feed(0, lane_[0].file_list({{5, "other.bin", other, common::VerifyType::kB2B, false, 2}}));
  later(1);
  settle();
  EXPECT_FALSE(table_->holds_list_entries(kSession));
  EXPECT_EQ(counters_.listed_elsewhere, 1u);
  EXPECT_EQ(counters_.files_unannounced, 0u);
  EXPECT_NE(log.text().find("\"other.bin\": left to the receiver of the sender's lane 2 (another "
                            "host)"),
            std::string::npos)
      << log.text();
}

TEST_F(FileTableLanesTest, AFileStripedOverMoreLanesThanThisReceiverHasIsRefused) {
  // The sender drives three lanes; this receiver has two of them (the third ends elsewhere).
  feed(0, lane_[0].heartbeat(false, 1000, 0, 3));
  const std::string content = lane_content(5000, 2);
  feed(0, lane_[0].striped_announce(1, "split.bin", content.size()));
  feed_all(0, lane_[0].data(1, content, 0, 0, 2000));
  settle();
  EXPECT_EQ(counters_.files_refused, 1u);
  EXPECT_TRUE(table_->empty());
  EXPECT_THAT(record(), JsonHas("reason", HasSubstr("striped across receiver hosts")));
  // A whole file of the same session is taken as ever.
  feed_all(1, lane_[1].file(2, "whole.bin", content));
  settle();
  EXPECT_EQ(counters_.files_passed, 1u);
}

TEST_F(FileTableLanesTest, TheGateKnowsEachLanesStateAndWhenTheSessionIsOver) {
  EXPECT_EQ(gate_->lane_of_sender(1), 1);
  EXPECT_EQ(gate_->lane_of_sender(2), -1);
  EXPECT_TRUE(gate_->all_lanes_named());
  feed(0, lane_[0].heartbeat(true, 1000, 0, 2));
  clock_.advance(std::chrono::seconds(2));
  EXPECT_TRUE(gate_->final_due(0, clock_.now()));
  EXPECT_FALSE(gate_->gone(1, clock_.now()));
  EXPECT_FALSE(gate_->finished(true)) << "lane 1 is still sending";
  feed(1, lane_[1].heartbeat(true, 1000, 1, 2));
  EXPECT_TRUE(gate_->finished(true));
  EXPECT_EQ(gate_->seq(0).received(), 2u);
  EXPECT_EQ(gate_->received(), 4u);
}

}  // namespace
}  // namespace ddft::receiver
