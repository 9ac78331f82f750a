// The mux between the channels' routers and the lanes' transmitters: order kept per (channel,
// lane), an urgent channel's items ahead of a queued bulk, each lane fed only its own, a capped
// channel held until its clock allows, closing and draining.
#include "sender/transmit/channel_mux.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace ddft::sender {
namespace {
using namespace std::chrono;
using Kind = WorkItem::Kind;

WorkItem item(Kind kind, uint32_t file, uint64_t offset = 0, size_t len = 0) {
  WorkItem w;
  w.kind = kind;
  auto meta = std::make_shared<FileMeta>();
  meta->file_id = file;
  w.meta = meta;
  w.offset = offset;
  w.len = len;
  return w;
}

constexpr size_t kMuxBlock = size_t{1} << 20;

// Pops what `lane` has now: (file id, kind) in the order they come.
std::vector<std::pair<uint32_t, Kind>> drain(WorkFeed& out, size_t n) {
  std::vector<std::pair<uint32_t, Kind>> got;
  for (size_t i = 0; i < n; ++i) {
    auto w = out.pop_for(milliseconds(200));
    if (!w) break;
    got.emplace_back(w->meta->file_id, w->kind);
  }
  return got;
}

TEST(ChannelMux, OneChannelIsAQueuePerLaneThatClosesOnceDrained) {
  common::FakeClock clock;
  ChannelMux mux(std::vector<ChannelPolicy>(1), 2, 8, clock);
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBegin, 1)));
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBlock, 1, 0, kMuxBlock)));
  ASSERT_TRUE(mux.input(0, 1).push(item(Kind::kBegin, 2)));
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kEnd, 1)));
  mux.input(0, 0).close();
  EXPECT_FALSE(mux.input(0, 0).push(item(Kind::kBegin, 3))) << "closed";
  EXPECT_FALSE(mux.output(0).closed()) << "items wait";
  EXPECT_EQ(drain(mux.output(0), 10), (std::vector<std::pair<uint32_t, Kind>>{
                                          {1, Kind::kBegin}, {1, Kind::kBlock}, {1, Kind::kEnd}}));
  EXPECT_TRUE(mux.output(0).closed());
  EXPECT_FALSE(mux.output(0).pop().has_value()) << "closed and drained: no wait";
  EXPECT_FALSE(mux.output(1).closed()) << "lane 1's input is still open";
  EXPECT_EQ(drain(mux.output(1), 1), (std::vector<std::pair<uint32_t, Kind>>{{2, Kind::kBegin}}));
  EXPECT_FALSE(mux.output(1).pop_for(milliseconds(1)).has_value()) << "nothing yet";
  mux.close();
  EXPECT_TRUE(mux.output(1).closed());
}

TEST(ChannelMux, AnUrgentFileGoesAheadOfTheBulkAlreadyQueued) {
  common::FakeClock clock;
  // Channel 0: bulk (class 1); channel 1: urgent (class 0).
  ChannelMux mux({{1, 1, 0, 0}, {0, 1, 0, 0}}, 1, 16, clock);
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBegin, 1)));
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBlock, 1, i * kMuxBlock, kMuxBlock)));
  }
  EXPECT_EQ(drain(mux.output(0), 2),
            (std::vector<std::pair<uint32_t, Kind>>{{1, Kind::kBegin}, {1, Kind::kBlock}}));
  // The urgent file is ready: its items come next, then the bulk goes on.
  ASSERT_TRUE(mux.input(1, 0).push(item(Kind::kBegin, 2)));
  ASSERT_TRUE(mux.input(1, 0).push(item(Kind::kBlock, 2, 0, 1000)));
  ASSERT_TRUE(mux.input(1, 0).push(item(Kind::kEnd, 2)));
  EXPECT_EQ(drain(mux.output(0), 4),
            (std::vector<std::pair<uint32_t, Kind>>{
                {2, Kind::kBegin}, {2, Kind::kBlock}, {2, Kind::kEnd}, {1, Kind::kBlock}}));
}

TEST(ChannelMux, ACappedChannelWaitsForItsClock) {
  common::FakeClock clock;
  // 1 MB/s: a 1 MiB block, then the next 1.05 s later (less the cap's burst).
  ChannelMux mux({{0, 1, 1e6, 0}}, 1, 8, clock);
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBlock, 1, 0, kMuxBlock)));
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBlock, 1, kMuxBlock, kMuxBlock)));
  ASSERT_TRUE(mux.output(0).pop_for(milliseconds(200)).has_value());
  EXPECT_FALSE(mux.output(0).pop_for(milliseconds(20)).has_value()) << "held by its cap";
  clock.advance(milliseconds(1000));
  EXPECT_FALSE(mux.output(0).pop_for(milliseconds(20)).has_value()) << "still held at 1 s";
  clock.advance(milliseconds(50));
  EXPECT_TRUE(mux.output(0).pop_for(milliseconds(200)).has_value());
}

TEST(ChannelMux, ALaneThatDropsWhatItTakesIsNotHeldByACap) {
  common::FakeClock clock;
  // 1 MB/s: after its first block the channel would wait a second per block.
  ChannelMux mux({{0, 1, 1e6, 0}}, 1, 8, clock);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBlock, 1, i * kMuxBlock, kMuxBlock)));
  }
  ASSERT_TRUE(mux.output(0).pop_for(milliseconds(200)).has_value());
  EXPECT_FALSE(mux.output(0).pop_for(milliseconds(20)).has_value()) << "held by its cap";
  mux.output(0).draining();  // a stop: what comes is dropped
  EXPECT_EQ(drain(mux.output(0), 10).size(), 3u) << "the rest at once, on the same clock";
}

TEST(ChannelMux, AFullInputBlocksOnlyItsOwnChannel) {
  common::FakeClock clock;
  ChannelMux mux(std::vector<ChannelPolicy>(2), 1, 1, clock);
  ASSERT_TRUE(mux.input(0, 0).push(item(Kind::kBegin, 1)));
  // Channel 0's queue is full: its next push waits for the transmitter, on a thread of its own.
  std::jthread blocked([&] { EXPECT_TRUE(mux.input(0, 0).push(item(Kind::kEnd, 1))); });
  // Channel 1 is not held by it.
  ASSERT_TRUE(mux.input(1, 0).push(item(Kind::kBegin, 2)));
  const auto got = drain(mux.output(0), 3);
  blocked.join();
  EXPECT_EQ(got.size(), 3u);
  mux.close();
}

TEST(ChannelMux, ANoRoomQueueIsRefused) {
  common::FakeClock clock;
  EXPECT_THROW(ChannelMux(std::vector<ChannelPolicy>(1), 1, 0, clock), std::invalid_argument);
}

}  // namespace
}  // namespace ddft::sender
