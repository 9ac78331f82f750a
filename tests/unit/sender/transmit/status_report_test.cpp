// The sender's status report on a fake clock: each lane sends its first status at once, then one
// every interval, and every lane at once when what matters changes; the queue's age comes from
// the source, or from the session's start when the source cannot tell.
#include "sender/transmit/status_report.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "common/version.hpp"

namespace ddft::sender {
namespace {

using std::chrono::seconds;

class StatusReportTest : public ::testing::Test {
 protected:
  StatusReportTest() { cfg_.rate_mb = 2; }
  static std::vector<SourceFile> three_files() {
    std::vector<SourceFile> out;
    for (int i = 0; i < 3; ++i) {
      SourceFile f;
      f.rel_path = "f" + std::to_string(i);
      f.size = 1000;
      out.push_back(f);
    }
    return out;
  }
  void start(size_t lanes) {
    report_.session_started({{"", &source_}}, lanes, clock_.now());
    status_.lanes_up_mask = (uint64_t{1} << lanes) - 1;
  }

  common::FakeClock clock_;
  SenderConfig cfg_;
  SendStatus status_;
  std::vector<SourceFile> files_ = three_files();
  ListSource source_{files_};
  StatusReport report_{cfg_, status_, {}};
};

TEST_F(StatusReportTest, EachLaneSendsAtOnceThenEveryInterval) {
  start(2);
  const auto first = report_.due(0, clock_.now());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->seq, 1u);
  EXPECT_EQ(first->queued_files, 3u);
  EXPECT_EQ(first->queued_bytes, 3000u);
  EXPECT_EQ(first->rate_limit, 2u * 2 * 1024 * 1024);  // --rate is each lane's
  EXPECT_FALSE(first->hot_folder);
  EXPECT_EQ(first->version, common::kVersion);
  ASSERT_TRUE(report_.due(1, clock_.now()));
  EXPECT_FALSE(report_.due(0, clock_.now()));
  clock_.advance(seconds(common::kStatusIntervalS - 1));
  EXPECT_FALSE(report_.due(0, clock_.now()));
  clock_.advance(seconds(1));
  const auto again = report_.due(0, clock_.now());
  ASSERT_TRUE(again);
  // The list waits since the session began; the number moved with it.
  EXPECT_EQ(again->oldest_wait_s, common::kStatusIntervalS);
  EXPECT_GT(again->seq, first->seq);
  EXPECT_TRUE(report_.due(1, clock_.now()));
}

TEST_F(StatusReportTest, WhatMattersGoesAtOnceOnEveryLane) {
  start(2);
  ASSERT_TRUE(report_.due(0, clock_.now()));
  ASSERT_TRUE(report_.due(1, clock_.now()));
  status_.read_failures = 1;
  // Sampled again only a second later.
  EXPECT_FALSE(report_.due(0, clock_.now()));
  clock_.advance(seconds(1));
  auto s = report_.due(0, clock_.now());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->read_failures, 1u);
  EXPECT_TRUE(report_.due(1, clock_.now()));
  // A lane going down.
  status_.lanes_up_mask = 0b01;
  clock_.advance(seconds(1));
  s = report_.due(1, clock_.now());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->lanes_up, 0b01u);
  // The queue emptying.
  std::stop_source stop;
  while (source_.next(stop.get_token())) {
  }
  clock_.advance(seconds(1));
  s = report_.due(0, clock_.now());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->queued_files, 0u);
  EXPECT_EQ(s->oldest_wait_s, 0u);
  // What does not matter waits for the interval: the seq moves, nothing is due.
  status_.lanes_up_mask = 0b01;
  clock_.advance(seconds(1));
  EXPECT_FALSE(report_.due(0, clock_.now()));
}

TEST_F(StatusReportTest, TheBacklogPassingItsThresholdGoesAtOnce) {
  start(1);
  // The lane's statuses fall 5 s off the threshold's second.
  clock_.advance(seconds(5));
  ASSERT_TRUE(report_.due(0, clock_.now()));
  for (uint32_t t = 6; t < common::kBacklogWarnS; ++t) {
    clock_.advance(seconds(1));
    const auto s = report_.due(0, clock_.now());
    // Only the interval's statuses before the threshold.
    ASSERT_EQ(s.has_value(), (t - 5) % common::kStatusIntervalS == 0) << t;
  }
  clock_.advance(seconds(1));
  const auto s = report_.due(0, clock_.now());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->oldest_wait_s, common::kBacklogWarnS);
  EXPECT_TRUE(common::status_alarms(*s).backlog);
}

TEST_F(StatusReportTest, AnUnchangedStatusStillGetsANewNumber) {
  // An idle sender: nothing waits, nothing changes; each status must still be news to a receiver
  // (which drops a seq it has taken as a copy).
  const std::vector<SourceFile> none;
  ListSource empty(none);
  report_.session_started({{"", &empty}}, 1, clock_.now());
  status_.lanes_up_mask = 1;
  const auto first = report_.due(0, clock_.now());
  ASSERT_TRUE(first);
  clock_.advance(seconds(common::kStatusIntervalS));
  const auto second = report_.due(0, clock_.now());
  ASSERT_TRUE(second);
  EXPECT_GT(second->seq, first->seq);
  common::SenderStatus same = *second;
  same.seq = first->seq;
  EXPECT_EQ(same, *first);
  // Copies within the second share it.
  EXPECT_EQ(report_.current(clock_.now()).seq, second->seq);
  // The session's last is sampled afresh.
  EXPECT_EQ(report_.sample_now(clock_.now()).seq, second->seq + 1);
}

TEST_F(StatusReportTest, ANewSessionNumbersFromOne) {
  start(1);
  clock_.advance(seconds(30));
  ASSERT_TRUE(report_.due(0, clock_.now()));
  start(1);
  const auto s = report_.due(0, clock_.now());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->seq, 1u);
  EXPECT_EQ(s->oldest_wait_s, 0u);
  // A lane the session does not have.
  EXPECT_FALSE(report_.due(1, clock_.now()));
}

}  // namespace
}  // namespace ddft::sender
