#include "sender/transmit/session_list.hpp"

#include <algorithm>
#include <stdexcept>

namespace ddft::sender {

SessionList::SessionList(size_t lanes, bool keep_all)
    : cursor_(lanes, 0), done_(lanes, false), down_(lanes, false), keep_all_(keep_all) {
  if (lanes == 0) throw std::invalid_argument("a session list needs a lane");
}

void SessionList::add(ListedFile file) {
  std::lock_guard lock(mu_);
  entries_.push_back(std::move(file));
  ++files_;
  if (keep_all_ && files_ > kCompleteListMax) {
    // Too many for the complete list at the end: keep only what some lane has not sent yet.
    keep_all_ = false;
    trim();
  }
}

size_t SessionList::waiting(size_t lane) const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(base_ + entries_.size() - std::max(cursor_[lane], base_));
}

std::vector<ListedFile> SessionList::take(size_t lane) {
  std::lock_guard lock(mu_);
  return take_locked(lane);
}

std::vector<ListedFile> SessionList::take_locked(size_t lane) {
  // A lane down may have been passed by the trim.
  cursor_[lane] = std::max(cursor_[lane], base_);
  const auto from = entries_.begin() + static_cast<std::ptrdiff_t>(cursor_[lane] - base_);
  std::vector<ListedFile> out(from, entries_.end());
  cursor_[lane] = base_ + entries_.size();
  trim();
  return out;
}

std::vector<ListedFile> SessionList::take_last(size_t lane, bool* complete) {
  std::lock_guard lock(mu_);
  *complete = keep_all_;
  if (!keep_all_) return take_locked(lane);
  cursor_[lane] = base_ + entries_.size();
  return {entries_.begin(), entries_.end()};
}

uint64_t SessionList::files() const {
  std::lock_guard lock(mu_);
  return files_;
}

void SessionList::lane_down(size_t lane) {
  std::lock_guard lock(mu_);
  down_[lane] = true;
  trim();
}

void SessionList::trim() {
  if (keep_all_) return;
  // The lowest cursor of the lanes that still take entries (a lane down takes none).
  uint64_t lowest = base_ + entries_.size();
  for (size_t lane = 0; lane < cursor_.size(); ++lane) {
    if (!down_[lane]) lowest = std::min(lowest, cursor_[lane]);
  }
  while (base_ < lowest) {
    entries_.pop_front();
    ++base_;
  }
}

void SessionList::lane_done(size_t lane) {
  std::lock_guard lock(mu_);
  if (done_[lane]) return;
  done_[lane] = true;
  ++lanes_done_;
  if (lanes_done_ == done_.size()) done_cv_.notify_all();
}

bool SessionList::all_done() const {
  std::lock_guard lock(mu_);
  return lanes_done_ == done_.size();
}

bool SessionList::wait_all_done(std::chrono::nanoseconds timeout) {
  std::unique_lock lock(mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return lanes_done_ == done_.size(); });
}

}  // namespace ddft::sender
