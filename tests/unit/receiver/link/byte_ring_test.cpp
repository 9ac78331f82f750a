#include "receiver/link/byte_ring.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace ddft::receiver {
namespace {

// Everything the ring holds from consumed() on, as (first byte, length, segment) per record;
// pads skipped. Does not release.
struct Seen {
  uint8_t first;
  size_t len;
  size_t real_len;
  size_t segment;
};
std::vector<Seen> read_all(const ByteRing& r) {
  std::vector<Seen> out;
  for (uint64_t pos = r.consumed(); pos < r.produced();) {
    const auto rec = r.next(pos);
    EXPECT_GT(rec.next, pos);
    pos = rec.next;
    if (!rec.pad) {
      out.push_back({rec.bytes.empty() ? uint8_t{0} : rec.bytes[0], rec.bytes.size(), rec.real_len,
                     rec.segment});
    }
  }
  return out;
}

// Receives `lens.size()` datagrams of those lengths, each filled with its tag, into one
// reservation of buffers of `max_len`; returns how many the ring took.
size_t produce(ByteRing& r, const std::vector<size_t>& lens, size_t max_len, uint8_t tag,
               const std::vector<size_t>& segs = {}) {
  const size_t n = r.reserve(lens.size(), max_len);
  for (size_t i = 0; i < n; ++i) {
    auto b = r.buffer(i);
    EXPECT_EQ(b.size(), max_len);
    std::memset(b.data(), tag + static_cast<int>(i), std::min(lens[i], max_len));
  }
  std::vector<size_t> s = segs.empty() ? std::vector<size_t>(lens.size(), 0) : segs;
  r.commit(n, lens.data(), s.data());
  return n;
}

TEST(ByteRing, SmallDatagramsTakeTheirOwnSizeNotTheLargest) {
  ByteRing r(64 * 1024);
  // 100-byte announces in buffers of 9216: each takes 16 + 100 rounded up to 16 = 128 bytes.
  ASSERT_EQ(produce(r, std::vector<size_t>(6, 100), 9216, 1), 6u);
  EXPECT_EQ(r.used(), 6 * 128u);
  const auto seen = read_all(r);
  ASSERT_EQ(seen.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(seen[i].first, 1 + i) << "moved down whole and in order";
    EXPECT_EQ(seen[i].len, 100u);
    EXPECT_EQ(seen[i].real_len, 100u);
  }
}

TEST(ByteRing, LongDatagramsStayWhereTheKernelPutThemBehindAPad) {
  ByteRing r(64 * 1024);
  // A short one, then a long one: the long one is not copied, the gap before it is a pad.
  ASSERT_EQ(produce(r, {100, 9000, 50}, 9216, 7), 3u);
  const auto seen = read_all(r);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].first, 7);
  EXPECT_EQ(seen[1].first, 8);
  EXPECT_EQ(seen[1].len, 9000u);
  EXPECT_EQ(seen[2].first, 9);
  EXPECT_EQ(seen[2].len, 50u);
  // Used: the second buffer's start, its record, and the third moved down after it.
  EXPECT_EQ(r.used(),
            ByteRing::stride(9216) + ByteRing::round_up(16 + 9000) + ByteRing::round_up(16 + 50));
}

TEST(ByteRing, FullRingTakesNothingAndReleasingMakesRoom) {
  ByteRing r(4 * ByteRing::stride(1000));
  EXPECT_EQ(produce(r, std::vector<size_t>(8, 1000), 1000, 0), 4u);
  EXPECT_EQ(r.reserve(1, 1000), 0u) << "full: the producer must drop, not overwrite";
  const uint64_t end = r.produced();
  r.release(end);
  EXPECT_EQ(r.used(), 0u);
  EXPECT_EQ(produce(r, std::vector<size_t>(2, 1000), 1000, 0), 2u);
}

TEST(ByteRing, AReservationThatDoesNotFitBeforeTheEndWrapsBehindAPad) {
  const size_t stride = ByteRing::stride(1000);
  ByteRing r(3 * stride + 512);
  uint8_t tag = 0;
  uint8_t expect = 0;
  for (int round = 0; round < 20; ++round) {
    // Takes as many as fit before the memory's end (at least one: the ring is empty).
    const size_t n = produce(r, {1000, 1000}, 1000, tag);
    ASSERT_GE(n, 1u) << "round " << round;
    tag = static_cast<uint8_t>(tag + n);
    const auto seen = read_all(r);
    ASSERT_EQ(seen.size(), n);
    for (const auto& s : seen) {
      EXPECT_EQ(s.first, expect++);
      EXPECT_EQ(s.len, 1000u);
    }
    r.release(r.produced());
  }
  EXPECT_GT(r.produced(), 4 * r.capacity()) << "it went round several times";
}

TEST(ByteRing, TruncatedLengthIsReportedAndABundleKeepsItsSegmentSize) {
  ByteRing r(64 * 1024);
  ASSERT_EQ(produce(r, {5000, 600}, 512, 3, {0, 0}), 2u);
  ASSERT_EQ(produce(r, {3 * 1000 + 10}, 4096, 9, {1000}), 1u);
  const auto seen = read_all(r);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].len, 512u) << "never more than the buffer";
  EXPECT_GT(seen[0].real_len, 512u) << "and known to be cut";
  EXPECT_GT(seen[1].real_len, 512u);
  EXPECT_EQ(seen[2].len, 3010u);
  EXPECT_EQ(seen[2].real_len, 3010u);
  EXPECT_EQ(seen[2].segment, 1000u);
}

TEST(ByteRing, WaitTimesOutWhenEmptyAndWakesOnCommit) {
  ByteRing r(64 * 1024);
  EXPECT_EQ(r.wait(std::chrono::milliseconds(1)), 0u);
  std::thread producer([&] { produce(r, {10, 10, 10}, 64, 0); });
  // Generous bound: only the wake-up matters, not how fast it is.
  size_t n = 0;
  for (int i = 0; i < 100 && n == 0; ++i) n = r.wait(std::chrono::milliseconds(100));
  producer.join();
  EXPECT_EQ(n, 3 * 32u);
}

TEST(ByteRing, SpscTransfersEverythingInOrderThroughWraps) {
  ByteRing r(16 * 1024 + 48);
  constexpr uint32_t kCount = 200000;
  std::thread producer([&] {
    uint32_t next = 0;
    std::vector<size_t> lens(8), segs(8, 0);
    while (next < kCount) {
      // Mixed sizes: 4 to 1,000 bytes, so records are moved, padded and wrapped.
      const size_t want = std::min<size_t>(8, kCount - next);
      const size_t n = r.reserve(want, 1024);
      for (size_t i = 0; i < n; ++i) {
        const uint32_t v = next + static_cast<uint32_t>(i);
        lens[i] = 4 + (v * 37) % 997;
        std::memcpy(r.buffer(i).data(), &v, 4);
      }
      r.commit(n, lens.data(), segs.data());
      next += static_cast<uint32_t>(n);
    }
  });
  uint32_t expect = 0;
  while (expect < kCount) {
    r.wait(std::chrono::milliseconds(50));
    uint64_t pos = r.consumed();
    const uint64_t end = r.produced();
    while (pos < end) {
      const auto rec = r.next(pos);
      pos = rec.next;
      if (rec.pad) continue;
      uint32_t v = 0;
      std::memcpy(&v, rec.bytes.data(), 4);
      ASSERT_EQ(v, expect);
      ASSERT_EQ(rec.bytes.size(), 4 + (v * 37) % 997);
      ++expect;
    }
    r.release(pos);
  }
  producer.join();
}

}  // namespace
}  // namespace ddft::receiver
