// The ingest stage's overflow policy: a full ring drops and counts, and never blocks the link.
#include "receiver/ingest.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace ddft::receiver {
namespace {

// A link that delivers `total` numbered datagrams as fast as asked, then nothing.
class ScriptedSource final : public common::DatagramSource {
 public:
  explicit ScriptedSource(uint32_t total) : total_(total) {}
  std::error_code receive(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens,
                          size_t* count, std::chrono::milliseconds timeout) override {
    *count = 0;
    while (*count < bufs.size() && next_ < total_) {
      std::memcpy(bufs[*count].data(), &next_, 4);
      lens[*count] = 4;
      ++next_;
      ++*count;
    }
    if (*count == 0) std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(1)));
    return {};
  }
  bool done() const { return next_.load() >= total_; }

 private:
  uint32_t total_;
  std::atomic<uint32_t> next_{0};
};

TEST(Ingest, FullRingDropsAndCountsWithoutBlocking) {
  SlotRing ring(100, 64);
  ScriptedSource link(1000);
  Ingest ingest(link, ring, 16);
  std::stop_source stop;
  std::thread t([&] { ingest.run(stop.get_token()); });
  // Nobody drains the ring: the ingest thread must still consume the whole link.
  for (int i = 0; i < 500 && !link.done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop.request_stop();
  t.join();
  EXPECT_TRUE(link.done());
  EXPECT_EQ(ingest.counters().datagrams.load(), 1000u);
  EXPECT_EQ(ring.available(), 100u);
  EXPECT_EQ(ingest.counters().ring_full_drops.load(), 900u);
  EXPECT_EQ(ingest.counters().ring_high_water.load(), 100u);
  // What was kept is the first 100, in order.
  for (size_t i = 0; i < 100; ++i) {
    size_t len = 0;
    uint32_t v = 0;
    std::memcpy(&v, ring.filled_slot(i, &len).data(), 4);
    EXPECT_EQ(v, i);
  }
}

}  // namespace
}  // namespace ddft::receiver
