// What the sender's reader stage hands its transmit stage(s): one WorkItem per file event or
// block, each block a slot handle into a common::BufferPool, through a WorkSink. Observers
// (sender/events.hpp) see files as FileMeta.
//
// A WorkItem is a value moved from stage to stage; a block's buffer is lent by index, and the
// item's last holder gives it back to the pool exactly once (the transmitter, or whoever drops
// the item). A WorkSink is pushed by one thread at a time; push() blocks while full and returns
// false once closed; nothing here throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "common/bounded_queue.hpp"
#include "common/buffer_pool.hpp"
#include "common/file_identity.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"

namespace ddft::sender {

// The pool the reader fills and the transmitter empties is the common one.
using common::BufferPool;

// One file being sent, as the reader found it. Shared (read-only) by every WorkItem of the file.
struct FileMeta {
  uint32_t file_id = 0;
  std::string rel_path;
  std::string src_path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint64_t tag = 0;                               // SourceFile::tag
  std::optional<common::FileIdentity> resend_of;  // SourceFile::resend_of
  // The channel whose file it is (sender/channel.hpp); empty in a session without channels.
  std::string channel;
  std::string channel_path;  // CHANNEL/rel_path, set with the channel (set_channel())

  void set_channel(const std::string& name) {
    channel = name;
    channel_path = name.empty() ? std::string() : name + '/' + rel_path;
  }
  // The path the receiver is told: CHANNEL/rel_path for a channel's file, else rel_path.
  const std::string& path_on_wire() const { return channel.empty() ? rel_path : channel_path; }
};

// The session's file ids, handed out in order (common::next_file_id) to every channel's reader,
// so that no two files of a session share one. Thread-safe.
class FileIds {
 public:
  explicit FileIds(uint32_t first) : next_(first) {}
  uint32_t take() {
    std::lock_guard lock(mu_);
    return std::exchange(next_, common::next_file_id(next_));
  }

 private:
  std::mutex mu_;
  uint32_t next_;
};

// One unit of work from the reader to the transmitter. Blocks refer to a pool buffer by index;
// the transmitter gives the buffer back once its data is packetised. kSkip: a file that could not
// be opened (never announced); it reaches the transmitter only so that observers hear of it in
// order.
struct WorkItem {
  enum class Kind { kBegin, kBlock, kEnd, kAbort, kSkip };
  Kind kind = Kind::kBegin;
  std::shared_ptr<const FileMeta> meta;
  int buffer = -1;
  uint64_t offset = 0;
  size_t len = 0;
  common::Digest digest{};  // kEnd
  std::string reason{};     // kAbort, kSkip
  uint8_t copy = 0;         // --repeat: which copy of the file (kBegin, kBlock, kEnd)
  // --compress (sender/read/compressor.hpp): the buffer holds a zstd frame of `len` bytes that
  // decompresses to the `raw_len` bytes of the file at `offset`.
  bool compressed = false;
  uint32_t raw_len = 0;
  // Lanes: the file is striped over every lane up when it began (sender/transmit/lane_router.hpp).
  // Set by the router on every item of such a file.
  bool striped = false;
  // Lanes: the lanes that carry the file, bit k for lane k (one bit for a whole file); set by the
  // router on every item. 0: not routed (one lane, the transmitter's own).
  uint64_t lanes = 0;
};

// Where the reader hands its items: one transmitter's queue, or the lane router that spreads them
// over several. Called from one thread at a time: the reader's, or (under --compress) the
// Compressor's worker whose turn it is, each push ordered after the one before.
class WorkSink {
 public:
  virtual ~WorkSink() = default;
  // Hands `item` on, blocking while where it goes is full (back-pressure). Returns false, with
  // `item` untouched (a block's buffer still the caller's), once closed.
  virtual bool push(WorkItem&& item) = 0;
  // Ends the stream: the transmitters drain what was pushed and end.
  virtual void close() = 0;
};

// Where a transmitter takes its items from: its lane's queue (QueueFeed), or its lane's output
// of a ChannelMux. Any thread. pop() blocks until an item comes, or the feed is closed and
// drained (then nullopt); pop_for() gives up after `timeout` (nullopt then means "nothing yet"
// unless closed()).
class WorkFeed {
 public:
  virtual ~WorkFeed() = default;
  virtual std::optional<WorkItem> pop() = 0;
  virtual std::optional<WorkItem> pop_for(std::chrono::nanoseconds timeout) = 0;
  // True once the feed is closed and drained: nothing more will come.
  virtual bool closed() const = 0;
  // What comes from now on is dropped, not sent (a stop, a lane gone down): no sharing policy
  // holds it back. Any thread.
  virtual void draining() {}
};

// One transmitter's queue as a WorkFeed. `queue` must outlive it.
class QueueFeed final : public WorkFeed {
 public:
  explicit QueueFeed(common::BoundedQueue<WorkItem>& queue) : queue_(queue) {}
  std::optional<WorkItem> pop() override { return queue_.pop(); }
  std::optional<WorkItem> pop_for(std::chrono::nanoseconds timeout) override {
    return queue_.pop_for(timeout);
  }
  bool closed() const override { return queue_.closed(); }

 private:
  common::BoundedQueue<WorkItem>& queue_;
};

// One transmitter's queue as a WorkSink. `queue` must outlive it.
class QueueSink final : public WorkSink {
 public:
  explicit QueueSink(common::BoundedQueue<WorkItem>& queue) : queue_(queue) {}
  bool push(WorkItem&& item) override { return queue_.push(std::move(item)); }
  void close() override { queue_.close(); }

 private:
  common::BoundedQueue<WorkItem>& queue_;
};

}  // namespace ddft::sender
