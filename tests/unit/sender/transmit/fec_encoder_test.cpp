// The sender's FEC window encoder on its own: window places, when a window is full, what close()
// emits (the parity's header fields, index-major order, shard lengths), that each window starts
// from clean parity, and that its parity rebuilds a lost source with the codec the receiver uses.
#include "sender/transmit/fec_encoder.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace ddft::sender {
namespace {

using Bytes = std::vector<uint8_t>;

struct Emitted {
  common::Parity pa;
  Bytes shard;
};

std::vector<Emitted> close_all(FecEncoder& enc) {
  std::vector<Emitted> out;
  enc.close([&](const common::Parity& pa, std::span<const uint8_t> shard) {
    out.push_back({pa, Bytes(shard.begin(), shard.end())});
  });
  return out;
}

Bytes source(size_t len, uint8_t seed) {
  Bytes b(len);
  for (size_t i = 0; i < len; ++i) b[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return b;
}

TEST(FecEncoder, PlacesSourcesAndSaysWhenTheWindowIsFull) {
  FecEncoder enc({3, 2, 2}, 100);  // a window of 6 sources
  EXPECT_FALSE(enc.window_open());
  EXPECT_EQ(enc.pending_parity(), 0u);
  for (uint16_t i = 0; i < 5; ++i) {
    EXPECT_EQ(enc.next_pos(), i);
    EXPECT_FALSE(enc.add(10 + i, source(50, static_cast<uint8_t>(i))));
    EXPECT_TRUE(enc.window_open());
  }
  EXPECT_EQ(enc.pending_parity(), 4u);  // both groups started: 2 x m
  EXPECT_TRUE(enc.add(15, source(50, 5)));
  const auto parity = close_all(enc);
  EXPECT_EQ(parity.size(), 4u);
  EXPECT_FALSE(enc.window_open());
  EXPECT_EQ(enc.next_pos(), 0u);
}

TEST(FecEncoder, CloseEmitsIndexMajorWithTheWindowsFieldsAndEachGroupsLongestSource) {
  FecEncoder enc({2, 2, 3}, 100);
  // Three sources: one in each group, the middle one longest.
  enc.add(40, source(10, 1));
  enc.add(41, source(30, 2));
  enc.add(42, source(20, 3));
  EXPECT_EQ(enc.pending_parity(), 6u);
  const auto parity = close_all(enc);
  ASSERT_EQ(parity.size(), 6u);
  const size_t longest[] = {10, 30, 20};
  for (size_t i = 0; i < parity.size(); ++i) {
    const common::Parity& pa = parity[i].pa;
    EXPECT_EQ(pa.window_seq, 40u);
    EXPECT_EQ(pa.count, 3u);
    EXPECT_EQ(pa.k, 2u);
    EXPECT_EQ(pa.m, 2u);
    EXPECT_EQ(pa.interleave, 3u);
    EXPECT_EQ(pa.index, i / 3) << i;  // index-major: every group's parity 0, then parity 1
    EXPECT_EQ(pa.group, i % 3) << i;
    EXPECT_EQ(parity[i].shard.size(), longest[i % 3]) << i;
  }
}

TEST(FecEncoder, APartialWindowEmitsParityOnlyForItsStartedGroups) {
  FecEncoder enc({4, 1, 4}, 64);
  enc.add(7, source(8, 1));
  enc.add(8, source(8, 2));
  EXPECT_EQ(enc.pending_parity(), 2u);
  const auto parity = close_all(enc);
  ASSERT_EQ(parity.size(), 2u);
  EXPECT_EQ(parity[0].pa.group, 0u);
  EXPECT_EQ(parity[1].pa.group, 1u);
  EXPECT_TRUE(close_all(enc).empty()) << "closing an empty window emits nothing";
}

TEST(FecEncoder, EachWindowStartsFromCleanParity) {
  // The same sources in two windows give the same parity: nothing of the first is left over.
  FecEncoder enc({2, 1, 1}, 64);
  enc.add(0, source(40, 9));
  enc.add(1, source(25, 8));
  const auto first = close_all(enc);
  enc.add(2, source(40, 9));
  enc.add(3, source(25, 8));
  const auto second = close_all(enc);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first[0].shard, second[0].shard);
  EXPECT_EQ(second[0].pa.window_seq, 2u);
}

TEST(FecEncoder, ParityRebuildsALostSourceWithTheReceiversCodec) {
  const common::FecParams p{3, 1, 1};
  FecEncoder enc(p, 64);
  std::vector<Bytes> src = {source(30, 1), source(30, 2), source(30, 3)};
  for (size_t i = 0; i < src.size(); ++i) enc.add(i, src[i]);
  const auto parity = close_all(enc);
  ASSERT_EQ(parity.size(), 1u);
  std::vector<Bytes> shards = {src[0], Bytes(30, 0xEE), src[2], parity[0].shard};
  std::vector<uint8_t*> ptrs;
  for (Bytes& s : shards) ptrs.push_back(s.data());
  const std::vector<bool> present = {true, false, true, true};
  common::RsCodec codec(p.k, p.m);
  ASSERT_TRUE(codec.rebuild(30, present, ptrs.data()));
  EXPECT_EQ(shards[1], src[1]);
}

TEST(FecEncoder, ASourceLongerThanThePacketSizeIsRefused) {
  FecEncoder enc({2, 1, 1}, 16);
  EXPECT_THROW(enc.add(0, source(17, 1)), std::logic_error);
}

}  // namespace
}  // namespace ddft::sender
