// The ingest stage's overflow policy: a full ring drops and counts, and never blocks the link.
#include "receiver/link/ingest.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

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

// Runs `ingest` on a thread of its own until `done()` (at most 5 s), then stops it.
template <typename Done>
void run_until(Ingest& ingest, Done done) {
  std::stop_source stop;
  std::thread t([&] { ingest.run(stop.get_token()); });
  for (int i = 0; i < 500 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop.request_stop();
  t.join();
}

TEST(Ingest, FullRingDropsAndCountsWithoutBlocking) {
  // Room for 100 datagrams of 64 bytes (each a buffer of 64 while reserved, 32 once kept).
  ByteRing ring(100 * ByteRing::stride(64));
  ScriptedSource link(10000);
  Ingest ingest(link, ring, 16, 64);
  // Nobody drains the ring: the ingest thread must still consume the whole link.
  run_until(ingest, [&] { return link.done(); });
  EXPECT_TRUE(link.done());
  EXPECT_EQ(ingest.counters().datagrams.load(), 10000u);
  // Kept: what fits; 4-byte datagrams take 32 bytes each, so far more than 100 buffers' worth.
  size_t kept = 0;
  uint32_t expect = 0;
  for (uint64_t pos = ring.consumed(); pos < ring.produced();) {
    const auto rec = ring.next(pos);
    pos = rec.next;
    if (rec.pad) continue;
    uint32_t v = 0;
    std::memcpy(&v, rec.bytes.data(), 4);
    EXPECT_EQ(v, expect++) << "what was kept is the first ones, in order";
    ++kept;
  }
  EXPECT_GT(kept, 150u);
  EXPECT_EQ(ingest.counters().ring_full_drops.load(), 10000u - kept);
  EXPECT_EQ(ingest.counters().ring_high_water.load(), ring.used());
}

// A source that hands over bundles (as a GRO socket does): the ring keeps them whole, and the
// counters count their datagrams. `rounds` receive calls give one bundle each (3 datagrams of
// 1,000 bytes and one of 500) after the first, which gives that bundle and a lone datagram.
class BundleSource final : public common::DatagramSource {
 public:
  explicit BundleSource(int rounds = 1) : rounds_(rounds) {}
  std::error_code receive(std::span<const std::span<uint8_t>>, std::span<size_t>, size_t* count,
                          std::chrono::milliseconds) override {
    *count = 0;
    return {};
  }
  size_t max_bundle() const override { return 4096; }
  std::error_code receive_bundles(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens,
                                  std::span<size_t> segs, size_t* count,
                                  std::chrono::milliseconds timeout) override {
    *count = 0;
    if (sent_ || bufs.empty()) {
      std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(1)));
      return {};
    }
    std::memset(bufs[0].data(), 'a', 3500);
    lens[0] = 3500;
    segs[0] = 1000;
    *count = 1;
    if (calls_ == 0 && bufs.size() > 1) {
      std::memset(bufs[1].data(), 'b', 200);
      lens[1] = 200;
      segs[1] = 0;
      *count = 2;
    }
    if (++calls_ == rounds_) sent_ = true;
    return {};
  }
  std::atomic<bool> sent_{false};

 private:
  int rounds_;
  int calls_ = 0;
};

TEST(Ingest, BundlesAreKeptWholeAndTheirDatagramsCounted) {
  ByteRing ring(64 * 1024);
  BundleSource link;
  Ingest ingest(link, ring, 64, 9216);
  run_until(ingest, [&] { return link.sent_.load(); });
  EXPECT_EQ(ingest.counters().datagrams.load(), 5u);
  EXPECT_EQ(ingest.counters().bytes.load(), 3700u);
  std::vector<size_t> sizes;
  for (uint64_t pos = ring.consumed(); pos < ring.produced();) {
    const auto rec = ring.next(pos);
    pos = rec.next;
    if (rec.pad) continue;
    common::for_each_datagram(
        rec.bytes, rec.real_len, rec.segment,
        [&](std::span<const uint8_t> d, size_t) { sizes.push_back(d.size()); });
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{1000, 1000, 1000, 500, 200}));
}

TEST(Ingest, AFullRingDropsWholeBundlesAndCountsTheirDatagrams) {
  // Room for one receive buffer of 4,096 bytes: the first call fills it, and the ring stays
  // full (nobody drains it).
  ByteRing ring(ByteRing::stride(4096));
  BundleSource link(10);
  Ingest ingest(link, ring, 64, 9216);
  run_until(ingest, [&] { return link.sent_.load(); });
  // The first call had room for one buffer (so no lone datagram): 10 bundles of 4 datagrams.
  EXPECT_EQ(ingest.counters().datagrams.load(), 40u) << "every datagram of every bundle";
  uint64_t kept_records = 0;
  for (uint64_t pos = ring.consumed(); pos < ring.produced(); pos = ring.next(pos).next) {
    kept_records += !ring.next(pos).pad;
  }
  EXPECT_EQ(kept_records, 1u);
  // What the ring did not keep is counted datagram by datagram, not bundle by bundle.
  EXPECT_EQ(ingest.counters().ring_full_drops.load(), 36u);
}

}  // namespace
}  // namespace ddft::receiver
