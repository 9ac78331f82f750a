// The file table and the sender's DFTS sleeps (tests/unit/receiver/assembly/table_fixture.hpp: two
// lanes, files silent for 30 s time out, a FakeClock): a sleep longer than --file-timeout fails no
// file while heartbeats saying the sender sleeps come on a lane the file is open on; a sender gone
// quiet in its sleep, or no longer saying it sleeps, fails the file --file-timeout later.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "receiver/assembly/file_table.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::JsonHas;
using ddft::testing::read_file;
using ::testing::HasSubstr;

class FileTableSleepTest : public FileTableFixture {
 protected:
  // `count` seconds, a heartbeat a second on each lane: a sleeping one on the lanes `sleeping`
  // names (bit i: lane i), a plain one on the others.
  void heartbeats_for(int count, unsigned sleeping) {
    for (int i = 0; i < count; ++i) {
      for (uint16_t lane = 0; lane < 2; ++lane) {
        feed(lane, (sleeping >> lane & 1) != 0 ? lane_[lane].sleeping_heartbeat(lane, 2)
                                               : lane_[lane].heartbeat(false, 1000, lane, 2));
      }
      later(1);
    }
  }
  // File 1, `content`, announced on lane 0 with its first 2000 bytes.
  void start_file(const std::string& content) {
    feed(0, lane_[0].announce(1, "slept.bin", content.size()));
    feed_all(0, lane_[0].data(1, content, 0, 0, 2000));
  }
  // The rest of `content`, from byte `from`, and its end come on `lane`: file 1 passes, whole,
  // as `path`.
  void finish_file(uint16_t lane, const std::string& content, size_t from,
                   const std::string& path) {
    feed_all(lane, lane_[lane].data(1, content, 0, from));
    feed(lane, lane_[lane].end(1, content));
    settle();
    EXPECT_EQ(counters_.files_passed, 1u);
    EXPECT_TRUE(read_file(base_ / path) == content);
  }
  // The file is still receiving: none failed, its failure's writes included.
  void expect_receiving(const std::string& when) {
    settle();
    EXPECT_EQ(counters_.files_failed, 0u) << when;
    EXPECT_EQ(table_->size(), 1u) << when;
  }
  static constexpr const char* kSleptReason =
      "no packet for 30.0 s after the sender's last heartbeat saying it was sleeping";
};

TEST_F(FileTableSleepTest, ASleepLongerThanTheFileTimeoutFailsNoFileWhileItsHeartbeatsCome) {
  const std::string content = lane_content(5000, 7);
  start_file(content);
  heartbeats_for(100, 0b01);
  expect_receiving("after 100 s of sleep");
  finish_file(0, content, 2000, "slept.bin");
}

TEST_F(FileTableSleepTest, ASenderQuietInItsSleepFailsTheFileAFileTimeoutAfterItsLastWord) {
  start_file(lane_content(5000, 8));
  heartbeats_for(40, 0b01);  // the last at 39 s
  later(28);
  expect_receiving("29 s after the last heartbeat");
  later(1);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u) << "30 s after it";
  EXPECT_THAT(record(), JsonHas("reason", HasSubstr(kSleptReason)));
}

TEST_F(FileTableSleepTest, HeartbeatsNoLongerSayingItSleepsHoldTheFileNoLonger) {
  start_file(lane_content(5000, 9));
  heartbeats_for(40, 0b01);  // sleeping until 39 s
  heartbeats_for(28, 0b00);  // awake, the link alive, nothing of the file until 68 s
  expect_receiving("29 s after the last sleeping heartbeat");
  heartbeats_for(1, 0b00);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u);
  EXPECT_THAT(record(), JsonHas("reason", HasSubstr(kSleptReason)));
}

// Each lane paces, and sleeps, on its own: lane 1's sleep holds none of lane 0's files.
TEST_F(FileTableSleepTest, ASleepOnAnotherLaneHoldsNoFileOfThisOne) {
  start_file(lane_content(5000, 10));
  heartbeats_for(31, 0b10);
  settle();
  EXPECT_EQ(counters_.files_failed, 1u);
  EXPECT_THAT(record(), JsonHas("reason", HasSubstr("no packet for 30.0 s: the sender stopped")));
}

// A striped file is open on every lane: a sleep on any lane that still holds it open holds it,
// not only one on the lane that announced it first.
TEST_F(FileTableSleepTest, AStripedFileIsHeldByASleepOnAnyLaneItIsOpenOn) {
  const std::string content = lane_content(10000, 11);
  feed(0, lane_[0].striped_announce(1, "striped.bin", content.size()));
  feed(1, lane_[1].striped_announce(1, "striped.bin", content.size()));
  feed_all(0, lane_[0].data(1, content, 0, 0, 6000));
  feed(0, lane_[0].end(1, content));  // lane 0 is done with it; lane 1 sleeps before its part
  heartbeats_for(60, 0b10);
  expect_receiving("after 60 s of lane 1's sleep");
  finish_file(1, content, 6000, "striped.bin");
}

}  // namespace
}  // namespace ddft::receiver
