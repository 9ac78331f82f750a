// ZFrames: compressed blocks gathered from their pieces, decompressed within their stated size.
#include "receiver/assembly/zframes.hpp"

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace ddft::receiver {
namespace {

constexpr size_t kPiece = 1000;

std::vector<uint8_t> text_block(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < n) s += "line " + std::to_string(rng() % 1000) + " of a log, level INFO\n";
  return {s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::vector<uint8_t> compress(const std::vector<uint8_t>& raw, bool checksum = true) {
  std::vector<uint8_t> out(ZSTD_compressBound(raw.size()));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

common::ZDataHeader header_of(uint64_t offset, size_t raw_len, size_t frame_len) {
  common::ZDataHeader z;
  z.file_id = 1;
  z.offset = offset;
  z.raw_len = static_cast<uint32_t>(raw_len);
  z.frame_len = static_cast<uint32_t>(frame_len);
  return z;
}

// Adds piece `i` of `frame` (`rebuilt`: as FEC made it).
ZFrames::Result add_piece(ZFrames& zf, common::ZDataHeader z, const std::vector<uint8_t>& frame,
                          size_t i, uint32_t file = 1, bool rebuilt = false) {
  z.frame_off = static_cast<uint32_t>(i * kPiece);
  const size_t len = std::min(kPiece, frame.size() - i * kPiece);
  return zf.add(7, file, z, std::span<const uint8_t>(frame.data() + i * kPiece, len), kPiece,
                rebuilt);
}

size_t pieces(const std::vector<uint8_t>& frame) { return (frame.size() + kPiece - 1) / kPiece; }

TEST(ZFrames, GathersPiecesInAnyOrderAndGivesTheBlockBack) {
  const auto raw = text_block(200000, 1);
  const auto frame = compress(raw);
  ASSERT_GT(pieces(frame), 3u);
  ZFrames zf(8 << 20);
  const auto z = header_of(0, raw.size(), frame.size());
  std::vector<size_t> order(pieces(frame));
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  for (size_t k = 0; k + 1 < order.size(); ++k) {
    EXPECT_EQ(add_piece(zf, z, frame, order[k]).status, ZFrames::Status::kPending);
  }
  EXPECT_EQ(add_piece(zf, z, frame, order[1]).status, ZFrames::Status::kDuplicate);
  EXPECT_EQ(zf.frames(), 1u);
  EXPECT_EQ(zf.held_bytes(), frame.size() + ZFrames::kFrameOverhead);
  const ZFrames::Result r = add_piece(zf, z, frame, order.back());
  ASSERT_EQ(r.status, ZFrames::Status::kComplete);
  EXPECT_TRUE(std::equal(r.raw.begin(), r.raw.end(), raw.begin(), raw.end()));
  EXPECT_EQ(zf.frames(), 0u);
  EXPECT_EQ(zf.held_bytes(), 0u);
  EXPECT_EQ(zf.counters().frames_done, 1u);
  EXPECT_EQ(zf.counters().raw_bytes, raw.size());
}

// The pieces FEC rebuilt are counted when the frame they went into is whole; a rebuilt piece
// the frame had already is a duplicate, not counted.
TEST(ZFrames, CountsTheRebuiltPiecesOfAWholeFrame) {
  const auto raw = text_block(100000, 2);
  const auto frame = compress(raw);
  ASSERT_GT(pieces(frame), 4u);
  ZFrames zf(8 << 20);
  const auto z = header_of(0, raw.size(), frame.size());
  EXPECT_EQ(add_piece(zf, z, frame, 0, 1, true).status, ZFrames::Status::kPending);
  EXPECT_EQ(add_piece(zf, z, frame, 0, 1, true).status, ZFrames::Status::kDuplicate);
  EXPECT_EQ(add_piece(zf, z, frame, 2, 1, true).status, ZFrames::Status::kPending);
  ZFrames::Result r;
  for (size_t i = 1; i < pieces(frame); ++i) {
    if (i != 2) r = add_piece(zf, z, frame, i);
  }
  ASSERT_EQ(r.status, ZFrames::Status::kComplete);
  EXPECT_EQ(r.rebuilt, 2u);
  // The next frame starts from none.
  for (size_t i = 0; i < pieces(frame); ++i) r = add_piece(zf, z, frame, i);
  ASSERT_EQ(r.status, ZFrames::Status::kComplete);
  EXPECT_EQ(r.rebuilt, 0u);
}

TEST(ZFrames, ABombIsRefusedWithinTheBlocksSize) {
  // 4 MiB of zeros compress to a few hundred bytes; the pieces claim a block of 100,000.
  const std::vector<uint8_t> zeros(4 << 20, 0);
  const auto frame = compress(zeros);
  ZFrames zf(8 << 20);
  auto z = header_of(0, 100000, frame.size());
  ZFrames::Result r;
  for (size_t i = 0; i < pieces(frame); ++i) r = add_piece(zf, z, frame, i);
  ASSERT_EQ(r.status, ZFrames::Status::kBad);
  EXPECT_NE(r.error.find("claims to hold 4194304 bytes"), std::string::npos) << r.error;
  // Without the size in its header, the output cap stops it.
  const auto no_size = [&] {
    std::vector<uint8_t> out(ZSTD_compressBound(zeros.size()));
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    const size_t n = ZSTD_compress2(c, out.data(), out.size(), zeros.data(), zeros.size());
    ZSTD_freeCCtx(c);
    out.resize(n);
    return out;
  }();
  z = header_of(1 << 20, 100000, no_size.size());
  for (size_t i = 0; i < pieces(no_size); ++i) r = add_piece(zf, z, no_size, i);
  ASSERT_EQ(r.status, ZFrames::Status::kBad);
  EXPECT_NE(r.error.find("expands past its size"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("offset 1048576 (100000 bytes)"), std::string::npos) << r.error;
  EXPECT_EQ(zf.counters().frames_bad, 2u);
}

TEST(ZFrames, AFrameThatIsShortOrDamagedFails) {
  const auto raw = text_block(50000, 2);
  auto frame = compress(raw);
  ZFrames zf(8 << 20);
  // The block says more bytes than the frame holds.
  auto z = header_of(0, raw.size() + 10, frame.size());
  ZFrames::Result r;
  for (size_t i = 0; i < pieces(frame); ++i) r = add_piece(zf, z, frame, i);
  ASSERT_EQ(r.status, ZFrames::Status::kBad);
  EXPECT_NE(r.error.find("claims to hold 50000 bytes"), std::string::npos) << r.error;
  // One byte of the content changed: the frame's checksum says so.
  frame[frame.size() / 2] ^= 0x5A;
  z = header_of(0, raw.size(), frame.size());
  for (size_t i = 0; i < pieces(frame); ++i) r = add_piece(zf, z, frame, i);
  ASSERT_EQ(r.status, ZFrames::Status::kBad);
  EXPECT_NE(r.error.find("does not decompress"), std::string::npos) << r.error;
  // Not a zstd frame at all.
  std::vector<uint8_t> junk(3000, 'j');
  z = header_of(0, 10000, junk.size());
  for (size_t i = 0; i < pieces(junk); ++i) r = add_piece(zf, z, junk, i);
  ASSERT_EQ(r.status, ZFrames::Status::kBad);
  EXPECT_NE(r.error.find("not a zstd frame"), std::string::npos) << r.error;
}

TEST(ZFrames, APieceThatDisagreesWithItsFrameIsDropped) {
  const auto raw = text_block(100000, 3);
  const auto frame = compress(raw);
  ZFrames zf(8 << 20);
  const auto z = header_of(0, raw.size(), frame.size());
  EXPECT_EQ(add_piece(zf, z, frame, 0).status, ZFrames::Status::kPending);
  auto other = z;
  other.raw_len = z.raw_len - 1;
  EXPECT_EQ(add_piece(zf, other, frame, 1).status, ZFrames::Status::kMismatch);
  ZFrames::Result r;
  for (size_t i = 1; i < pieces(frame); ++i) r = add_piece(zf, z, frame, i);
  EXPECT_EQ(r.status, ZFrames::Status::kComplete);
}

TEST(ZFrames, StaysWithinItsBudgetDroppingTheOldestFrame) {
  // A budget is at least one largest block (4 MiB): three 1.5 MiB frames do not fit together.
  std::vector<std::vector<uint8_t>> raws, frames;
  for (unsigned s = 0; s < 3; ++s) {
    std::vector<uint8_t> r(3 << 19);
    std::mt19937 rng(s);
    for (auto& b : r) b = static_cast<uint8_t>(rng());  // a frame as long as its block
    raws.push_back(r);
    frames.push_back(compress(r));
  }
  ASSERT_GT(frames[0].size(), (4u << 20) / 3);
  ZFrames zf(1);
  for (unsigned s = 0; s < 3; ++s) {
    const auto z = header_of(s * (3u << 19), raws[s].size(), frames[s].size());
    EXPECT_EQ(add_piece(zf, z, frames[s], 0).status, ZFrames::Status::kPending);
    EXPECT_LE(zf.held_bytes(), 4u << 20);
  }
  EXPECT_EQ(zf.counters().frames_evicted, 1u);
  EXPECT_EQ(zf.frames(), 2u);
  // The oldest (block 0) was dropped: its next piece starts it afresh.
  const auto z0 = header_of(0, raws[0].size(), frames[0].size());
  EXPECT_EQ(add_piece(zf, z0, frames[0], 1).status, ZFrames::Status::kPending);
  EXPECT_EQ(zf.counters().frames_evicted, 2u);
}

TEST(ZFrames, AOnePieceFrameIsDoneAtOnceAndDropsNothingForRoom) {
  std::vector<uint8_t> big(3 << 19);
  std::mt19937 rng(5);
  for (auto& b : big) b = static_cast<uint8_t>(rng());
  const auto big_frame = compress(big);
  ZFrames zf(1);  // 4 MiB: two big partial frames fill it
  add_piece(zf, header_of(0, big.size(), big_frame.size()), big_frame, 0);
  add_piece(zf, header_of(3 << 19, big.size(), big_frame.size()), big_frame, 0, 2);
  const auto raw = text_block(5000, 6);
  const auto small = compress(raw);
  ASSERT_LE(small.size(), kPiece);
  const ZFrames::Result r = add_piece(zf, header_of(1 << 22, raw.size(), small.size()), small, 0);
  ASSERT_EQ(r.status, ZFrames::Status::kComplete);
  EXPECT_TRUE(std::equal(r.raw.begin(), r.raw.end(), raw.begin(), raw.end()));
  EXPECT_EQ(zf.counters().frames_evicted, 0u);
  EXPECT_EQ(zf.frames(), 2u);
}

TEST(ZFrames, DropsWhatAFileHeldWhenItEnds) {
  const auto raw = text_block(100000, 4);
  const auto frame = compress(raw);
  ZFrames zf(8 << 20);
  const auto z = header_of(0, raw.size(), frame.size());
  add_piece(zf, z, frame, 0, 1);
  add_piece(zf, z, frame, 0, 2);
  EXPECT_EQ(zf.frames(), 2u);
  zf.drop_file(7, 1);
  EXPECT_EQ(zf.frames(), 1u);
  EXPECT_EQ(zf.held_bytes(), frame.size() + ZFrames::kFrameOverhead);
  zf.clear();
  EXPECT_EQ(zf.frames(), 0u);
  EXPECT_EQ(zf.held_bytes(), 0u);
}

}  // namespace
}  // namespace ddft::receiver
