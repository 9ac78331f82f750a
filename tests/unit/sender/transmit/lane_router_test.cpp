// The lane router: whole files down the least busy lane (ties in turn, every copy on one lane),
// striped files' begin and end down every lane and their data in stripes of whole blocks, each
// down the lane least busy when it starts, skips down the least busy lane, a closed lane, and
// lanes taken down (--lane-down continue) never chosen again.
#include "sender/transmit/lane_router.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

namespace ddft::sender {
namespace {

using Kind = WorkItem::Kind;

// Three (or `n`) lane queues, roomy enough for every test here, and a router over them.
class LaneRouterTest : public ::testing::Test {
 protected:
  void make(size_t n, uint64_t stripe_threshold, size_t block) {
    std::vector<common::BoundedQueue<WorkItem>*> ptrs;
    for (size_t i = 0; i < n; ++i) {
      queues_.push_back(std::make_unique<common::BoundedQueue<WorkItem>>(1000));
      ptrs.push_back(queues_.back().get());
    }
    router_ = std::make_unique<LaneRouter>(ptrs, stripe_threshold, block);
  }
  std::shared_ptr<FileMeta> file(uint32_t id, uint64_t size) {
    auto m = std::make_shared<FileMeta>();
    m->file_id = id;
    m->size = size;
    m->rel_path = "f" + std::to_string(id);
    return m;
  }
  // The reader's items of one copy of `meta`: begin, blocks of `block` bytes, end.
  void push_copy(const std::shared_ptr<FileMeta>& meta, size_t block, uint8_t copy = 0) {
    WorkItem begin{Kind::kBegin, meta};
    begin.copy = copy;
    ASSERT_TRUE(router_->push(std::move(begin)));
    for (uint64_t off = 0; off < meta->size; off += block) {
      WorkItem b{Kind::kBlock, meta, 0, off,
                 static_cast<size_t>(std::min<uint64_t>(block, meta->size - off))};
      b.copy = copy;
      ASSERT_TRUE(router_->push(std::move(b)));
    }
    WorkItem end{Kind::kEnd, meta};
    end.copy = copy;
    ASSERT_TRUE(router_->push(std::move(end)));
  }
  // Everything lane `lane` holds, in order (the queue is drained).
  std::vector<WorkItem> drain(size_t lane) {
    std::vector<WorkItem> out;
    queues_[lane]->close();
    while (auto item = queues_[lane]->pop()) out.push_back(std::move(*item));
    return out;
  }

  std::vector<std::unique_ptr<common::BoundedQueue<WorkItem>>> queues_;
  std::unique_ptr<LaneRouter> router_;
};

TEST_F(LaneRouterTest, WholeFilesGoToTheLeastBusyLaneTiesInTurn) {
  make(3, 1000, 100);
  push_copy(file(1, 250), 100);  // all idle: lane 0
  push_copy(file(2, 100), 100);  // lane 0 holds 250: lane 1 (the first after lane 0 at 0)
  push_copy(file(3, 0), 100);    // lane 2 holds nothing
  EXPECT_EQ(router_->queued(0), 250u);
  EXPECT_EQ(router_->queued(1), 100u);
  EXPECT_EQ(router_->queued(2), 0u);
  push_copy(file(4, 50), 100);  // lane 2 again: the least busy
  // Lane 0's transmitter sends what it had: it is the least busy now.
  router_->block_done(0, 250);
  push_copy(file(5, 10), 100);
  std::map<uint32_t, size_t> lane_of;
  for (size_t lane = 0; lane < 3; ++lane) {
    for (const WorkItem& item : drain(lane)) {
      EXPECT_FALSE(item.striped);
      if (item.kind == Kind::kBegin) lane_of[item.meta->file_id] = lane;
      // Every item of a file on its one lane.
      EXPECT_EQ(lane_of.at(item.meta->file_id), lane) << item.meta->file_id;
    }
  }
  EXPECT_EQ(lane_of, (std::map<uint32_t, size_t>{{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 0}}));
}

TEST_F(LaneRouterTest, EveryCopyOfAWholeFileTakesItsLane) {
  make(2, 1000, 100);
  const auto f = file(1, 300);
  push_copy(f, 100, 0);
  push_copy(f, 100, 1);  // lane 0 is the busier now, yet the second copy follows the first
  EXPECT_EQ(drain(0).size(), 2u * (1 + 3 + 1));
  EXPECT_TRUE(drain(1).empty());
}

TEST_F(LaneRouterTest, ABigFileIsStripedInRangesOfAFewMegabytesNotOfTheThreshold) {
  // Files over 64 MiB are striped, in 4 MiB ranges (the lanes take turns often enough to stay
  // fed from the one reader).
  make(2, uint64_t{64} << 20, 1 << 20);
  EXPECT_EQ(router_->stripe_bytes(), LaneRouter::kStripeUnit);
  EXPECT_FALSE(router_->striped(uint64_t{64} << 20));
  EXPECT_TRUE(router_->striped((uint64_t{64} << 20) + 1));
}

TEST_F(LaneRouterTest, AStripedFileGoesToEveryLaneItsDataInStripesOfWholeBlocks) {
  // Striped above 350 bytes, in stripes of 300 (350 rounded down to blocks of 100).
  make(3, 350, 100);
  EXPECT_EQ(router_->stripe_bytes(), 300u);
  EXPECT_FALSE(router_->striped(350));
  EXPECT_TRUE(router_->striped(351));
  const auto f = file(7, 1050);  // 11 blocks: stripes [0,300) [300,600) [600,900) [900,1050)
  push_copy(f, 100);
  std::map<uint64_t, size_t> lane_of_offset;
  uint64_t covered = 0;
  for (size_t lane = 0; lane < 3; ++lane) {
    const std::vector<WorkItem> items = drain(lane);
    ASSERT_GE(items.size(), 2u) << lane;
    // The begin first and the end last on every lane, marked striped like every item.
    EXPECT_EQ(items.front().kind, Kind::kBegin) << lane;
    EXPECT_EQ(items.back().kind, Kind::kEnd) << lane;
    for (const WorkItem& item : items) {
      EXPECT_TRUE(item.striped);
      if (item.kind != Kind::kBlock) continue;
      EXPECT_EQ(lane_of_offset.count(item.offset), 0u) << "one lane per block";
      lane_of_offset[item.offset] = lane;
      covered += item.len;
    }
  }
  EXPECT_EQ(covered, 1050u);
  // Stripe k (each idle lane in turn, then the first of three equally busy ones).
  const size_t want[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 0, 0};
  for (uint64_t b = 0; b < 11; ++b) EXPECT_EQ(lane_of_offset.at(b * 100), want[b]) << b;
}

TEST_F(LaneRouterTest, EachCopyOfAStripedFileIsStripedAnew) {
  make(2, 150, 100);  // stripes of one block
  const auto f = file(1, 200);
  push_copy(f, 100, 0);  // blocks to lanes 0, 1
  router_->block_done(1, 100);
  push_copy(f, 100, 1);  // lane 1 is the least busy: blocks to lanes 1, 0
  const auto lane0 = drain(0);
  const auto lane1 = drain(1);
  std::vector<std::pair<uint8_t, uint64_t>> blocks0, blocks1;
  for (const auto& i : lane0) {
    if (i.kind == Kind::kBlock) blocks0.emplace_back(i.copy, i.offset);
  }
  for (const auto& i : lane1) {
    if (i.kind == Kind::kBlock) blocks1.emplace_back(i.copy, i.offset);
  }
  EXPECT_EQ(blocks0, (std::vector<std::pair<uint8_t, uint64_t>>{{0, 0}, {1, 100}}));
  EXPECT_EQ(blocks1, (std::vector<std::pair<uint8_t, uint64_t>>{{0, 100}, {1, 0}}));
  // Both copies' begin and end on both lanes: 2 x (begin + end) + 2 blocks each.
  EXPECT_EQ(lane0.size(), 6u);
  EXPECT_EQ(lane1.size(), 6u);
}

TEST_F(LaneRouterTest, NoStripingWithOneLaneOrStripeZero) {
  make(1, 100, 100);
  EXPECT_FALSE(router_->striped(1 << 30));
  queues_.clear();
  make(2, 0, 100);
  EXPECT_FALSE(router_->striped(1 << 30));
  push_copy(file(1, 1000), 100);
  EXPECT_EQ(drain(0).size(), 12u);  // whole, down lane 0
  EXPECT_TRUE(drain(1).empty());
}

TEST_F(LaneRouterTest, SkipsAndAbortsFollowTheRules) {
  make(2, 150, 100);
  push_copy(file(1, 100), 100);  // whole, lane 0 (100 queued)
  auto gone = file(0, 0);
  ASSERT_TRUE(router_->push(WorkItem{Kind::kSkip, gone}));  // the least busy: lane 1
  const auto big = file(2, 300);
  ASSERT_TRUE(router_->push(WorkItem{Kind::kBegin, big}));
  ASSERT_TRUE(router_->push(WorkItem{Kind::kBlock, big, 0, 0, 100}));
  WorkItem abort{Kind::kAbort, big};
  abort.reason = "read error";
  ASSERT_TRUE(router_->push(std::move(abort)));
  const auto lane0 = drain(0);
  const auto lane1 = drain(1);
  ASSERT_EQ(lane1.front().kind, Kind::kSkip);
  // The striped file's abort on both lanes, last.
  EXPECT_EQ(lane0.back().kind, Kind::kAbort);
  EXPECT_EQ(lane1.back().kind, Kind::kAbort);
  EXPECT_EQ(lane1.back().reason, "read error");
}

TEST_F(LaneRouterTest, AClosedRouterRefusesAndKeepsTheItem) {
  make(2, 0, 100);
  router_->close();
  const auto f = file(1, 100);
  WorkItem block{Kind::kBlock, f, 5, 0, 100};
  EXPECT_FALSE(router_->push(std::move(block)));
  EXPECT_EQ(block.buffer, 5);  // untouched: the reader gives the buffer back
  EXPECT_EQ(router_->queued(0) + router_->queued(1), 0u);
}

TEST_F(LaneRouterTest, ALaneTakenDownIsNeverChosenAgain) {
  make(3, 350, 100);
  EXPECT_EQ(router_->lanes_up(), 3u);
  EXPECT_TRUE(router_->take_down(1));
  EXPECT_TRUE(router_->take_down(1)) << "down already: still down, counted once";
  EXPECT_TRUE(router_->down(1));
  EXPECT_EQ(router_->lanes_up(), 2u);
  // Whole files in turn over lanes 0 and 2 only; a skip too.
  for (uint32_t id = 1; id <= 4; ++id) push_copy(file(id, 0), 100);
  ASSERT_TRUE(router_->push(WorkItem{Kind::kSkip, file(0, 0)}));
  // A striped file: announced and ended on the lanes up only, its data on them only.
  push_copy(file(9, 1050), 100);
  EXPECT_TRUE(drain(1).empty());
  for (size_t lane : {size_t{0}, size_t{2}}) {
    const std::vector<WorkItem> items = drain(lane);
    ASSERT_FALSE(items.empty()) << lane;
    for (const WorkItem& item : items) {
      if (item.meta->file_id == 9) {
        EXPECT_TRUE(item.striped);
        EXPECT_EQ(item.lanes, 0b101u) << "striped over the lanes up when it began";
      } else {
        EXPECT_EQ(item.lanes, uint64_t{1} << lane) << "a whole file's one lane";
      }
    }
  }
}

TEST_F(LaneRouterTest, TheLastLaneUpCannotBeTakenDown) {
  make(2, 150, 100);
  EXPECT_TRUE(router_->striped(151));
  EXPECT_TRUE(router_->take_down(0));
  EXPECT_FALSE(router_->striped(151)) << "one lane up: nothing to stripe over";
  EXPECT_FALSE(router_->take_down(1));
  EXPECT_FALSE(router_->down(1));
  EXPECT_EQ(router_->lanes_up(), 1u);
  push_copy(file(1, 300), 100);  // whole, down lane 1
  EXPECT_TRUE(drain(0).empty());
  EXPECT_EQ(drain(1).size(), 5u);
}

TEST_F(LaneRouterTest, AFileBegunOnALaneKeepsItAfterTheLaneWentDown) {
  // Its lane's transmitter drains what comes and fails the file as a whole: the file is not
  // split over two lanes midway.
  make(2, 0, 100);
  const auto f = file(1, 300);
  ASSERT_TRUE(router_->push(WorkItem{Kind::kBegin, f}));  // lane 0
  EXPECT_TRUE(router_->take_down(0));
  ASSERT_TRUE(router_->push(WorkItem{Kind::kBlock, f, 0, 0, 100}));
  ASSERT_TRUE(router_->push(WorkItem{Kind::kEnd, f}));
  push_copy(file(2, 100), 100);  // the next file: lane 1
  EXPECT_EQ(drain(0).size(), 3u);
  EXPECT_EQ(drain(1).size(), 3u);
}

}  // namespace
}  // namespace ddft::sender
