#include "receiver/slot_ring.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace ddft::receiver {
namespace {

void produce(SlotRing& r, size_t n, uint8_t tag) {
  for (size_t i = 0; i < n; ++i) {
    r.free_slot(i)[0] = static_cast<uint8_t>(tag + i);
    r.set_length(i, 1);
  }
  r.publish(n);
}

TEST(SlotRing, EmptyThenFull) {
  SlotRing r(4, 64);
  EXPECT_EQ(r.available(), 0u);
  EXPECT_EQ(r.free_slots(), 4u);
  produce(r, 4, 10);
  EXPECT_EQ(r.available(), 4u);
  EXPECT_EQ(r.free_slots(), 0u);  // full: the producer must drop, not overwrite
  size_t len = 0;
  EXPECT_EQ(r.filled_slot(0, &len)[0], 10);
  EXPECT_EQ(r.filled_slot(3, &len)[0], 13);
  r.release(4);
  EXPECT_EQ(r.available(), 0u);
  EXPECT_EQ(r.free_slots(), 4u);
}

TEST(SlotRing, WrapsAround) {
  SlotRing r(3, 16);
  uint8_t expect = 0;
  for (int round = 0; round < 10; ++round) {
    produce(r, 2, static_cast<uint8_t>(round * 2));
    size_t len = 0;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(r.filled_slot(i, &len)[0], expect++);
      EXPECT_EQ(len, 1u);
    }
    r.release(2);
  }
}

TEST(SlotRing, TruncatedLengthIsReported) {
  SlotRing r(2, 16);
  r.set_length(0, 100);
  r.publish(1);
  size_t len = 0;
  auto s = r.filled_slot(0, &len);
  EXPECT_EQ(len, 100u);      // the datagram's real length
  EXPECT_EQ(s.size(), 16u);  // never more than the slot
}

TEST(SlotRing, WaitTimesOutWhenEmptyAndWakesOnPublish) {
  SlotRing r(8, 16);
  EXPECT_EQ(r.wait(std::chrono::milliseconds(1)), 0u);
  std::thread producer([&] { produce(r, 3, 0); });
  // Generous bound: only the wake-up matters, not how fast it is.
  size_t n = 0;
  for (int i = 0; i < 100 && n == 0; ++i) n = r.wait(std::chrono::milliseconds(100));
  producer.join();
  EXPECT_EQ(n, 3u);
}

TEST(SlotRing, SpscTransfersEverythingInOrder) {
  SlotRing r(16, 8);
  constexpr uint32_t kCount = 200000;
  std::thread producer([&] {
    uint32_t next = 0;
    while (next < kCount) {
      const size_t free = std::min<size_t>(r.free_slots(), kCount - next);
      for (size_t i = 0; i < free; ++i) {
        const uint32_t v = next + static_cast<uint32_t>(i);
        std::memcpy(r.free_slot(i).data(), &v, 4);
        r.set_length(i, 4);
      }
      r.publish(free);
      next += static_cast<uint32_t>(free);
    }
  });
  uint32_t expect = 0;
  while (expect < kCount) {
    const size_t n = r.wait(std::chrono::milliseconds(50));
    for (size_t i = 0; i < n; ++i) {
      size_t len = 0;
      uint32_t v = 0;
      std::memcpy(&v, r.filled_slot(i, &len).data(), 4);
      ASSERT_EQ(v, expect++);
    }
    r.release(n);
  }
  producer.join();
}

}  // namespace
}  // namespace ddft::receiver
