// The history on the wire, on a fake wall clock: each entry packed once per repeat, every lane
// given every payload once, what earlier runs missed sent once at the start, the budget holding
// entries back, and the "sent up to" mark.
#include "sender/source/history_feed.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace ddft::sender {
namespace {
using std::chrono::seconds;

constexpr int64_t kSec = 1'000'000'000;

struct Wall {
  int64_t ns = int64_t{1'800'000'000} * kSec;
  History::WallNs fn() {
    return [this] { return ns; };
  }
};

HistoryEntry entry(uint32_t id, int64_t sent_ns) {
  HistoryEntry e;
  e.sender_id = 0xfeed;
  e.file = {0x5e55,
            id,
            "f" + std::to_string(id),
            100,
            common::VerifyType::kB2B,
            "00112233445566778899aabbccddeeff"};
  e.sent_ns = sent_ns;
  return e;
}

// The file ids in `payloads`, in order.
std::vector<uint32_t> ids(const std::vector<HistoryFeed::Payload>& payloads) {
  std::vector<uint32_t> out;
  for (const auto& p : payloads) {
    common::HistoryBundle b;
    EXPECT_EQ(common::decode_history(*p, &b), common::DecodeStatus::kOk);
    for (const auto& r : b.records) out.push_back(r.file.file_id);
  }
  return out;
}

class HistoryFeedTest : public ::testing::Test {
 protected:
  HistoryFeed make(uint64_t budget = 1 << 20) {
    return HistoryFeed(0xfeed, {seconds(10), seconds(100)}, 1400, budget, 64 << 20, wall_.fn());
  }
  Wall wall_;
};

TEST_F(HistoryFeedTest, EachEntryGoesOncePerRepeatAndEveryLaneGetsEveryPayload) {
  HistoryFeed feed = make();
  feed.start_session(2);
  feed.add(entry(1, wall_.ns));
  wall_.ns += 9 * kSec;
  EXPECT_TRUE(feed.take(0).empty()) << "not due";
  wall_.ns += 1 * kSec;
  EXPECT_TRUE(feed.take(0).empty()) << "due: gathered for a second first";
  wall_.ns += 1 * kSec;
  EXPECT_EQ(ids(feed.take(0)), std::vector<uint32_t>{1});
  EXPECT_TRUE(feed.take(0).empty()) << "a lane gets a payload once";
  EXPECT_EQ(ids(feed.take(1)), std::vector<uint32_t>{1}) << "and every lane gets it";
  wall_.ns += 100 * kSec;
  EXPECT_EQ(ids(feed.take(1)), std::vector<uint32_t>{1}) << "the second repeat";
  EXPECT_EQ(ids(feed.take(0)), std::vector<uint32_t>{1});
  wall_.ns += 1000 * kSec;
  EXPECT_TRUE(feed.take(0).empty()) << "no third";
  const HistoryFeed::Totals t = feed.totals();
  EXPECT_EQ(t.entries_sent, 2u);
  EXPECT_EQ(t.payloads, 2u);
  EXPECT_EQ(t.scheduled, 0u);
}

TEST_F(HistoryFeedTest, ALastTakePacksWithoutGathering) {
  HistoryFeed feed = make();
  feed.start_session(1);
  feed.add(entry(1, wall_.ns - 10 * kSec));
  EXPECT_TRUE(feed.take(0).empty());
  EXPECT_EQ(ids(feed.take(0, nullptr, /*last=*/true)), std::vector<uint32_t>{1});
}

TEST_F(HistoryFeedTest, AnEarlierRunsMissedRepeatsGoOnceAtTheStartTheRestWhenDue) {
  HistoryFeed feed = make();
  feed.start_session(1);
  const int64_t now = wall_.ns;
  feed.add_earlier({entry(1, now - 500 * kSec),   // both repeats long sent by that run
                    entry(2, now - 50 * kSec),    // its 10 s repeat missed (mark before it)
                    entry(3, now - 5 * kSec),     // nothing due yet
                    entry(4, now - 200 * kSec)},  // both missed: one catch-up, then none
                   /*sent_up_to=*/now - 300 * kSec);
  wall_.ns += 2 * kSec;
  EXPECT_EQ(ids(feed.take(0)), (std::vector<uint32_t>{2, 4}));
  wall_.ns += 5 * kSec;  // entry 3's first repeat
  EXPECT_EQ(ids(feed.take(0)), std::vector<uint32_t>{3});
  wall_.ns += 50 * kSec;  // entry 2's second repeat (sent + 100 s)
  EXPECT_EQ(ids(feed.take(0)), std::vector<uint32_t>{2});
  wall_.ns += 500 * kSec;
  EXPECT_EQ(ids(feed.take(0)), std::vector<uint32_t>{3});
  EXPECT_EQ(feed.totals().scheduled, 0u);
}

TEST_F(HistoryFeedTest, TheBudgetHoldsEntriesBackAndTheyWaitCounted) {
  // 300 payload bytes a second: about one small payload.
  HistoryFeed feed = make(300);
  feed.start_session(1);
  for (uint32_t id = 1; id <= 400; ++id) feed.add(entry(id, wall_.ns));
  wall_.ns += 12 * kSec;
  uint64_t waiting = 0;
  const size_t first = ids(feed.take(0, &waiting)).size();
  EXPECT_GT(first, 0u);
  EXPECT_EQ(waiting, 400 - first) << "the rest wait for the budget";
  size_t sent = first;
  for (int s = 0; s < 200 && sent < 400; ++s) {
    wall_.ns += kSec;
    sent += ids(feed.take(0, &waiting)).size();
  }
  EXPECT_EQ(sent, 400u);
  EXPECT_EQ(waiting, 0u);
  EXPECT_GT(feed.totals().payloads, 3u);
}

TEST_F(HistoryFeedTest, TheMarkStaysBeforeWhatIsDueAndNotSent) {
  HistoryFeed feed = make();
  feed.start_session(1);
  EXPECT_EQ(feed.sent_up_to(), wall_.ns);
  const int64_t sent = wall_.ns;
  feed.add(entry(1, sent));
  EXPECT_EQ(feed.sent_up_to(), wall_.ns) << "its repeat is still to come";
  wall_.ns += 20 * kSec;
  EXPECT_EQ(feed.sent_up_to(), sent + 10 * kSec - 1) << "due, not taken";
  feed.take(0);
  EXPECT_EQ(ids(feed.take(0)).size(), 0u);
  EXPECT_EQ(feed.sent_up_to(), wall_.ns) << "packed";
}

TEST_F(HistoryFeedTest, ALaneDoneOrNeverStartedHoldsNothingBack) {
  HistoryFeed feed = make();
  EXPECT_TRUE(feed.take(0).empty()) << "no session";
  feed.start_session(2);
  feed.lane_done(1);
  feed.add(entry(1, wall_.ns));
  wall_.ns += 12 * kSec;
  EXPECT_EQ(ids(feed.take(0)).size(), 1u);
  EXPECT_TRUE(feed.take(1).empty());
}

}  // namespace
}  // namespace ddft::sender
