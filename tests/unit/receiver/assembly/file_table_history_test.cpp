// The file table and the sender's history (kHistory): a file the history names that this
// receiver neither delivered nor named, in this session or an earlier one of its journal's
// window, is recorded once, with when it was sent; every other entry is passed over.
#include <gtest/gtest.h>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/hash.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::JsonHas;
using ddft::testing::read_file;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr uint64_t kEarlier = 0xea411e5;  // a session before this receiver started
// 2026-11-28T12:00:00Z in ns since the epoch.
constexpr int64_t kSentNs = int64_t{1'795'867'200} * 1'000'000'000;

common::HistoryRecord missed(uint64_t session, uint32_t id, const std::string& path,
                             int lane = common::kLaneUnsaid) {
  common::HistoryRecord r;
  r.file = {session, id, path, 1000, common::VerifyType::kB2B, "00112233445566778899aabbccddeeff"};
  r.sent_ns = kSentNs;
  r.lane = lane;
  return r;
}

std::string hex_digest(const std::string& content) {
  return common::hash_buffer(
             common::VerifyType::kB2B,
             std::span(reinterpret_cast<const uint8_t*>(content.data()), content.size()))
      .hex();
}

class FileTableHistoryTest : public FileTableFixture {
 protected:
  size_t record_count() {
    size_t n = 0;
    if (!std::filesystem::exists(testing::failed_folder(base_))) return 0;
    for (const auto& e : std::filesystem::directory_iterator(testing::failed_folder(base_))) {
      n += e.path().extension() == ".json";
    }
    return n;
  }
};

TEST_F(FileTableHistoryTest, AFileOfAnEarlierSessionNeverGotIsRecordedOnceWithWhenItWasSent) {
  const common::HistoryRecord r = missed(kEarlier, 7, "gone/a.bin");
  feed(0, lane_[0].history(0xfeed, {r}));
  settle();
  EXPECT_EQ(counters_.files_missed, 1u);
  EXPECT_EQ(counters_.files_failed, 1u);
  const std::string rec = record();
  EXPECT_THAT(rec, JsonHas("name", "gone/a.bin"));
  EXPECT_THAT(rec, JsonHas("reason", AllOf(StartsWith("sent at 2026-11-28T"),
                                           EndsWith(" in session 000000000ea411e5, file 7, while "
                                                    "this receiver was not receiving (named by "
                                                    "the sender's history)"))));
  EXPECT_THAT(rec, JsonHas("sender", "000000000000feed"));
  EXPECT_THAT(rec, JsonHas("expected_key", "00112233445566778899aabbccddeeff"))
      << "the record carries the sender's digest";
  // Every later repeat of it is passed over: named once.
  feed(0, lane_[0].history(0xfeed, {r}));
  feed(1, lane_[1].history(0xfeed, {r}));
  settle();
  EXPECT_EQ(counters_.files_missed, 1u);
  EXPECT_EQ(record_count(), 1u);
}

TEST_F(FileTableHistoryTest, FilesDeliveredOrNamedAlreadyAreNotNamedAgain) {
  // Known from the journal of an earlier run (delivered or recorded then).
  table_->set_earlier(nullptr, {{kEarlier, 3}});
  // Delivered in this session.
  feed_all(0, lane_[0].file(1, "here.bin", lane_content(1000, 4)));
  settle();
  ASSERT_EQ(counters_.files_passed, 1u);
  feed(0, lane_[0].history(0xfeed,
                           {missed(kEarlier, 3, "known.bin"), missed(kSession, 1, "here.bin", 0)}));
  settle();
  EXPECT_EQ(counters_.files_missed, 0u);
  EXPECT_EQ(record_count(), 0u) << ::testing::PrintToString(records());
}

TEST_F(FileTableHistoryTest, AFileOfThisSessionBeforeTheReceiverJoinedIsNamedAsNotReceiving) {
  // The receiver heard file 5 first: files 2 to 4 went by before it listened.
  feed_all(0, lane_[0].file(5, "five.bin", lane_content(100, 5)));
  settle();
  feed(0, lane_[0].history(0xfeed,
                           {missed(kSession, 2, "two.bin", 0), missed(kSession, 6, "six.bin", 0)}));
  settle();
  EXPECT_EQ(counters_.files_missed, 2u);
  const std::vector<std::string> recs = records();
  EXPECT_THAT(recs, Contains(AllOf(JsonHas("name", "two.bin"),
                                   JsonHas("reason", HasSubstr("file 2, while this receiver was "
                                                               "not receiving")))));
  // File 6 came after the first file it heard: it was receiving, and lost all of it.
  EXPECT_THAT(recs, Contains(AllOf(JsonHas("name", "six.bin"),
                                   JsonHas("reason", StartsWith("never reached this receiver: "
                                                                "sent at")))));
  // An announce of file 2 now (a late repeat) is not taken: it is named already.
  feed(0, lane_[0].announce(2, "two.bin", 1000));
  settle();
  EXPECT_EQ(table_->size(), 0u);
}

TEST_F(FileTableHistoryTest, AFileOnALaneOfAnotherHostIsLeftToThatHostsReceiver) {
  // The sender's lanes 0 and 1 come here; its lane 2 goes to another host.
  feed(0, lane_[0].sender_info(0xfeed, {0, 0, 2}));
  feed(0, lane_[0].history(0xfeed, {missed(kEarlier, 9, "elsewhere.bin", 2),
                                    missed(kEarlier, 10, "striped.bin", common::kLaneAll)}));
  settle();
  EXPECT_EQ(counters_.files_missed, 1u) << ::testing::PrintToString(records());
  EXPECT_THAT(records(), Not(Contains(JsonHas("name", "elsewhere.bin"))));
}

TEST_F(FileTableHistoryTest, AMalformedHistoryIsCountedAndNamesNothing) {
  std::vector<uint8_t> d = lane_[0].history(0xfeed, {missed(kEarlier, 1, "x.bin")});
  // The count says two entries where there is one.
  d[common::kHeaderSize + 8] = 2;
  common::reseal(d);
  const size_t bad = static_cast<size_t>(common::DecodeStatus::kBadPayload);
  const uint64_t before = counters_.rejected[bad];
  feed(0, d);
  settle();
  EXPECT_EQ(counters_.rejected[bad], before + 1);
  EXPECT_EQ(record_count(), 0u);
}

TEST_F(FileTableHistoryTest, AResendOfAMissedFileIsDeliveredAndResolvesItsRecord) {
  const std::string content = lane_content(1000, 8);
  common::HistoryRecord r = missed(kEarlier, 7, "gone/a.bin");
  r.file.digest = hex_digest(content);
  feed(0, lane_[0].history(0xfeed, {r}));
  settle();
  ASSERT_EQ(record_count(), 1u);
  // Sent again as file 3 of this session.
  feed(0, lane_[0].resend(3, r.file));
  feed_all(0, lane_[0].file(3, "gone/a.bin", content));
  settle();
  EXPECT_EQ(counters_.resends_delivered, 1u);
  EXPECT_EQ(read_file(base_ / "gone/a.bin"), content);
  EXPECT_THAT(record(), JsonHas("resolved", StartsWith("delivered on resend (session "
                                                       "0000000000005151, file 3) at ")));
  EXPECT_EQ(record_count(), 1u) << "resolved, not a second record";
  // A later copy of it is a copy of a file delivered: skipped.
  feed(0, lane_[0].resend(4, r.file));
  feed_all(0, lane_[0].file(4, "gone/a.bin", content));
  settle();
  EXPECT_EQ(counters_.resends_skipped, 1u);
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_FALSE(std::filesystem::exists(base_ / "gone/a.1.bin")) << "never two copies";
}

TEST_F(FileTableHistoryTest, AResendOfAFileDeliveredIsSkippedWithoutWriting) {
  const std::string content = lane_content(1000, 9);
  feed_all(0, lane_[0].file(1, "here.bin", content));
  settle();
  ASSERT_EQ(counters_.files_passed, 1u);
  common::FileIdentity of{kSession, 1, "", 0, common::VerifyType::kB2B, hex_digest(content)};
  feed(0, lane_[0].resend(2, of));
  feed_all(0, lane_[0].file(2, "here.bin", content));
  settle();
  EXPECT_EQ(counters_.resends_skipped, 1u);
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(table_->size(), 0u);
  for (const auto& e : std::filesystem::directory_iterator(base_)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "here.bin" || !name.starts_with("here")) << name << ": a second copy";
  }
}

}  // namespace
}  // namespace ddft::receiver
