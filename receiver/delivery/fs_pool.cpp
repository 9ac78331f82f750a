#include "receiver/delivery/fs_pool.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <exception>

#include "common/named_thread.hpp"

namespace ddft::receiver {

FsPool::FsPool(unsigned threads, const std::string& name) {
  for (unsigned i = 0; i < threads; ++i) {
    threads_.push_back(
        common::start_named_thread(fmt::format("{}{}", name, i + 1), [this] { run(); }));
  }
}

FsPool::~FsPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

namespace {
// Work must not throw; when it does anyway, the pool goes on and its `done` still runs.
void run_work(const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& e) {
    spdlog::error("Error: a file-system task failed: {}", e.what());
  } catch (...) {
    spdlog::error("Error: a file-system task failed (unknown exception)");
  }
}
}  // namespace

void FsPool::post(std::function<void()> work, std::function<void()> done) {
  ++pending_;
  if (threads_.empty()) {
    run_work(work);
    std::lock_guard lock(mu_);
    finished_.push_back(std::move(done));
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(work), std::move(done)});
  }
  work_cv_.notify_one();
}

size_t FsPool::reap() {
  std::deque<std::function<void()>> got;
  {
    std::lock_guard lock(mu_);
    got.swap(finished_);
  }
  // Counted down before each callback runs: a callback that posts more work, or throws, leaves
  // the count right.
  size_t n = 0;
  while (!got.empty()) {
    auto done = std::move(got.front());
    got.pop_front();
    --pending_;
    ++n;
    try {
      if (done) done();
    } catch (...) {
      // The ones not run yet stay first in line for the next reap().
      std::lock_guard lock(mu_);
      finished_.insert(finished_.begin(), std::make_move_iterator(got.begin()),
                       std::make_move_iterator(got.end()));
      throw;
    }
  }
  return n;
}

void FsPool::wait(std::chrono::nanoseconds timeout) {
  if (pending_ == 0) return;
  std::unique_lock lock(mu_);
  done_cv_.wait_for(lock, timeout, [&] { return !finished_.empty(); });
}

void FsPool::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to do
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run_work(item.work);
    lock.lock();
    finished_.push_back(std::move(item.done));
    done_cv_.notify_all();
  }
}

}  // namespace ddft::receiver
