// The files this receiver knows the fate of, by (session, file id), over a window of time: each
// delivered, named as failed, refused or filtered, by this run or an earlier one (its journal),
// or announced to this run (it will be one of those). What the sender's file lists and its
// history are checked against, so that each missed file is named once and no file twice.
//
// Two generations: a file is remembered for at least `keep_for` after it was added and at most
// twice that (the window the journal keeps, --journal-hours), so the memory stays bounded in a
// receiver that runs for months.
//
// Writer thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <unordered_set>
#include <utility>

#include "common/clock.hpp"

namespace ddft::receiver {

class SettledFiles {
 public:
  explicit SettledFiles(std::chrono::nanoseconds keep_for) : keep_for_(keep_for) {}

  void add(uint64_t session, uint32_t id, common::Clock::time_point now) {
    if (!started_) {
      started_ = true;
      generation_start_ = now;
    } else if (now - generation_start_ >= keep_for_) {
      older_ = std::move(newer_);
      newer_ = {};
      generation_start_ = now;
    }
    newer_.emplace(session, id);
  }
  // Room for `n` more without rehashing (a start-up's journal, all at once).
  void reserve(size_t n) { newer_.reserve(newer_.size() + n); }
  bool contains(uint64_t session, uint32_t id) const {
    const Key k{session, id};
    return newer_.count(k) != 0 || older_.count(k) != 0;
  }
  size_t size() const { return newer_.size() + older_.size(); }

 private:
  using Key = std::pair<uint64_t, uint32_t>;
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>{}(k.first ^ (uint64_t{k.second} * 0x9E3779B97F4A7C15ull));
    }
  };
  std::chrono::nanoseconds keep_for_;
  std::unordered_set<Key, Hash> newer_;
  std::unordered_set<Key, Hash> older_;
  bool started_ = false;
  common::Clock::time_point generation_start_{};
};

}  // namespace ddft::receiver
