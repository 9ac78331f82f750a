// Which lanes hold a file open (file_lanes.hpp), over a gate of two lanes: the announce opens a
// file on its lane (a striped one on both), a later file or the last copy's end closes a lane,
// and a file no lane holds open is superseded.
#include "receiver/assembly/file_lanes.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
using ::testing::HasSubstr;

class FileLanesTest : public TablePartsTest {
 protected:
  void SetUp() override {
    TablePartsTest::SetUp();
    lanes_.set_gate(gate_.get());
  }
  File file(uint32_t id, size_t lane, bool striped) {
    File f;
    f.session = kSession;
    f.id = id;
    lanes_.open(f, lane, striped);
    return f;
  }
  FileLanes lanes_{cfg_};
};

TEST_F(FileLanesTest, AWholeFileIsOpenOnItsLaneAndAStripedOneOnEvery) {
  const File whole = file(1, 1, false);
  EXPECT_EQ(whole.lane, 1u);
  EXPECT_EQ(whole.open_lanes, 0b10u);
  EXPECT_EQ(whole.lanes_seen, 0b10u);
  const File striped = file(2, 0, true);
  EXPECT_TRUE(striped.striped);
  EXPECT_EQ(striped.open_lanes, 0b11u);
  EXPECT_EQ(striped.lanes_seen, 0b01u);
}

TEST_F(FileLanesTest, ALaterFileClosesALaneAndAFileNoLaneHoldsIsSuperseded) {
  File f = file(5, 0, true);
  lanes_.close(f, 0, 6, clock_.now());
  EXPECT_EQ(f.open_lanes, 0b10u);
  EXPECT_FALSE(f.superseded) << "lane 1 still holds it open";
  lanes_.close(f, 1, 4, clock_.now());
  EXPECT_EQ(f.open_lanes, 0b10u) << "file 4 comes before it: no news of it";
  later(1);
  lanes_.close(f, 1, 7, clock_.now());
  EXPECT_EQ(f.open_lanes, 0u);
  EXPECT_TRUE(f.superseded);
  EXPECT_EQ(f.superseded_at, clock_.now());
}

TEST_F(FileLanesTest, OnlyAReceivingFileIsClosedAndIdsWrap) {
  File ending = file(5, 0, false);
  ending.state = FileState::kEnding;
  lanes_.close(ending, 0, 6, clock_.now());
  EXPECT_EQ(ending.open_lanes, 0b01u) << "all its data is in: nothing to supersede";
  File last = file(0xffffffff, 0, false);
  lanes_.close(last, 0, 1, clock_.now());
  EXPECT_TRUE(last.superseded) << "file 1 after the wrap comes after it";
}

TEST_F(FileLanesTest, AStripedFilesAnnounceOnANewLaneCountsOnce) {
  File f = file(5, 0, true);
  EXPECT_FALSE(lanes_.announced_again(f, 0, true)) << "a repeat on its first lane";
  EXPECT_TRUE(lanes_.announced_again(f, 1, true));
  EXPECT_EQ(f.lanes_seen, 0b11u);
  EXPECT_FALSE(lanes_.announced_again(f, 1, true)) << "a repeat";
  File whole = file(6, 0, false);
  EXPECT_FALSE(lanes_.announced_again(whole, 1, false));
}

TEST_F(FileLanesTest, OnlyTheLastCopysEndClosesItsLane) {
  File f = file(5, 0, true);
  common::End e;
  e.copies = 2;
  e.copy = 0;
  EXPECT_FALSE(lanes_.close_on_end(f, e, 0));
  EXPECT_EQ(f.open_lanes, 0b11u);
  e.copy = 1;
  EXPECT_TRUE(lanes_.close_on_end(f, e, 0));
  EXPECT_EQ(f.open_lanes, 0b10u);
  EXPECT_FALSE(lanes_.close_on_end(f, e, 0)) << "closed already";
}

TEST_F(FileLanesTest, TheFinalHeartbeatIsDueOnceEveryLaneTheFileIsOpenOnIsGone) {
  const File on0 = file(5, 0, false);
  feed_gate(1, lane_[1].heartbeat(true, 1000, 1, 2));
  later(2);
  EXPECT_FALSE(lanes_.final_due(on0, clock_.now())) << "its own lane goes on";
  feed_gate(0, lane_[0].heartbeat(true, 1000, 0, 2));
  later(2);
  EXPECT_TRUE(lanes_.final_due(on0, clock_.now()));
}

TEST_F(FileLanesTest, AFailureNamesTheLaneAndAStripedFileOverMoreLanesIsRefused) {
  EXPECT_EQ(lanes_.note(file(5, 1, false)), " (lane 1, " + cfg_.lane_name(1) + ")");
  EXPECT_EQ(lanes_.note(file(6, 0, true)), " (striped over every lane)");
  EXPECT_EQ(lanes_.striped_refusal(), std::nullopt);
  feed_gate(0, lane_[0].heartbeat(false, 1000, 0, 3));
  EXPECT_THAT(lanes_.striped_refusal().value_or(""),
              HasSubstr("striped over the sender's 3 lanes, of which this receiver drains 2"));
}

TEST_F(FileLanesTest, WithoutAGateThereIsOneLaneNeverGone) {
  FileLanes one(cfg_);
  File f;
  one.open(f, 0, true);
  EXPECT_EQ(f.open_lanes, 0b1u);
  later(3600);
  EXPECT_FALSE(one.final_due(f, clock_.now()));
  EXPECT_EQ(one.note(f), "");
  EXPECT_EQ(one.striped_refusal(), std::nullopt);
}

}  // namespace
}  // namespace ddft::receiver
