// Files the sender's list names that this receiver never heard of (listed_files.hpp), over a gate
// of two lanes: an entry from the file's own lane is recorded at once, one from another lane is
// held until that lane is gone, and a file heard of meanwhile is never recorded.
#include "receiver/assembly/listed_files.hpp"

#include <gtest/gtest.h>

#include "support/json_matchers.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::JsonHas;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Listed = testing::FakeSender::Listed;

class ListedFilesTest : public TablePartsTest {
 protected:
  void SetUp() override {
    TablePartsTest::SetUp();
    listed_.set_gate(gate_.get());
  }
  // The list of `files` arrives on `lane`.
  void list(size_t lane, const std::vector<Listed>& files) {
    listed_.handle(feed_gate(lane, lane_[lane].file_list(files)), lane);
  }
  // A file sent on the sender's lane `lane`, 1000 bytes.
  static Listed on(int lane, uint32_t id, const std::string& path) {
    return {id, path, std::string(1000, 'x'), common::VerifyType::kB2B, false, lane};
  }
  ListedFiles listed_{cfg_, out_, records_, clock_, counters_, session_files_, known_, files_};
};

TEST_F(ListedFilesTest, AnEntryFromItsOwnLaneIsRecordedAtOnce) {
  list(1, {on(1, 9, "own.bin")});
  EXPECT_FALSE(listed_.holds_any());
  EXPECT_EQ(counters_.files_unannounced, 1u);
  EXPECT_EQ(session_files_.failed, 1u);
  EXPECT_TRUE(known_.seen(9)) << "a late announce of it is ignored";
  EXPECT_THAT(records(),
              ElementsAre(AllOf(JsonHas("name", "own.bin"), JsonHas("lane", 1),
                                JsonHas("reason", "never announced: all its packets were lost"))));
}

TEST_F(ListedFilesTest, AnEntryOfAnotherLaneWaitsUntilThatLaneIsGone) {
  list(0, {on(1, 8, "lost.bin")});
  EXPECT_TRUE(listed_.holds(8));
  later(1);
  listed_.release(clock_.now());
  EXPECT_TRUE(listed_.holds(8)) << "lane 1 may still bring it";
  feed_gate(1, lane_[1].heartbeat(true, 1000, 1, 2));
  later(2);
  listed_.release(clock_.now());
  EXPECT_FALSE(listed_.holds_any());
  EXPECT_EQ(counters_.files_unannounced, 1u);
  EXPECT_THAT(records(), ElementsAre(AllOf(JsonHas("name", "lost.bin"), JsonHas("lane", 1),
                                           JsonHas("reason", HasSubstr("(lane 1, ")))));
}

TEST_F(ListedFilesTest, AHeldFileThatCameAfterAllIsNeverRecorded) {
  list(0, {on(1, 7, "late.bin"), on(1, 8, "later.bin")});
  add_file(7, "late.bin");  // announced meanwhile: in flight
  listed_.drop(8);          // announced and dropped by the table
  EXPECT_FALSE(listed_.holds(8));
  listed_.end_session(/*receiver_stopping=*/false);
  EXPECT_FALSE(listed_.holds_any());
  EXPECT_EQ(counters_.files_unannounced, 0u);
  EXPECT_THAT(records(), IsEmpty());
}

TEST_F(ListedFilesTest, TheSessionsEndSettlesEveryHeldEntryAndSaysSo) {
  list(0, {on(1, 8, "lost.bin")});
  listed_.end_session(/*receiver_stopping=*/false);
  EXPECT_FALSE(listed_.holds_any());
  EXPECT_THAT(records(), ElementsAre(JsonHas(
                             "reason", HasSubstr("; the session ended before that lane brought "
                                                 "it)"))));
}

TEST_F(ListedFilesTest, FilesHeardOfOrSettledAreNotRecorded) {
  known_.remember_seen(3, clock_.now());
  known_.remember_filtered(4);
  known_.settled().add(kSession, 5, clock_.now());  // by an earlier run
  list(1, {on(1, 3, "seen.bin"), on(1, 4, "filtered.bin"), on(1, 5, "earlier.bin")});
  EXPECT_EQ(counters_.listed_known, 1u);
  EXPECT_TRUE(known_.seen(5));
  EXPECT_EQ(counters_.files_unannounced, 0u);
  EXPECT_THAT(records(), IsEmpty());
}

TEST_F(ListedFilesTest, AFileNeverHeardOfIsHandledAsItsAnnounceWouldHaveBeen) {
  cfg_.filter = common::PathFilter({}, {"*.skip"});
  FailureRecord rec;
  rec.file = {kSession, 4, "a.skip", 10, common::VerifyType::kB2B, {}};
  EXPECT_FALSE(listed_.record_unheard(rec, 0, "history"));
  EXPECT_TRUE(known_.filtered(4));
  EXPECT_EQ(counters_.files_filtered, 1u);
  rec.file = {kSession, 5, "../escape.bin", 10, common::VerifyType::kB2B, {}};
  EXPECT_FALSE(listed_.record_unheard(rec, 0, "history"));
  EXPECT_EQ(counters_.files_refused, 1u);
  rec.file = {kSession, 6, "striped.bin", 10, common::VerifyType::kB2B, {}};
  rec.reason = "never reached this receiver";
  EXPECT_TRUE(listed_.record_unheard(rec, common::kLaneAll, "history"));
  EXPECT_EQ(counters_.files_failed, 1u);
  EXPECT_EQ(session_files_.failed, 1u);
  const std::vector<std::string> recs = records();
  EXPECT_THAT(
      recs, ::testing::Contains(AllOf(JsonHas("name", "striped.bin"), JsonHas("lane", "striped"))));
  EXPECT_EQ(recs.size(), 2u) << "the refusal and the failure; the filtered file has none";
}

TEST_F(ListedFilesTest, AMalformedListIsCountedAndNamesNothing) {
  std::vector<uint8_t> d = lane_[1].file_list({on(1, 9, "own.bin")});
  // The count says two entries where there is one.
  d[common::kHeaderSize + 2] = 2;
  common::reseal(d);
  const size_t bad = static_cast<size_t>(common::DecodeStatus::kBadPayload);
  listed_.handle(feed_gate(1, d), 1);
  EXPECT_EQ(counters_.rejected[bad], 1u);
  EXPECT_THAT(records(), IsEmpty());
}

}  // namespace
}  // namespace ddft::receiver
