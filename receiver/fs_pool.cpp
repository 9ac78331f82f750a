#include "receiver/fs_pool.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <exception>

namespace ddft::receiver {

FsPool::FsPool(unsigned threads, const std::string& name) {
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i, name] {
      const std::string n = fmt::format("{}{}", name, i + 1).substr(0, 15);
      pthread_setname_np(pthread_self(), n.c_str());
      run();
    });
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

void FsPool::post(std::function<void()> work, std::function<void()> done) {
  ++pending_;
  if (threads_.empty()) {
    work();
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
    if (done) done();
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
    try {
      item.work();
    } catch (const std::exception& e) {
      spdlog::error("Error: a file-system task failed: {}", e.what());
    }
    lock.lock();
    finished_.push_back(std::move(item.done));
    done_cv_.notify_all();
  }
}

}  // namespace ddft::receiver
