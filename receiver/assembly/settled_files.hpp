// The files this receiver knows the fate of, by (session, file id), over a window of time: each
// delivered, named as failed, refused or filtered, by this run or an earlier one (its journal),
// or announced to this run (it will be one of those). What the sender's file lists and its
// history are checked against, so that each missed file is named once and no file twice; and
// what a resend is checked against: a copy of a file delivered is skipped, one of a file that
// failed delivered (and the failure's record resolved).
//
// Two generations: a file is remembered for at least `keep_for` after it was last noted and at
// most twice that (the window the journal keeps, --journal-hours), so the memory stays bounded
// in a receiver that runs for months.
//
// Writer thread only.
// A plain in-memory set that owns its entries; nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.hpp"

namespace ddft::receiver {

class SettledFiles {
 public:
  enum class Fate : uint8_t {
    kSeen,    // announced or named; its fate not known here yet (or not kept: refused, filtered)
    kPassed,  // delivered (or a failure resolved by a resend)
    kFailed,  // named as failed, with a record
  };

  explicit SettledFiles(std::chrono::nanoseconds keep_for) : keep_for_(keep_for) {}

  // Notes the file; a fate other than kSeen replaces the one known (kSeen never does). `record`:
  // a failed file's record.
  void add(uint64_t session, uint32_t id, common::Clock::time_point now, Fate fate = Fate::kSeen,
           const std::string& record = {}) {
    rotate(now);
    const Key k{session, id};
    Fate& f = newer_.fate.try_emplace(k, Fate::kSeen).first->second;
    if (fate == Fate::kSeen) {
      if (auto it = older_.fate.find(k); it != older_.fate.end()) f = it->second;
      return;
    }
    f = fate;
    if (fate == Fate::kFailed) {
      newer_.records[k] = record;
    } else {
      newer_.records.erase(k);
      older_.records.erase(k);
    }
  }
  // The files a start-up's journal knows, all at once, each with `fate` (before any add()).
  void add_all(const std::vector<std::pair<uint64_t, uint32_t>>& keys,
               common::Clock::time_point now, Fate fate) {
    rotate(now);
    newer_.fate.reserve(newer_.fate.size() + keys.size());
    for (const Key& k : keys) newer_.fate.insert_or_assign(k, fate);
  }
  bool contains(uint64_t session, uint32_t id) const { return fate(session, id).has_value(); }
  std::optional<Fate> fate(uint64_t session, uint32_t id) const {
    const Key k{session, id};
    if (auto it = newer_.fate.find(k); it != newer_.fate.end()) return it->second;
    if (auto it = older_.fate.find(k); it != older_.fate.end()) return it->second;
    return std::nullopt;
  }
  // A failed file's record ("" when unknown).
  std::string record(uint64_t session, uint32_t id) const {
    const Key k{session, id};
    if (auto it = newer_.records.find(k); it != newer_.records.end()) return it->second;
    if (auto it = older_.records.find(k); it != older_.records.end()) return it->second;
    return {};
  }
  size_t size() const { return newer_.fate.size() + older_.fate.size(); }

 private:
  using Key = std::pair<uint64_t, uint32_t>;
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>{}(k.first ^ (uint64_t{k.second} * 0x9E3779B97F4A7C15ull));
    }
  };
  struct Generation {
    std::unordered_map<Key, Fate, Hash> fate;
    std::unordered_map<Key, std::string, Hash> records;
  };
  void rotate(common::Clock::time_point now) {
    if (!started_) {
      started_ = true;
      generation_start_ = now;
    } else if (now - generation_start_ >= keep_for_) {
      older_ = std::move(newer_);
      newer_ = {};
      generation_start_ = now;
    }
  }
  std::chrono::nanoseconds keep_for_;
  Generation newer_;
  Generation older_;
  bool started_ = false;
  common::Clock::time_point generation_start_{};
};

}  // namespace ddft::receiver
