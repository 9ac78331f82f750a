// The file-system pool: work on its own threads, `done` on the reaping thread only, in the order
// the work finished; counts, waits, the inline mode and shutdown.
#include "receiver/delivery/fs_pool.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
using namespace std::chrono_literals;

// A door a work item waits at until the test opens it. Bounded: after a minute it opens by
// itself, so that a broken pool fails the test instead of hanging it.
class Gate {
 public:
  void open() { promise_.set_value(); }
  void pass() const { future_.wait_for(60s); }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

std::string thread_name() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

// Waits and reaps until `n` callbacks ran (or a minute went by); returns how many ran.
size_t reap_n(FsPool& pool, size_t n) {
  size_t got = 0;
  for (int i = 0; i < 600 && got < n; ++i) {
    pool.wait(100ms);
    got += pool.reap();
  }
  return got;
}

TEST(FsPool, WorkRunsOnThePoolsThreadsAndDoneOnTheReapingThread) {
  FsPool pool(3, "tpool");
  const auto me = std::this_thread::get_id();
  constexpr int kItems = 12;
  std::vector<std::thread::id> work_ids(kItems), done_ids(kItems);
  std::vector<std::string> names(kItems);
  for (int i = 0; i < kItems; ++i) {
    pool.post(
        [&, i] {
          work_ids[i] = std::this_thread::get_id();
          names[i] = thread_name();
        },
        [&, i] { done_ids[i] = std::this_thread::get_id(); });
  }
  ASSERT_EQ(reap_n(pool, kItems), size_t{kItems});
  for (int i = 0; i < kItems; ++i) {
    EXPECT_NE(work_ids[i], me) << i;
    EXPECT_TRUE(names[i] == "tpool1" || names[i] == "tpool2" || names[i] == "tpool3") << names[i];
    EXPECT_EQ(done_ids[i], me) << i;
  }
}

TEST(FsPool, DoneRunsOnlyInsideReap) {
  FsPool pool(2);
  std::atomic<bool> worked{false};
  int done = 0;
  pool.post([&] { worked = true; }, [&] { ++done; });
  // wait() returns once the item has finished; its done must still wait for reap().
  pool.wait(60s);
  EXPECT_TRUE(worked);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(pool.pending(), 1u);
  EXPECT_EQ(pool.reap(), 1u);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(pool.reap(), 0u);
  EXPECT_EQ(done, 1);
}

TEST(FsPool, DoneCallbacksComeInTheOrderTheWorkFinished) {
  // Three items at once on three threads, let finish in the order 2, 0, 1: the callbacks follow
  // that order, not the order of posting.
  FsPool pool(3);
  Gate gates[3];
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    pool.post([&, i] { gates[i].pass(); }, [&, i] { order.push_back(i); });
  }
  for (int i : {2, 0, 1}) {
    gates[i].open();
    EXPECT_EQ(reap_n(pool, 1), 1u) << i;
  }
  EXPECT_EQ(order, (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(pool.pending(), 0u);
}

TEST(FsPool, OneReapRunsEveryFinishedItemInOrder) {
  // One thread finishes its items in the order posted. When the last item's work runs, all the
  // others have finished: one reap() then runs all their callbacks, in that order.
  FsPool pool(1);
  std::vector<int> order;
  for (int i = 0; i < 20; ++i) pool.post([] {}, [&, i] { order.push_back(i); });
  std::promise<void> reached;
  pool.post([&] { reached.set_value(); }, [&] { order.push_back(20); });
  ASSERT_EQ(reached.get_future().wait_for(60s), std::future_status::ready);
  EXPECT_GE(pool.reap(), 20u);
  reap_n(pool, 21 - order.size());
  std::vector<int> want;
  for (int i = 0; i <= 20; ++i) want.push_back(i);
  EXPECT_EQ(order, want);
}

TEST(FsPool, PendingCountsUntilTheDoneRan) {
  FsPool pool(2);
  Gate gate;
  EXPECT_EQ(pool.pending(), 0u);
  for (int i = 0; i < 3; ++i) pool.post([&] { gate.pass(); }, [] {});
  EXPECT_EQ(pool.pending(), 3u);
  gate.open();
  EXPECT_EQ(reap_n(pool, 3), 3u);
  EXPECT_EQ(pool.pending(), 0u);
  // A done that posts the next step: the count stays right through it.
  int steps = 0;
  pool.post([] {},
            [&] {
              ++steps;
              pool.post([] {}, [&] { ++steps; });
            });
  EXPECT_EQ(reap_n(pool, 2), 2u);
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(pool.pending(), 0u);
}

TEST(FsPool, WaitReturnsWhenSomethingFinished) {
  FsPool pool(1);
  Gate gate;
  pool.post([&] { gate.pass(); }, [] {});
  std::jthread opener([&] {
    std::this_thread::sleep_for(50ms);
    gate.open();
  });
  // Not a speed check: the timeout is far beyond anything the item takes, so returning before it
  // tells a wake-up by the finished item from the timeout.
  const auto start = std::chrono::steady_clock::now();
  pool.wait(30s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(pool.reap(), 1u);  // it returned because the item finished, not before
}

TEST(FsPool, WaitReturnsAtOnceWhenNothingIsPendingOrOneIsWaiting) {
  FsPool pool(1);
  auto start = std::chrono::steady_clock::now();
  pool.wait(30s);  // nothing pending
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);

  pool.post([] {}, [] {});
  pool.wait(60s);
  start = std::chrono::steady_clock::now();
  pool.wait(30s);  // the finished item is still waiting for reap()
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(pool.reap(), 1u);
}

TEST(FsPool, NoThreadsRunsWorkInsidePost) {
  FsPool pool(0);
  const auto me = std::this_thread::get_id();
  std::thread::id ran_on;
  bool done = false;
  pool.post([&] { ran_on = std::this_thread::get_id(); }, [&] { done = true; });
  EXPECT_EQ(ran_on, me);  // already ran, here
  EXPECT_FALSE(done);     // but its done waits for reap()
  EXPECT_EQ(pool.pending(), 1u);
  const auto start = std::chrono::steady_clock::now();
  pool.wait(30s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(pool.reap(), 1u);
  EXPECT_TRUE(done);
  EXPECT_EQ(pool.pending(), 0u);
}

TEST(FsPool, DestructorFinishesQueuedWorkAndDropsTheCallbacks) {
  std::atomic<int> worked{0};
  int done = 0;
  Gate gate;
  std::jthread opener;
  {
    FsPool pool(1);
    pool.post(
        [&] {
          gate.pass();
          ++worked;
        },
        [&] { ++done; });
    for (int i = 0; i < 50; ++i) pool.post([&] { ++worked; }, [&] { ++done; });
    // Opened while the destructor waits for the one thread, which still has 50 items queued.
    opener = std::jthread([&] {
      std::this_thread::sleep_for(50ms);
      gate.open();
    });
  }
  EXPECT_EQ(worked, 51);
  EXPECT_EQ(done, 0);
}

TEST(FsPool, ThrowingWorkIsLoggedAndStillGetsItsDone) {
  testing::LogCapture log;
  FsPool pool(2);
  bool done = false;
  pool.post([] { throw std::runtime_error("disk on fire"); }, [&] { done = true; });
  EXPECT_EQ(reap_n(pool, 1), 1u);
  EXPECT_TRUE(done);
  EXPECT_EQ(pool.pending(), 0u);
  EXPECT_NE(log.text().find("Error: a file-system task failed: disk on fire"), std::string::npos)
      << log.text();
  // The thread survived: more work still runs.
  bool again = false;
  pool.post([] {}, [&] { again = true; });
  EXPECT_EQ(reap_n(pool, 1), 1u);
  EXPECT_TRUE(again);
}

// Fixed (found by this test): with 0 threads post() runs the work itself without the try/catch
// of the pool threads, so the exception leaves post() and the item's done never runs; pending()
// then counts it for ever (a Committer on it would stay busy()).
TEST(FsPool, ThrowingWorkWithNoThreadsStillGetsItsDone) {
  testing::LogCapture log;
  FsPool pool(0);
  bool done = false;
  EXPECT_NO_THROW(
      pool.post([] { throw std::runtime_error("disk on fire"); }, [&] { done = true; }));
  EXPECT_EQ(pool.reap(), 1u);
  EXPECT_TRUE(done);
  EXPECT_EQ(pool.pending(), 0u);
}

// Fixed (found by this test): the pool threads catch std::exception only; anything else thrown
// by a work item (`throw 42`) leaves the thread and std::terminate ends the receiver. Run in a
// child process so that the rest of this binary survives it.
TEST(FsPoolDeathTest, WorkThrowingANonStandardExceptionStillGetsItsDone) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        FsPool pool(1);
        bool done = false;
        pool.post([] { throw 42; }, [&] { done = true; });
        reap_n(pool, 1);
        std::_Exit(done ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// Fixed (found by this test): reap() takes every finished callback out of the shared list before
// running them; when one throws, the ones after it are lost: they never run and pending() counts
// them for ever, although reap()'s comment says a throwing callback leaves the count right.
TEST(FsPool, ACallbackThatThrowsDoesNotLoseTheOthers) {
  FsPool pool(0);  // both items finished before reap(), without waiting on threads
  bool second = false;
  pool.post([] {}, [] { throw std::runtime_error("callback failed"); });
  pool.post([] {}, [&] { second = true; });
  EXPECT_THROW(pool.reap(), std::runtime_error);
  EXPECT_EQ(pool.pending(), 1u);
  EXPECT_EQ(pool.reap(), 1u);
  EXPECT_TRUE(second);
  EXPECT_EQ(pool.pending(), 0u);
}

}  // namespace
}  // namespace ddft::receiver
