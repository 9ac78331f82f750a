// A lane whose link failed (--lane-down): it ends the session, or leaves it while the
// other lanes go on. See sender/transmit/transmitter.hpp.
#include <spdlog/spdlog.h>

#include "sender/transmit/transmitter.hpp"

namespace ddft::sender {

void Transmitter::go_down(const LinkError& e) {
  const bool may_leave = cfg_.lane_down == LaneDownPolicy::kContinue && router_ != nullptr;
  if (!may_leave || !router_->take_down(lane_)) {
    // --lane-down stop, one lane, or every other lane already down: the session ends here.
    if (may_leave && hub_.lanes() > 1) {
      throw LinkError(e.code(), lane_label() + ": send failed and no other lane is up");
    }
    throw e;
  }
  const std::string reason =
      fmt::format("{} is down: send failed: {}", lane_label(), e.code().message());
  spdlog::error("Error: {}; its files in flight fail, the other lanes go on", reason);
  // Nothing more goes out on this link: what was batched goes with it.
  pending_.clear();
  pending_bytes_ = 0;
  if (status_) status_->lanes_up.fetch_sub(1, std::memory_order_relaxed);
  // Before the file in flight is failed: a striped one is then doomed on the other lanes too.
  hub_.lane_down(lane_, reason);
  if (current_.meta) {
    dropped_ = current_.meta->file_id;
    finish_file(current_.meta, true, {}, reason, current_.striped);
  }
  // What the router gave this lane before it went down, and the rest of the files it carries,
  // until the reader closes the queue: failed, their buffers back at once (the reader must not
  // wait for a lane that sends nothing).
  while (auto item = in_.pop()) drop_item(*item, reason);
  // Only now: the other lanes' last lists must name the files failed here.
  hub_.list().lane_done(lane_);
}

void Transmitter::drop_item(const WorkItem& item, const std::string& reason) {
  if (item.kind == WorkItem::Kind::kSkip) {
    skip_file(item);  // never announced: fails with its own reason, on no lane
    return;
  }
  if (item.kind == WorkItem::Kind::kBlock) give_back(item);
  if (dropped_ == item.meta->file_id) return;
  // The first item of a file this lane was to carry (items of one file come together): the file
  // fails, reported once, by the last of its lanes.
  dropped_ = item.meta->file_id;
  hub_.file_begun(*item.meta, carriers(item), clock_.now());
  finish_file(item.meta, true, {}, reason, item.striped);
}

}  // namespace ddft::sender
