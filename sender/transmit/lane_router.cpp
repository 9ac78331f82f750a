#include "sender/transmit/lane_router.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/protocol.hpp"

namespace ddft::sender {

namespace {

std::vector<std::unique_ptr<QueueSink>> sinks_of(
    const std::vector<common::BoundedQueue<WorkItem>*>& queues) {
  std::vector<std::unique_ptr<QueueSink>> out;
  for (auto* q : queues) out.push_back(std::make_unique<QueueSink>(*q));
  return out;
}

std::vector<WorkSink*> pointers(const std::vector<std::unique_ptr<QueueSink>>& sinks) {
  std::vector<WorkSink*> out;
  for (const auto& s : sinks) out.push_back(s.get());
  return out;
}

// The smaller of kStripeUnit and the threshold, in whole blocks (at least one).
uint64_t stripe_bytes_for(uint64_t stripe_threshold, size_t block_size) {
  const uint64_t block = std::max<size_t>(1, block_size);
  return std::max<uint64_t>(1,
                            std::min<uint64_t>(stripe_threshold, LaneRouter::kStripeUnit) / block) *
         block;
}

}  // namespace

LaneLoad::LaneLoad(size_t lanes)
    : lanes_(lanes),
      queued_(std::make_unique<std::atomic<uint64_t>[]>(lanes)),
      down_(std::make_unique<std::atomic<bool>[]>(lanes)),
      up_(lanes) {
  static_assert(common::kMaxLanes <= 64, "a file's lanes are the bits of a uint64_t");
  if (lanes == 0) throw std::invalid_argument("a session needs a lane");
  if (lanes > common::kMaxLanes) throw std::invalid_argument("too many lanes");
}

bool LaneLoad::take_down(size_t lane) {
  if (down(lane)) return true;
  // One lane always stays up: two lanes failing at once cannot both leave.
  size_t up = up_.load(std::memory_order_acquire);
  do {
    if (up <= 1) return false;
  } while (!up_.compare_exchange_weak(up, up - 1, std::memory_order_acq_rel));
  down_[lane].store(true, std::memory_order_release);
  return true;
}

uint64_t LaneLoad::lanes_up_mask() const {
  uint64_t mask = 0;
  for (size_t lane = 0; lane < lanes_; ++lane) {
    if (!down(lane)) mask |= uint64_t{1} << lane;
  }
  return mask;
}

LaneRouter::LaneRouter(std::vector<common::BoundedQueue<WorkItem>*> lanes,
                       uint64_t stripe_threshold, size_t block_size)
    : own_sinks_(sinks_of(lanes)),
      own_load_(std::make_unique<LaneLoad>(std::max<size_t>(lanes.size(), 1))),
      load_(*own_load_),
      lanes_(pointers(own_sinks_)),
      stripe_threshold_(stripe_threshold),
      stripe_bytes_(stripe_bytes_for(stripe_threshold, block_size)) {
  if (lanes_.empty()) throw std::invalid_argument("a lane router needs a lane");
  last_chosen_ = lanes_.size() - 1;  // the first choice among equals is lane 0
}

LaneRouter::LaneRouter(LaneLoad& load, std::vector<WorkSink*> lanes, uint64_t stripe_threshold,
                       size_t block_size)
    : load_(load),
      lanes_(std::move(lanes)),
      stripe_threshold_(stripe_threshold),
      stripe_bytes_(stripe_bytes_for(stripe_threshold, block_size)) {
  if (lanes_.empty()) throw std::invalid_argument("a lane router needs a lane");
  if (lanes_.size() != load_.lanes()) throw std::invalid_argument("sinks and load disagree");
  last_chosen_ = lanes_.size() - 1;  // the first choice among equals is lane 0
}

size_t LaneRouter::least_busy() {
  const size_t n = lanes_.size();
  // Lane up first (there always is one); then the one with the fewest queued bytes.
  size_t best = n;
  uint64_t best_bytes = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t lane = (last_chosen_ + 1 + k) % n;
    if (down(lane)) continue;
    const uint64_t bytes = queued(lane);
    if (best == n || bytes < best_bytes) {
      best = lane;
      best_bytes = bytes;
      if (bytes == 0) break;
    }
  }
  if (best == n) best = (last_chosen_ + 1) % n;  // every lane down: never, take_down() keeps one
  last_chosen_ = best;
  return best;
}

bool LaneRouter::push_to(size_t lane, WorkItem&& item) {
  const uint64_t bytes = item.kind == WorkItem::Kind::kBlock ? item.len : 0;
  // Counted before the push: once in the queue, the transmitter may be done with it at once.
  load_.routed(lane, bytes);
  if (lanes_[lane]->push(std::move(item))) return true;
  load_.block_done(lane, bytes);
  return false;
}

bool LaneRouter::push_all(const WorkItem& item) {
  for (size_t lane = 0; lane < lanes_.size(); ++lane) {
    if ((file_lanes_ & (uint64_t{1} << lane)) == 0) continue;
    WorkItem copy = item;
    if (!push_to(lane, std::move(copy))) return false;
  }
  return true;
}

bool LaneRouter::push(WorkItem&& item) {
  switch (item.kind) {
    case WorkItem::Kind::kSkip: {
      const size_t lane = least_busy();
      item.lanes = uint64_t{1} << lane;
      return push_to(lane, std::move(item));
    }
    case WorkItem::Kind::kBegin:
      // A new file at its first copy; a further copy (--repeat) keeps the file's lanes.
      if (item.copy == 0 || file_ != item.meta) {
        file_ = item.meta;
        file_striped_ = striped(item.meta->size);
        if (file_striped_) {
          file_lanes_ = load_.lanes_up_mask();
        } else {
          file_lane_ = least_busy();
          file_lanes_ = uint64_t{1} << file_lane_;
        }
      }
      stripe_open_ = false;  // each copy's stripes are routed anew
      break;
    case WorkItem::Kind::kBlock:
    case WorkItem::Kind::kEnd:
    case WorkItem::Kind::kAbort:
      if (file_ != item.meta) {
        // Not of the file begun last (the reader never does this): down one lane, whole.
        file_ = item.meta;
        file_striped_ = false;
        file_lane_ = least_busy();
        file_lanes_ = uint64_t{1} << file_lane_;
      }
      break;
  }
  item.striped = file_striped_;
  item.lanes = file_lanes_;
  if (!file_striped_) return push_to(file_lane_, std::move(item));
  if (item.kind != WorkItem::Kind::kBlock) return push_all(item);
  const uint64_t stripe = item.offset / stripe_bytes_;
  if (!stripe_open_ || stripe != stripe_) {
    // Sticky for the whole stripe: the lane least busy when its first block comes.
    stripe_ = stripe;
    stripe_lane_ = least_busy();
    stripe_open_ = true;
  }
  return push_to(stripe_lane_, std::move(item));
}

void LaneRouter::close() {
  for (auto* q : lanes_) q->close();
}

}  // namespace ddft::sender
