// Files the sender sent before (sender_history.hpp): its history names each file this receiver
// never heard of once, and passes over the rest; a resend of a file delivered is skipped, one of
// a file that failed learns what it copies and, delivered, resolves it.
#include "receiver/assembly/sender_history.hpp"

#include <gtest/gtest.h>

#include "support/json_matchers.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::JsonHas;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::StartsWith;

constexpr uint64_t kBefore = 0xbef0;  // a session before this receiver started

class SenderHistoryTest : public TablePartsTest {
 protected:
  void SetUp() override {
    TablePartsTest::SetUp();
    listed_.set_gate(gate_.get());
    history_.set_gate(gate_.get());
    // As the file table wires them: a record written settles its file, through the history.
    records_.set_on_recorded([this](const common::FileIdentity& f, const std::string& where) {
      history_.recorded(f, where);
    });
  }
  static common::FileIdentity identity(uint64_t session, uint32_t id, const std::string& path) {
    return {session, id, path, 1000, common::VerifyType::kB2B, "00112233445566778899aabbccddeeff"};
  }
  static common::HistoryRecord sent(uint64_t session, uint32_t id, const std::string& path,
                                    int lane = common::kLaneUnsaid) {
    common::HistoryRecord r;
    r.file = identity(session, id, path);
    r.lane = lane;
    return r;
  }
  // The copy announced as file `id` of the session at `path`.
  static File copy(uint32_t id, const std::string& path) {
    File f;
    f.session = kSession;
    f.id = id;
    f.path = path;
    f.size = 1000;
    return f;
  }
  void resend(uint32_t id, const common::FileIdentity& of) {
    history_.handle_resend(feed_gate(0, lane_[0].resend(id, of)));
  }
  ListedFiles listed_{cfg_, out_, records_, clock_, counters_, session_files_, known_, files_};
  SenderHistory history_{out_, pool_, clock_, counters_, known_, files_, listed_, records_};
};

TEST_F(SenderHistoryTest, OnlyAFileNeverHeardOfIsRecordedAsMissed) {
  known_.settled().add(kBefore, 1, clock_.now());  // delivered or named by an earlier run
  add_file(2, "flight.bin");                       // in flight
  known_.remember_seen(3, clock_.now());           // announced this session
  listed_.handle(
      feed_gate(0, lane_[0].file_list({{4, "held.bin", "x", common::VerifyType::kB2B, false, 1}})),
      0);  // a list entry waiting for lane 1
  ASSERT_TRUE(listed_.holds(4));
  history_.handle_history(feed_gate(
      0, lane_[0].history(0xfeed, {sent(kBefore, 1, "known.bin"), sent(kSession, 2, "flight.bin"),
                                   sent(kSession, 3, "seen.bin"), sent(kSession, 4, "held.bin"),
                                   sent(kBefore, 5, "missed.bin")})));
  EXPECT_EQ(counters_.files_missed, 1u);
  EXPECT_TRUE(known_.settled().contains(kBefore, 5)) << "named once";
  EXPECT_THAT(records(), ElementsAre(JsonHas("name", "missed.bin")));
}

TEST_F(SenderHistoryTest, AFileOfALaneThatGoesToAnotherHostIsLeftToItsReceiver) {
  // The sender's lanes 0 and 1 come here; its lane 2 goes to another host.
  feed_gate(0, lane_[0].sender_info(0xfeed, {0, 0, 2}));
  history_.handle_history(
      feed_gate(0, lane_[0].history(0xfeed, {sent(kBefore, 9, "else.bin", 2)})));
  EXPECT_EQ(counters_.files_missed, 0u);
  EXPECT_FALSE(known_.settled().contains(kBefore, 9));
}

TEST_F(SenderHistoryTest, ACopyOfAFileDeliveredIsSkipped) {
  known_.settled().add(kBefore, 7, clock_.now(), SettledFiles::Fate::kPassed);
  resend(3, identity(kBefore, 7, "a.bin"));
  File f = copy(3, "a.bin");
  EXPECT_TRUE(history_.skip_copy(f, /*flagged=*/true));
  EXPECT_EQ(counters_.resends_skipped, 1u);
  File again = copy(3, "a.bin");
  EXPECT_FALSE(history_.skip_copy(again, /*flagged=*/false)) << "the resend was taken";
}

TEST_F(SenderHistoryTest, ACopyOfAFailedFileIsTakenAndDeliveredResolvesTheFailure) {
  known_.settled().add(kBefore, 8, clock_.now(), SettledFiles::Fate::kFailed);
  resend(3, identity(kBefore, 8, "b.bin"));
  File f = copy(3, "b.bin");
  EXPECT_FALSE(history_.skip_copy(f, /*flagged=*/true));
  ASSERT_TRUE(f.resend_of.has_value());
  EXPECT_EQ(f.resend_of->file_id, 8u);
  history_.resolve(f);
  settle();
  EXPECT_EQ(counters_.resends_delivered, 1u);
  EXPECT_EQ(known_.settled().fate(kBefore, 8), SettledFiles::Fate::kPassed);
}

TEST_F(SenderHistoryTest, ACopyDeliveredBeforeTheFailuresRecordIsWrittenResolvesItOnceWritten) {
  // The history names file 8 of an earlier session, and its copy is delivered before the
  // record's write has come back (the pool not reaped in between).
  history_.handle_history(feed_gate(0, lane_[0].history(0xfeed, {sent(kBefore, 8, "b.bin")})));
  ASSERT_TRUE(records_.writing(kBefore, 8));
  resend(3, identity(kBefore, 8, "b.bin"));
  File f = copy(3, "b.bin");
  ASSERT_FALSE(history_.skip_copy(f, /*flagged=*/true));
  ASSERT_TRUE(f.resend_of.has_value());
  history_.resolve(f);
  EXPECT_EQ(known_.settled().fate(kBefore, 8), SettledFiles::Fate::kPassed);
  settle();
  EXPECT_FALSE(records_.writing(kBefore, 8));
  EXPECT_EQ(known_.settled().fate(kBefore, 8), SettledFiles::Fate::kPassed)
      << "the record written does not undo the resolution";
  EXPECT_THAT(records(),
              ElementsAre(AllOf(JsonHas("name", "b.bin"),
                                JsonHas("resolved", StartsWith("delivered on resend (session "
                                                               "0000000000005151, "
                                                               "file 3) at ")))));
  EXPECT_EQ(counters_.resends_delivered, 1u);
}

TEST_F(SenderHistoryTest, AFlaggedCopyWhoseResendWasLostIsSkippedOnlyWhenItsFileIsInPlace) {
  testing::write_file(base_ / "here.bin", std::string(1000, 'h'));
  File same = copy(4, "here.bin");
  EXPECT_FALSE(history_.skip_copy(same, /*flagged=*/false)) << "not a copy";
  EXPECT_TRUE(history_.skip_copy(same, /*flagged=*/true));
  File other_size = copy(5, "here.bin");
  other_size.size = 999;
  EXPECT_FALSE(history_.skip_copy(other_size, /*flagged=*/true));
  File absent = copy(6, "absent.bin");
  EXPECT_FALSE(history_.skip_copy(absent, /*flagged=*/true));
  EXPECT_EQ(counters_.resends_skipped, 1u);
}

TEST_F(SenderHistoryTest, PendingResendsAreBoundedAndANewSessionForgetsThem) {
  for (uint32_t id = 1; id <= SenderHistory::kResendsKept + 1; ++id) {
    resend(id, identity(kBefore, id, "c.bin"));
  }
  File first = copy(1, "c.bin");
  EXPECT_FALSE(history_.skip_copy(first, false));
  EXPECT_FALSE(first.resend_of.has_value()) << "the lowest id went to make room";
  File second = copy(2, "c.bin");
  EXPECT_FALSE(history_.skip_copy(second, false));
  EXPECT_TRUE(second.resend_of.has_value());
  history_.start_session();
  File third = copy(3, "c.bin");
  EXPECT_FALSE(history_.skip_copy(third, false));
  EXPECT_FALSE(third.resend_of.has_value());
}

}  // namespace
}  // namespace ddft::receiver
