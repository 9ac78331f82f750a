// The buffer pool: every buffer handed out once, acquire() waits while all are out, close()
// wakes it, and the buffers are page-aligned pieces of one slab.
#include "common/buffer_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

namespace ddft::common {
namespace {

TEST(BufferPool, HandsOutEachBufferOnceAndTakesThemBack) {
  BufferPool pool(4, 8192);
  EXPECT_EQ(pool.count(), 4u);
  EXPECT_EQ(pool.buffer_size(), 8192u);
  EXPECT_EQ(pool.memory().size(), 4 * 8192u);
  std::set<int> out;
  for (int i = 0; i < 4; ++i) {
    const int b = pool.try_acquire();
    ASSERT_GE(b, 0);
    EXPECT_TRUE(out.insert(b).second) << "handed out twice: " << b;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.data(b)) % 4096, 0u) << "page-aligned";
    EXPECT_EQ(pool.data(b), pool.memory().data() + static_cast<size_t>(b) * 8192);
  }
  EXPECT_EQ(pool.try_acquire(), -1) << "all out: try_acquire does not wait";
  pool.release(*out.begin());
  EXPECT_EQ(pool.try_acquire(), *out.begin());
}

TEST(BufferPool, AcquireWaitsForAReleaseAndCloseWakesIt) {
  BufferPool pool(1, 4096);
  const int only = pool.acquire();
  ASSERT_GE(only, 0);
  std::atomic<int> got{-2};
  std::thread waiter([&] { got = pool.acquire(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(got.load(), -2) << "still waiting: nothing was released";
  pool.release(only);
  waiter.join();
  EXPECT_EQ(got.load(), only);
  std::thread closed([&] { got = pool.acquire(); });
  pool.close();
  closed.join();
  EXPECT_EQ(got.load(), -1) << "a closed pool wakes acquire() with -1";
  EXPECT_EQ(pool.try_acquire(), -1);
}

TEST(BufferPool, PseudoRandomFillIsTheSameEveryTimeAndNotZero) {
  BufferPool a(2, 4096);
  BufferPool b(2, 4096);
  a.fill_pseudo_random();
  b.fill_pseudo_random();
  EXPECT_EQ(std::memcmp(a.memory().data(), b.memory().data(), a.memory().size()), 0);
  size_t zeros = 0;
  for (uint8_t v : a.memory()) zeros += v == 0;
  EXPECT_LT(zeros, a.memory().size() / 64);
}

}  // namespace
}  // namespace ddft::common
