// The file ids a session saw last, at most a fixed number of them: once full, the id remembered
// longest ago is forgotten first (not the smallest: a session's ids wrap past 2^32 - 1 to 1).
//
// No I/O; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>

namespace ddft::receiver {

class RecentIds {
 public:
  explicit RecentIds(size_t keep) : keep_(keep) {}

  // Remembers `id` (a no-op when it is remembered already), forgetting the oldest past `keep`.
  void insert(uint32_t id) {
    if (!ids_.insert(id).second) return;
    order_.push_back(id);
    if (order_.size() > keep_) {
      ids_.erase(order_.front());
      order_.pop_front();
    }
  }
  bool contains(uint32_t id) const { return ids_.count(id) != 0; }
  size_t size() const { return order_.size(); }
  void clear() {
    ids_.clear();
    order_.clear();
  }

 private:
  size_t keep_;
  std::unordered_set<uint32_t> ids_;
  std::deque<uint32_t> order_;  // oldest first
};

}  // namespace ddft::receiver
