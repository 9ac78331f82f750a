// AlignedBuffer: page-aligned, zero-filled, move-only memory; and the pseudo-random fill.
#include "common/aligned_buffer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ddft::common {
namespace {

TEST(AlignedBuffer, IsPageAlignedAndZeroFilled) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (const bool populate : {false, true}) {
    AlignedBuffer b(3 * page + 17, populate);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % page, 0u);
    EXPECT_EQ(b.size(), 3 * page + 17);
    EXPECT_EQ(b.span().size(), b.size());
    EXPECT_TRUE(std::all_of(b.data(), b.data() + b.size(), [](uint8_t c) { return c == 0; }));
    b.data()[b.size() - 1] = 0xAB;  // the whole size is writable
    EXPECT_EQ(b.data()[b.size() - 1], 0xAB);
  }
}

TEST(AlignedBuffer, DefaultIsEmptyAndMovingHandsTheMemoryOver) {
  AlignedBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
  AlignedBuffer a(8192);
  a.data()[5] = 42;
  uint8_t* const mem = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), mem);
  EXPECT_EQ(b.size(), 8192u);
  EXPECT_EQ(b.data()[5], 42);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the contract says empty
  EXPECT_EQ(a.size(), 0u);
  AlignedBuffer c(4096);
  c = std::move(b);
  EXPECT_EQ(c.data(), mem);
  EXPECT_EQ(c.size(), 8192u);
}

TEST(AlignedBuffer, LockSucceedsOrSaysWhy) {
  AlignedBuffer b(64 * 1024);
  std::string why;
  const bool locked = b.lock(&why);
  // As root this locks; without the privilege RLIMIT_MEMLOCK may refuse it, and *why says so.
  EXPECT_TRUE(locked || why == std::strerror(ENOMEM) || why == std::strerror(EPERM) ||
              why == std::strerror(EAGAIN))
      << why;
}

TEST(FillPseudoRandom, IsDeterministicAndNotConstant) {
  std::vector<uint8_t> a(4096), b(4096);
  fill_pseudo_random(a);
  fill_pseudo_random(b);
  EXPECT_EQ(a, b);
  // Incompressible enough that no byte value dominates.
  std::vector<int> counts(256, 0);
  for (uint8_t c : a) ++counts[c];
  EXPECT_LT(*std::max_element(counts.begin(), counts.end()), 64);
  std::vector<uint8_t> odd(13);  // a length that is not a multiple of 8 is filled to the end
  fill_pseudo_random(odd);
  EXPECT_NE(std::count(odd.begin(), odd.end(), 0), 13);
}

}  // namespace
}  // namespace ddft::common
