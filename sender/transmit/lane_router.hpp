// The lane router: between a reader and the lanes' transmitters, it decides which lane carries
// what. A session of several channels has one router per channel, each into its channel's inputs
// of the ChannelMux (sender/transmit/channel_mux.hpp), all sharing one LaneLoad.
//
//   Reader (or Compressor) ──push──> LaneRouter ──> lane 0's WorkSink (queue) ──> dd-tx0
//                                        │      ──> lane 1's WorkSink ──> dd-tx1 ...
//                                        └── LaneLoad, queued bytes per lane (atomics): + when a
//                                            block is routed to the lane, - when its transmitter
//                                            has packetised it (block_done())
//
// The rules, the "least busy" lane being the one with the fewest queued bytes (ties: the next lane
// after the last one chosen, so that empty files and an idle session still spread):
// - a whole file (at most --stripe-mb MiB, or one lane, or --stripe-mb 0) goes entirely, every
//   --repeat copy of it included, down the lane least busy at its first kBegin;
// - a striped file (more than --stripe-mb MiB, 2 lanes or more): each copy's kBegin, kEnd and
//   kAbort go down every lane (each after that lane's share of the data, which queue order
//   gives); its data in stripes of stripe_bytes() (kStripeUnit, 4 MiB; less under a smaller
//   --stripe-mb), each stripe down the lane least busy when its first block is routed, and the
//   rest of the stripe after it;
// - a kSkip (a file never announced) goes down the least busy lane.
// A full lane queue blocks the reader (back-pressure), as one transmitter's queue does.
//
// A lane taken down (take_down(), --lane-down continue) is never chosen again: whole files, stripes
// and striped files' announces go to the lanes still up. What was routed to it before, and the
// rest of a file it already carries, still goes down its queue, which its transmitter drains
// without sending (so that the file fails as a whole and the buffers come back). Lanes never come
// back up.
//
// push() from one thread at a time; every other call from any thread. The lanes' sinks and the
// load are the caller's and must outlive the router; a block's buffer passes with its item to the
// lane. The constructors throw std::invalid_argument for no lane, more than kMaxLanes, or sinks
// and load of different lane counts (a bug).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/bounded_queue.hpp"
#include "sender/transmit/lane_load.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class LaneRouter final : public WorkSink {
 public:
  // A striped file's data goes in ranges of this many bytes (--stripe-mb is the size from
  // which a file is striped, not the range): small enough to fit one lane's share of the pool,
  // so that the one reader, in file order, keeps every lane fed (docs/lanes.md has the figures).
  static constexpr uint64_t kStripeUnit = uint64_t{4} << 20;

  // Routes into `lanes` (at least one, at most common::kMaxLanes; each must outlive the router).
  // A file larger than `stripe_threshold` bytes is striped when 2 lanes or more are up (0: never
  // striped), in stripes of the smaller of kStripeUnit and `stripe_threshold`, rounded down to
  // whole blocks of `block_size` bytes (the reader's), at least one block: so a striped file has at
  // least two stripes.
  LaneRouter(std::vector<common::BoundedQueue<WorkItem>*> lanes, uint64_t stripe_threshold,
             size_t block_size);
  // The same into `lanes`' sinks, by the shared `load` (of as many lanes).
  LaneRouter(LaneLoad& load, std::vector<WorkSink*> lanes, uint64_t stripe_threshold,
             size_t block_size);
  LaneRouter(const LaneRouter&) = delete;
  LaneRouter& operator=(const LaneRouter&) = delete;

  // One thread at a time (the reader, or the dd-zstdN worker whose turn it is under
  // --compress, sender/read/compressor.hpp): routes `item` (see the rules above). Blocks while the
  // lane (or, for an item every lane takes, any of them) is full. Returns false once closed, with
  // `item` untouched; an item for every lane may then have reached some of them.
  bool push(WorkItem&& item) override;
  // Closes every lane's queue. Any thread.
  void close() override;

  // Any thread (a lane's transmitter): `bytes` of a block routed to `lane` were packetised, or
  // dropped on a stop.
  void block_done(size_t lane, uint64_t bytes) { load_.block_done(lane, bytes); }
  // Bytes of blocks routed to `lane` and not yet done. Any thread.
  uint64_t queued(size_t lane) const { return load_.queued(lane); }
  size_t lanes() const { return lanes_.size(); }
  LaneLoad& load() { return load_; }
  // The data of a striped file goes in ranges of this many bytes.
  uint64_t stripe_bytes() const { return stripe_bytes_; }
  // Whether a file of `size` bytes is striped (were it to begin now). Any thread.
  bool striped(uint64_t size) const {
    return lanes_up() >= 2 && stripe_threshold_ > 0 && size > stripe_threshold_;
  }

  // Any thread (lane `lane`'s transmitter, whose link failed): takes the lane out of the
  // rotation, unless it is the last lane up. Returns false then (the session cannot go on), true
  // when the lane is down (also when it already was).
  [[nodiscard]] bool take_down(size_t lane) { return load_.take_down(lane); }
  // Whether lane `lane` was taken down. Any thread.
  bool down(size_t lane) const { return load_.down(lane); }
  // Lanes not taken down. Any thread.
  size_t lanes_up() const { return load_.lanes_up(); }

 private:
  // The least busy lane up (ties: the first after the last chosen).
  size_t least_busy();
  // Pushes a copy of `item` down every lane of the file's (file_lanes_); false when a queue was
  // closed.
  bool push_all(const WorkItem& item);
  bool push_to(size_t lane, WorkItem&& item);

  // The queue constructor's own sinks and load.
  std::vector<std::unique_ptr<QueueSink>> own_sinks_;
  std::unique_ptr<LaneLoad> own_load_;
  LaneLoad& load_;
  std::vector<WorkSink*> lanes_;
  uint64_t stripe_threshold_;
  uint64_t stripe_bytes_;
  // push()'s thread only: the file being routed (items of one file come together, in order).
  std::shared_ptr<const FileMeta> file_;
  bool file_striped_ = false;
  uint64_t file_lanes_ = 0;   // the lanes that carry it (a striped file: those up at its begin)
  size_t file_lane_ = 0;      // a whole file's lane (every copy)
  uint64_t stripe_ = 0;       // a striped file: the stripe being routed (offset / stripe_bytes_)
  size_t stripe_lane_ = 0;    // and its lane
  bool stripe_open_ = false;  // a stripe of this copy has been routed
  size_t last_chosen_ = 0;    // for ties in least_busy()
};

}  // namespace ddft::sender
