#include "sender/lane_hub.hpp"

namespace ddft::sender {

LaneHub::LaneHub(size_t lanes, bool keep_all, SendObserver& observers)
    : lanes_(lanes), observers_(observers), list_(lanes, keep_all) {}

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

void LaneHub::file_begun(const FileMeta& file, size_t carriers, common::Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto [it, first] = files_.try_emplace(file.file_id);
  if (!first) return;
  it->second.lanes_left = carriers;
  it->second.outcome.started = now;
  observers_.file_started(file);
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

std::optional<LaneHub::Outcome> LaneHub::lane_finished(const FileMeta& file, bool aborted,
                                                       const common::Digest& digest,
                                                       const std::string& reason) {
  std::lock_guard lock(mu_);
  const auto it = files_.find(file.file_id);
  if (it == files_.end()) {
    // Never announced through file_begun() (no lane does this): its one lane's outcome.
    return Outcome{aborted, reason, digest, {}};
  }
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
      observers_.file_sent(file, outcome.digest);
    }
  }
  ListedFile f;
  f.file_id = file.file_id;
  f.size = file.size;
  f.aborted = outcome.aborted;
  f.digest = outcome.aborted ? common::Digest{} : outcome.digest;
  f.path = file.rel_path;
  f.lane = list_lane;
  list_.add(std::move(f));
}

}  // namespace ddft::sender
