#include "sender/transmit/lane_hub.hpp"

#include <bit>

namespace ddft::sender {

LaneHub::LaneHub(size_t lanes, bool keep_all, SendObserver& observers)
    : lanes_(lanes), observers_(observers), list_(lanes, keep_all), down_reason_(lanes) {}

void LaneHub::session_started(uint64_t session_id) {
  std::lock_guard lock(mu_);
  if (lanes_started_++ == 0) observers_.session_started(session_id);
}

void LaneHub::session_finished(uint64_t session_id) {
  std::lock_guard lock(mu_);
  if (++lanes_finished_ == lanes_) observers_.session_finished(session_id);
}

void LaneHub::idle() {
  std::lock_guard lock(mu_);
  observers_.idle();
}

void LaneHub::file_begun(const FileMeta& file, uint64_t lanes, common::Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto [it, first] = files_.try_emplace(file.file_id);
  if (!first) return;
  Carried& c = it->second;
  c.lanes = lanes;
  c.lanes_left = static_cast<size_t>(std::popcount(lanes));
  c.outcome.started = now;
  if (const uint64_t gone = lanes & down_; gone != 0) {
    doom(c, down_reason_[static_cast<size_t>(std::countr_zero(gone))]);
  }
  observers_.file_started(file);
}

void LaneHub::doom(Carried& c, const std::string& reason) {
  c.doomed = true;
  if (c.outcome.aborted) return;
  c.outcome.aborted = true;
  c.outcome.reason = reason;
}

void LaneHub::lane_down(size_t lane, const std::string& reason) {
  std::lock_guard lock(mu_);
  const uint64_t bit = uint64_t{1} << lane;
  down_ |= bit;
  down_reason_[lane] = reason;
  for (auto& [id, c] : files_) {
    if ((c.lanes & bit) != 0 && (c.finished & bit) == 0) doom(c, reason);
  }
  list_.lane_down(lane);
}

std::optional<std::string> LaneHub::doomed(const FileMeta& file) {
  std::lock_guard lock(mu_);
  const auto it = files_.find(file.file_id);
  if (it == files_.end() || !it->second.doomed) return std::nullopt;
  return it->second.outcome.reason;
}

void LaneHub::file_progress(const FileMeta& file, uint64_t bytes) {
  std::lock_guard lock(mu_);
  const auto it = files_.find(file.file_id);
  if (it == files_.end()) return;
  it->second.sent += bytes;
  observers_.file_progress(file, it->second.sent);
}

void LaneHub::file_skipped(const FileMeta& file, const std::string& reason) {
  std::lock_guard lock(mu_);
  observers_.file_failed(file, reason);
}

std::optional<LaneHub::Outcome> LaneHub::lane_finished(const FileMeta& file, size_t lane,
                                                       bool aborted, const common::Digest& digest,
                                                       const std::string& reason) {
  std::lock_guard lock(mu_);
  const auto it = files_.find(file.file_id);
  if (it == files_.end()) {
    // Never announced through file_begun() (no lane does this): its one lane's outcome.
    return Outcome{aborted, reason, digest, {}};
  }
  it->second.finished |= uint64_t{1} << lane;
  Outcome& o = it->second.outcome;
  if (aborted && !o.aborted) {
    o.aborted = true;
    o.reason = reason;
  }
  if (!aborted) o.digest = digest;
  if (--it->second.lanes_left > 0) return std::nullopt;
  Outcome out = std::move(o);
  files_.erase(it);
  return out;
}

void LaneHub::file_done(const FileMeta& file, const Outcome& outcome, int list_lane) {
  {
    std::lock_guard lock(mu_);
    if (outcome.aborted) {
      observers_.file_failed(file, outcome.reason);
    } else {
      observers_.file_sent_via(file, outcome.digest, list_lane);
    }
  }
  ListedFile f;
  f.file_id = file.file_id;
  f.size = file.size;
  f.aborted = outcome.aborted;
  f.digest = outcome.aborted ? common::Digest{} : outcome.digest;
  f.path = file.path_on_wire();
  f.lane = list_lane;
  f.resend = file.resend_of.has_value();
  list_.add(std::move(f));
}

}  // namespace ddft::sender
