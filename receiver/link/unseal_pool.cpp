#include "receiver/link/unseal_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "common/named_thread.hpp"

namespace ddft::receiver {

UnsealPool::UnsealPool(unsigned workers, const std::vector<common::Key>& keys, size_t max_packet,
                       size_t batch)
    : max_packet_(max_packet),
      batch_(batch),
      start_(static_cast<std::ptrdiff_t>(std::max(workers, 1u))),
      done_(static_cast<std::ptrdiff_t>(std::max(workers, 1u))) {
  if (batch == 0) throw std::invalid_argument("an UnsealPool needs a batch of at least 1");
  workers = std::max(workers, 1u);
  if (!keys.empty()) inner_.resize(batch * max_packet);
  errors_.resize(workers);
  for (unsigned w = 0; w < workers; ++w) {
    openers_.push_back(keys.empty() ? nullptr : std::make_unique<common::Opener>(keys));
  }
  try {
    for (unsigned w = 1; w < workers; ++w) {
      threads_.push_back(common::start_named_thread("dd-open", [this, w] { helper(w); }));
    }
  } catch (...) {
    // A helper could not start: those that did are waiting at start_ for `workers` arrivals.
    // The missing ones arrive (and leave the barrier), the caller arrives, and all see stopping_.
    stopping_ = true;
    for (size_t missing = workers - 1 - threads_.size(); missing > 0; --missing) {
      start_.arrive_and_drop();
    }
    start_.arrive_and_wait();
    threads_.clear();
    throw;
  }
}

UnsealPool::~UnsealPool() {
  if (threads_.empty()) return;
  stopping_ = true;
  start_.arrive_and_wait();  // the helpers wake, see stopping_ and return
  threads_.clear();          // joins
}

void UnsealPool::run(std::span<Prechecked> items) {
  if (items.size() > batch_) throw std::logic_error("UnsealPool::run: more items than its batch");
  items_ = items;
  // A few items are not worth waking the helpers for.
  shares_ = threads_.empty() || items.size() < 2 * openers_.size() ? 1 : openers_.size();
  if (shares_ == 1) {
    work(0);
    return;
  }
  start_.arrive_and_wait();
  work(0);
  done_.arrive_and_wait();
  std::exception_ptr first;
  for (std::exception_ptr& e : errors_) {
    if (e && !first) first = e;
    e = nullptr;  // none is thrown again by a later run
  }
  if (first) std::rethrow_exception(first);
}

void UnsealPool::work(unsigned w) {
  const size_t n = items_.size();
  const size_t begin = n * w / shares_;
  const size_t end = n * (w + 1) / shares_;
  common::Opener* opener = openers_[w].get();
  try {
    for (size_t i = begin; i < end; ++i) {
      std::span<uint8_t> inner;
      if (opener != nullptr) {
        inner = std::span<uint8_t>(inner_).subspan(i * max_packet_, max_packet_);
      }
      SessionGate::precheck(opener, inner, &items_[i]);
    }
    if (w != 0) by_helpers_ += end - begin;
  } catch (...) {
    if (shares_ == 1) throw;  // on the caller's thread: straight out of run()
    errors_[w] = std::current_exception();
  }
}

void UnsealPool::helper(unsigned w) {
  while (true) {
    start_.arrive_and_wait();
    if (stopping_) return;
    work(w);
    done_.arrive_and_wait();
  }
}

unsigned default_open_workers(unsigned cores) {
  return std::clamp(cores > 2 ? cores - 2 : 1u, 1u, 4u);
}

unsigned open_workers(unsigned configured) {
  return configured != 0 ? configured : default_open_workers(std::thread::hardware_concurrency());
}

}  // namespace ddft::receiver
