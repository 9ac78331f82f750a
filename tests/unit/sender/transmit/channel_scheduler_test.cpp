// The channels' sharing policy on a simulated link (virtual time, no thread): weights within a
// class, strict priority between classes, minimum shares, rate caps over every lane, an idle
// channel earning no burst, and the policies it refuses.
#include "sender/transmit/channel_scheduler.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace ddft::sender {
namespace {
using namespace std::chrono;
using common::Clock;

constexpr uint64_t kReadBlock = uint64_t{1} << 20;  // the reader's block: 1 MiB

// Lanes of `lane_rate` bytes/s each, sent on in turn, every channel always ready with blocks
// (or only while `ready` says so): the bytes each channel sent. Blocks are kReadBlock bytes, or
// what item_size() sets for a channel.
class Link {
 public:
  Link(ChannelScheduler& s, double lane_rate, size_t lanes = 1)
      : s_(s), lane_rate_(lane_rate), lane_free_(lanes, Clock::time_point{}) {}

  // Runs until `until` (virtual time since the start); `ready(c, t)`: whether channel c has a
  // block at t.
  template <class Ready>
  void run(duration<double> until, Ready ready) {
    const Clock::time_point end = start_ + duration_cast<Clock::duration>(until);
    bytes_.resize(s_.channels(), 0);
    while (true) {
      // The lane that is free first sends next.
      size_t lane = 0;
      for (size_t i = 1; i < lane_free_.size(); ++i) {
        if (lane_free_[i] < lane_free_[lane]) lane = i;
      }
      Clock::time_point& now = lane_free_[lane];
      if (now < start_) now = start_;
      if (now >= end) break;
      std::vector<std::optional<uint64_t>> next(s_.channels());
      sizes_.resize(s_.channels(), kReadBlock);
      for (size_t c = 0; c < next.size(); ++c) {
        if (ready(c, now - start_)) next[c] = sizes_[c];
      }
      Clock::time_point retry{};
      const std::optional<size_t> c = s_.pick(lane, next, now, &retry);
      if (!c) {
        // Idle until a cap lets one go, or for a millisecond when nothing is ready.
        now = retry == Clock::time_point::max() ? now + milliseconds(1) : retry;
        continue;
      }
      const uint64_t size = sizes_[*c];
      s_.charge(lane, *c, size, now);
      bytes_[*c] += size;
      picks_.push_back(*c);
      now +=
          duration_cast<Clock::duration>(duration<double>(static_cast<double>(size) / lane_rate_));
    }
  }
  void run(duration<double> until) {
    run(until, [](size_t, Clock::duration) { return true; });
  }
  void item_size(size_t c, uint64_t bytes) {
    sizes_.resize(s_.channels(), kReadBlock);
    sizes_.at(c) = bytes;
  }
  double bytes(size_t c) const { return static_cast<double>(bytes_.at(c)); }
  double total() const {
    double t = 0;
    for (uint64_t b : bytes_) t += static_cast<double>(b);
    return t;
  }
  const std::vector<size_t>& picks() const { return picks_; }

 private:
  ChannelScheduler& s_;
  double lane_rate_;
  std::vector<Clock::time_point> lane_free_;
  Clock::time_point start_{seconds(1000)};
  std::vector<uint64_t> bytes_;
  std::vector<uint64_t> sizes_;
  std::vector<size_t> picks_;
};

constexpr double kLaneRate = 100e6;

TEST(ChannelScheduler, TwoChannelsOfOneClassShareByTheirWeights) {
  ChannelScheduler s({{0, 3, 0, 0}, {0, 1, 0, 0}}, 1);
  Link link(s, kLaneRate);
  link.run(seconds(20));
  EXPECT_NEAR(link.bytes(0) / link.bytes(1), 3.0, 3.0 * 0.05);
  EXPECT_NEAR(link.total(), 20 * kLaneRate, kReadBlock) << "the link never idles";
}

TEST(ChannelScheduler, AHigherClassTakesTheWholeLinkWhileItHasData) {
  ChannelScheduler s({{1, 1, 0, 0}, {0, 1, 0, 0}}, 1);
  Link link(s, kLaneRate);
  link.run(seconds(5));
  EXPECT_EQ(link.bytes(0), 0.0) << "the lower class waits: no minimum share";
  EXPECT_GT(link.bytes(1), 0.0);
}

TEST(ChannelScheduler, AnUrgentBlockGoesNextWhateverTheBulkHasQueued) {
  ChannelScheduler s({{1, 1, 0, 0}, {0, 1, 0, 0}}, 1);
  Link link(s, kLaneRate);
  // The bulk channel alone for 2 s, then the urgent one has a block.
  link.run(seconds(3), [](size_t c, Clock::duration t) { return c == 0 || t >= seconds(2); });
  const std::vector<size_t>& picks = link.picks();
  // Blocks take about 10.5 ms: the first pick at or after 2 s is the urgent one.
  const size_t at_2s = static_cast<size_t>(2.0 * kLaneRate / kReadBlock) + 1;
  ASSERT_GT(picks.size(), at_2s);
  EXPECT_EQ(picks[at_2s - 1], 0u);
  EXPECT_EQ(picks[at_2s], 1u);
}

TEST(ChannelScheduler, ALowerClassWithAMinimumShareGetsItUnderASaturatedUrgentClass) {
  ChannelScheduler s({{0, 1, 0, 0}, {1, 1, 0, 0.10}}, 1);
  Link link(s, kLaneRate);
  link.run(seconds(20));
  const double share = link.bytes(1) / link.total();
  EXPECT_GE(share, 0.09);
  EXPECT_LE(share, 0.11) << "no more than its share while the urgent class has data";
}

TEST(ChannelScheduler, ARateCapHoldsAndTheRestOfTheLinkGoesToTheOthers) {
  // 30 MB/s cap on a 100 MB/s lane, beside an uncapped channel of a lower class.
  ChannelScheduler s({{0, 1, 30e6, 0}, {1, 1, 0, 0}}, 1);
  Link link(s, kLaneRate);
  link.run(seconds(20));
  EXPECT_NEAR(link.bytes(0) / 20, 30e6, 30e6 * 0.02);
  EXPECT_NEAR(link.total(), 20 * kLaneRate, 2 * kReadBlock) << "what the cap leaves is used";
}

TEST(ChannelScheduler, ARateCapHoldsWhenItsItemsWaitBehindLongerOnes) {
  // Small capped items, each ready at its deadline but sent only once the lane is through the
  // other channel's longer block: the lateness is the lane's, not the channel's, and costs it
  // nothing.
  ChannelScheduler s({{0, 1, 4.0 * (1 << 20), 0}, {0, 1, 0, 0}}, 1);
  Link link(s, 40.0 * (1 << 20));
  link.item_size(0, 256 * 1024);
  link.run(seconds(20));
  EXPECT_NEAR(link.bytes(0) / 20, 4.0 * (1 << 20), 4.0 * (1 << 20) * 0.02);
}

TEST(ChannelScheduler, ACappedChannelsFileEndsAsSoonAsItsLastBlockIsOut) {
  ChannelScheduler s({{0, 1, 1e6, 0}}, 1);
  const Clock::time_point t0{seconds(1000)};
  const std::vector<std::optional<uint64_t>> block = {kReadBlock};
  const std::vector<std::optional<uint64_t>> end = {0};
  ASSERT_EQ(s.pick(0, block, t0), 0u);
  s.charge(0, 0, kReadBlock, t0);
  Clock::time_point retry{};
  EXPECT_FALSE(s.pick(0, block, t0 + milliseconds(1), &retry)) << "a second's worth was sent";
  EXPECT_GT(retry, t0 + milliseconds(900));
  EXPECT_EQ(s.pick(0, end, t0 + milliseconds(1)), 0u) << "its end costs nothing: it goes now";
}

TEST(ChannelScheduler, ARateCapSpansEveryLane) {
  ChannelScheduler s({{0, 1, 50e6, 0}}, 2);
  Link link(s, kLaneRate, 2);
  link.run(seconds(20));
  EXPECT_NEAR(link.bytes(0) / 20, 50e6, 50e6 * 0.02) << "50 MB/s over both lanes, not each";
}

TEST(ChannelScheduler, AllCappedSaysWhenOneMayGoAgain) {
  ChannelScheduler s({{0, 1, 1e6, 0}}, 1);
  const Clock::time_point t0{seconds(10)};
  const std::vector<std::optional<uint64_t>> ready = {kReadBlock};
  ASSERT_EQ(s.pick(0, ready, t0), std::optional<size_t>(0));
  s.charge(0, 0, kReadBlock, t0);
  Clock::time_point retry{};
  EXPECT_FALSE(s.pick(0, ready, t0 + milliseconds(1), &retry).has_value());
  // 1 MiB at 1 MB/s: 1.048576 s after the first block, less the burst an idle channel may
  // catch up.
  EXPECT_EQ(retry, t0 + microseconds(1'048'576) - ChannelScheduler::kCapBurst);
  EXPECT_EQ(s.pick(0, ready, retry), std::optional<size_t>(0));
  const std::vector<std::optional<uint64_t>> none(1);
  EXPECT_FALSE(s.pick(0, none, retry, &retry).has_value());
  EXPECT_EQ(retry, Clock::time_point::max()) << "nothing ready: no time to wait for";
}

TEST(ChannelScheduler, AChannelBackFromIdleEarnsNoBurst) {
  // Equal weights; channel 1 idle for the first 10 s, then both have data for 10 s.
  ChannelScheduler s({{0, 1, 0, 0}, {0, 1, 0, 0}}, 1);
  Link link(s, kLaneRate);
  link.run(seconds(20), [](size_t c, Clock::duration t) { return c == 0 || t >= seconds(10); });
  // Over the last 10 s they share evenly: channel 1 did not catch up on the 10 s it sat out.
  EXPECT_NEAR(link.bytes(1), 5 * kLaneRate, 2 * kReadBlock);
}

TEST(ChannelScheduler, RefusesAPolicyItCannotFollow) {
  EXPECT_THROW(ChannelScheduler({}, 1), std::invalid_argument);
  EXPECT_THROW(ChannelScheduler({{0, 1, 0, 0}}, 0), std::invalid_argument);
  EXPECT_THROW(ChannelScheduler({{0, 0, 0, 0}}, 1), std::invalid_argument);
  EXPECT_THROW(ChannelScheduler({{0, 1, -1, 0}}, 1), std::invalid_argument);
  EXPECT_THROW(ChannelScheduler({{0, 1, 0, 1.0}}, 1), std::invalid_argument);
  EXPECT_THROW(ChannelScheduler({{0, 1, 0, 0.6}, {1, 1, 0, 0.4}}, 1), std::invalid_argument);
  EXPECT_NO_THROW(ChannelScheduler({{0, 1, 0, 0.5}, {1, 1, 0, 0.4}}, 1));
}

}  // namespace
}  // namespace ddft::sender
