// Reader stage: reads each file in large blocks into pool buffers, hashes it, and hands
// begin/block/end (or abort) items to a WorkSink: the transmitter's queue, or the lane router
// (sender/transmit/lane_router.hpp) with several lanes. Reads go through common::BlockReader over
// the BlockIo engine (io_uring; --readers IO threads, --read-queue-depth each), several blocks
// ahead, and are handed on in file order.
//
// run() on the "dd-read" thread. The reader owns the files it opens and its read engine
// (dd-rio1..N); the source, pool and sink are the caller's and must outlive run(). A file that
// cannot be opened or read is a kSkip or kAbort item, never an exception; run() logs anything
// that escapes and closes the sink on every way out.
#pragma once

#include <atomic>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/block_io.hpp"
#include "common/block_reader.hpp"
#include "common/bounded_queue.hpp"
#include "common/buffer_pool.hpp"
#include "common/clock.hpp"
#include "common/fd.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/send_status.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

// A reader's part in a session of several channels: which channel it reads for, the pool share
// its blocks come from, and the session's file ids (which must outlive the reader).
struct ReadChannel {
  std::string name;
  size_t pool_share = 0;
  FileIds* ids = nullptr;
};

class Reader {
 public:
  // `files`, `pool` and `out` must outlive run(). A file that cannot be opened is logged, counted
  // (open_failures()) and handed on as a kSkip item; so is one listed inside a folder under
  // --symlinks skip or error that a symbolic link has replaced since, or a folder on its way
  // (SourceFile::root): it is never read through the link. With `cfg.file_lock`, each file is read
  // under a shared flock(), waiting up to cfg.lock_timeout_s (on `clock`) while a writer holds an
  // exclusive one.
  Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
         WorkSink& out);
  // The same for one channel of a session: its files carry its name and ids from `channel.ids`.
  Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
         WorkSink& out, const ReadChannel& channel);
  // The same into one transmitter's queue (which must outlive run()).
  Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
         common::BoundedQueue<WorkItem>& out);
  // The same over a fixed list (which must outlive run()).
  Reader(const std::vector<SourceFile>& files, const SenderConfig& cfg, common::Clock& clock,
         BufferPool& pool, common::BoundedQueue<WorkItem>& out);
  // Runs on the reader thread. Closes `out` when done (also when stopped or on error).
  void run(std::stop_token stop);
  uint64_t open_failures() const { return open_failures_.load(); }
  // Counts each file that cannot be read, and each refused, in `status` (null: not). Before run().
  void set_status(SendStatus* status) { status_ = status; }

 private:
  // What became of one copy of a file.
  enum class Outcome { kSent, kAborted, kStopped };
  // Reads one opened file, as copy `copy`.
  Outcome read_file(int fd, const std::shared_ptr<const FileMeta>& meta, uint8_t copy,
                    std::stop_token& stop);
  // A synthetic source: the pool buffers' contents, no IO.
  Outcome read_synthetic(const std::shared_ptr<const FileMeta>& meta, uint8_t copy,
                         std::stop_token& stop);
  // Every copy of a file (--repeat); returns false when stopped.
  template <typename ReadCopy>
  bool send_copies(ReadCopy&& read_copy);

  // Takes the FILE_LOCK shared lock; returns false (with *why) when it cannot.
  [[nodiscard]] bool lock_shared(int fd, const std::string& path, std::stop_token& stop,
                                 std::string* why);
  // Why `src`'s path cannot go on the wire (too long for an announce, its channel's name
  // included), or nullopt.
  std::optional<std::string> path_refusal(const SourceFile& src) const;
  // `src` opened for reading: the source's descriptor, or `path`, or, listed below a root,
  // there without following a symbolic link (SourceFile::root). Invalid, with *why, when it
  // cannot be opened.
  common::UniqueFd open_source(SourceFile& src, std::string* why) const;
  // A file that cannot be opened (or, `refused`, cannot go on the wire): logged, counted and
  // handed on as kSkip. False when stopped.
  bool skip(const SourceFile& src, const std::string& why, bool refused = false);

  // A new file's meta: its id (the session's next), path and channel.
  std::shared_ptr<FileMeta> new_meta(const SourceFile& src);

  std::unique_ptr<ListSource> owned_list_;  // the list constructor's
  std::unique_ptr<QueueSink> owned_sink_;   // the queue constructors'
  ReadChannel channel_;
  std::unique_ptr<FileIds> own_ids_;  // without a channel: the session's ids are the reader's
  FileSource& files_;
  const SenderConfig& cfg_;
  common::Clock& clock_;
  BufferPool& pool_;
  WorkSink& out_;
  std::atomic<uint64_t> open_failures_{0};
  SendStatus* status_ = nullptr;
  std::unique_ptr<common::BlockIo> io_;
  common::BlockReader block_reader_;  // over io_ and pool_
};

}  // namespace ddft::sender
