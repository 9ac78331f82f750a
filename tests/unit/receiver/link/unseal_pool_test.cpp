// The open workers: a batch prechecked by 1, 2 or 3 workers gives, item for item, what
// SessionGate::precheck() gives on one thread: decode status, what opening gave, the inner
// datagram and its salt and key. Damaged, truncated, unsealed and wrongly keyed datagrams are in
// every batch, spread so that each worker's share has some.
#include "receiver/link/unseal_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/fake_sender.hpp"

namespace ddft::receiver {
namespace {
using testing::Datagram;
using testing::sealed;

class UnsealPoolTest : public ::testing::TestWithParam<unsigned> {
 protected:
  UnsealPoolTest() {
    psk_.fill(0x42);
    other_.fill(0x24);
    common::Sealer good(psk_, tx_.session(), common::make_session_salt(), true);
    common::Sealer auth_only(psk_, tx_.session(), common::make_session_salt(), false);
    common::Sealer wrong(other_, tx_.session(), common::make_session_salt(), true);
    std::string content(60'000, '\0');
    for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 13);
    size_t n = 0;
    for (const Datagram& d : tx_.file(1, "a.bin", content)) {
      switch (n++ % 6) {
        case 0:
          datagrams_.push_back(sealed(good, d));
          break;
        case 1:
          datagrams_.push_back(sealed(auth_only, d));
          break;
        case 2: {
          Datagram bad = sealed(good, d);
          bad[bad.size() / 2] ^= 0x01;  // ciphertext changed: a bad tag
          datagrams_.push_back(bad);
          break;
        }
        case 3:
          datagrams_.push_back(sealed(wrong, d));
          break;
        case 4:
          datagrams_.push_back(d);  // not sealed at all
          break;
        default: {
          Datagram damaged = d;
          damaged[10] ^= 0x80;  // the header changed: a bad checksum
          datagrams_.push_back(damaged);
          break;
        }
      }
    }
  }
  // Items for every datagram; `truncate_every` th one as received cut short.
  std::vector<Prechecked> items(size_t truncate_every = 7) const {
    std::vector<Prechecked> out;
    for (size_t i = 0; i < datagrams_.size(); ++i) {
      Prechecked& pre = out.emplace_back();
      pre.data = datagrams_[i];
      pre.real_len = datagrams_[i].size() + (i % truncate_every == 3 ? 100 : 0);
    }
    return out;
  }
  // What one thread with one Opener finds: the reference.
  std::vector<Prechecked> reference(std::vector<uint8_t>* buffers, bool keyed) const {
    std::vector<Prechecked> out = items();
    buffers->resize(out.size() * kMax);
    common::Opener opener({psk_});
    for (size_t i = 0; i < out.size(); ++i) {
      SessionGate::precheck(keyed ? &opener : nullptr,
                            std::span<uint8_t>(*buffers).subspan(i * kMax, kMax), &out[i]);
    }
    return out;
  }

  static constexpr size_t kMax = 9216;
  testing::FakeSender tx_{0x51, 1000};
  common::Key psk_{};
  common::Key other_{};
  std::vector<Datagram> datagrams_;
};

void expect_same(const Prechecked& got, const Prechecked& want, size_t i) {
  SCOPED_TRACE("item " + std::to_string(i));
  ASSERT_EQ(got.status, want.status);
  EXPECT_EQ(got.opened, want.opened);
  if (want.status != common::DecodeStatus::kOk) return;
  EXPECT_EQ(got.packet.header.seq, want.packet.header.seq);
  if (want.opened != common::OpenStatus::kOk) return;
  EXPECT_EQ(got.salt, want.salt);
  EXPECT_EQ(got.key_index, want.key_index);
  ASSERT_EQ(got.inner_len, want.inner_len);
  EXPECT_TRUE(std::equal(got.inner.begin(), got.inner.begin() + got.inner_len, want.inner.begin()));
}

TEST_P(UnsealPoolTest, EveryWorkerCountGivesWhatOneThreadGives) {
  std::vector<uint8_t> buffers;
  const std::vector<Prechecked> want = reference(&buffers, true);
  ASSERT_GT(want.size(), 60u);
  size_t opened = 0;
  for (const Prechecked& w : want) opened += w.opened == common::OpenStatus::kOk;
  ASSERT_GT(opened, 10u) << "the batch has datagrams that open";
  ASSERT_LT(opened, want.size() / 2) << "and more that do not";

  UnsealPool pool(GetParam(), {psk_}, kMax, 32);
  EXPECT_EQ(pool.workers(), GetParam());
  // Many runs through one pool: its workers meet again for each batch.
  std::vector<Prechecked> all = items();
  for (size_t first = 0; first < all.size(); first += pool.batch()) {
    const size_t n = std::min(pool.batch(), all.size() - first);
    std::span<Prechecked> batch(all.data() + first, n);
    pool.run(batch);
    // Checked now: the inner buffers are the pool's until the next run.
    for (size_t i = 0; i < n; ++i) expect_same(batch[i], want[first + i], first + i);
  }
  // The helpers did their shares (the caller alone would give the same answers).
  if (GetParam() > 1) {
    EXPECT_GT(pool.items_by_helpers(), all.size() / 4);
  } else {
    EXPECT_EQ(pool.items_by_helpers(), 0u);
  }
}

TEST_P(UnsealPoolTest, WithoutAKeyItemsAreOnlyDecoded) {
  std::vector<uint8_t> buffers;
  const std::vector<Prechecked> want = reference(&buffers, false);
  UnsealPool pool(GetParam(), {}, kMax, 512);
  std::vector<Prechecked> all = items();
  pool.run(all);
  for (size_t i = 0; i < all.size(); ++i) {
    expect_same(all[i], want[i], i);
    EXPECT_EQ(all[i].opened, common::OpenStatus::kNotSealed);
    EXPECT_TRUE(all[i].inner.empty());
  }
}

TEST_P(UnsealPoolTest, AFewItemsAndNoneAreFine) {
  std::vector<uint8_t> buffers;
  const std::vector<Prechecked> want = reference(&buffers, true);
  UnsealPool pool(GetParam(), {psk_}, kMax, 8);
  std::vector<Prechecked> all = items();
  pool.run(std::span<Prechecked>());
  for (size_t n = 1; n <= 3; ++n) {
    std::span<Prechecked> few(all.data(), n);
    pool.run(few);
    for (size_t i = 0; i < n; ++i) expect_same(few[i], want[i], i);
  }
  if (GetParam() > 1) {
    EXPECT_EQ(pool.items_by_helpers(), 0u) << "too few to wake the helpers";
  }
}

TEST_P(UnsealPoolTest, MoreItemsThanItsBatchAreRefused) {
  UnsealPool pool(GetParam(), {psk_}, kMax, 4);
  std::vector<Prechecked> all = items();
  EXPECT_THROW(pool.run(std::span<Prechecked>(all.data(), 5)), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(Workers, UnsealPoolTest, ::testing::Values(1u, 2u, 3u),
                         [](const auto& p) { return std::to_string(p.param) + "Workers"; });

TEST(UnsealPoolDefault, OnePerCoreBeyondTwoAtMostFour) {
  EXPECT_EQ(default_open_workers(0), 1u);  // hardware_concurrency() may not know
  EXPECT_EQ(default_open_workers(1), 1u);
  EXPECT_EQ(default_open_workers(2), 1u);
  EXPECT_EQ(default_open_workers(3), 1u);
  EXPECT_EQ(default_open_workers(4), 2u);
  EXPECT_EQ(default_open_workers(6), 4u);
  EXPECT_EQ(default_open_workers(64), 4u);
}

}  // namespace
}  // namespace ddft::receiver
