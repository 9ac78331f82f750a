// BoundedQueue: FIFO order, a full queue blocks its producer until a consumer takes an item, and
// close() wakes everyone and drains what is left.
#include "common/bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace ddft::common {
namespace {
using namespace std::chrono_literals;

TEST(BoundedQueue, KeepsOrderAndMovesOnlyTypes) {
  BoundedQueue<std::unique_ptr<int>> q(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(q.push(std::make_unique<int>(i)));
  for (int i = 0; i < 4; ++i) {
    auto item = q.pop();
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(**item, i);
  }
}

TEST(BoundedQueue, AFullQueueHoldsTheProducerUntilAnItemIsTaken) {
  BoundedQueue<int> q(2);
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(q.push(int{i}));
      ++pushed;
    }
  });
  // Whatever the timing, the producer can never be more than the capacity ahead of the consumer.
  for (int i = 0; i < 5; ++i) {
    const auto item = q.pop();
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(*item, i);
    EXPECT_LE(pushed.load(), i + 1 + 2);
  }
  producer.join();
  EXPECT_EQ(pushed.load(), 5);
}

TEST(BoundedQueue, CloseWakesABlockedConsumerAndRefusesNewItems) {
  BoundedQueue<int> q(1);
  std::optional<int> got = 7;
  std::thread consumer([&] { got = q.pop(); });
  q.close();
  consumer.join();
  EXPECT_FALSE(got.has_value());
  EXPECT_FALSE(q.push(1));
  EXPECT_TRUE(q.closed());
}

TEST(BoundedQueue, CloseWakesABlockedProducer) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.push(1));
  bool second = true;
  std::thread producer([&] { second = q.push(2); });
  q.close();
  producer.join();
  EXPECT_FALSE(second);
}

TEST(BoundedQueue, AClosedQueueStillHandsOutWhatItHolds) {
  BoundedQueue<int> q(3);
  q.push(1);
  q.push(2);
  q.close();
  EXPECT_FALSE(q.closed()) << "closed() means closed and drained";
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop_for(1ms), 2);
  EXPECT_TRUE(q.closed());
  EXPECT_EQ(q.pop(), std::nullopt);
}

TEST(BoundedQueue, PopForGivesUpOnAnEmptyQueue) {
  BoundedQueue<int> q(1);
  EXPECT_EQ(q.pop_for(1ms), std::nullopt);
  q.push(5);
  EXPECT_EQ(q.pop_for(1ms), 5);
}

}  // namespace
}  // namespace ddft::common
