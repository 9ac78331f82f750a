// The committer: makes verified files durable and puts them under their final names, many at a
// time, without the writer thread ever waiting on the file system.
//
//   verified files ──> [collecting batch] ──(pool: mtime, one flush for the batch, journal "C"
//                                             lines, renames in order)──>
//                  ──> [folder syncs: one io_uring fsync per distinct folder of the batch, and
//                       the parents of folders made since the last batch] ──> done, in order
//
// Group commit without timers: a batch is flushed as soon as the previous batch's flush is over,
// so under load a batch holds every file verified meanwhile, and a lone file goes at once. The
// flush is fdatasync (rwd) or fsync (rws) for a lone file, and one syncfs() for a batch
// (OutputDir::flush_files): git's core.fsyncMethod=batch idea, with the flush after every file's
// data and size are written and the folder syncs after the renames. Under --write-mode rw nothing
// is synced: the renames only.
//
// A file's outcome is reported only once everything for it is durable; an error of its flush or
// of its folder's sync fails it (never retried: after a failed sync the page cache cannot be
// trusted).
//
// Writer thread (add(), on_dir_synced(), and `done`); the flushes and renames run on the FsPool.
// The folder, the pool and the journal are the caller's and must outlive it; a request's
// TempFile stays the caller's, untouched, until its result. Nothing here throws: a failure is
// the file's CommitResult.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "receiver/config.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

struct CommitRequest {
  TempFile* tmp = nullptr;  // the caller's; must stay valid (and untouched) until its result
  uint32_t mode = 0644;
  int64_t mtime_ns = -1;
  Outcome journal;      // what the journal's "C" line says of it
  uint64_t cookie = 0;  // the caller's, handed back
};

struct CommitResult {
  uint64_t cookie = 0;
  bool ok = false;
  std::string reason;     // why it failed
  int error = 0;          // the errno of a failed flush or sync (0: a refusal, e.g. a collision)
  bool renamed = false;   // it is under its final name (a failure then must move it away)
  std::string moved_old;  // where an existing file of the same name was moved ("" when none)
};

class Committer {
 public:
  // Submits one folder fsync with `cookie`; the caller hands its completion to on_dir_synced().
  using SubmitSync = std::function<void(int fd, uint64_t cookie)>;
  using Done = std::function<void(const CommitResult&)>;
  // References must outlive the committer. `journal` may be null (--sink null). Writer thread.
  Committer(OutputDir& out, FsPool& pool, WriteMode mode, OutcomeLog* journal,
            SubmitSync submit_sync, Done done);
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Queues a verified file. Its result comes through `done` (later, from the pool's reap or a
  // sync completion, never from inside add()).
  void add(const CommitRequest& r);
  // A folder sync submitted through SubmitSync completed.
  void on_dir_synced(uint64_t cookie, int error);
  // Files added whose result has not come yet.
  size_t in_progress() const { return in_progress_; }
  bool busy() const { return in_progress_ > 0; }

  // Low bits of the cookies the committer gives SubmitSync, so that the caller can tell its
  // completions from its own (block pointers, 8-aligned, have them clear).
  static constexpr uint64_t kCookieTag = 2;
  static constexpr uint64_t kCookieMask = 3;

 private:
  struct Item {
    CommitRequest req;
    int flush_error = 0;
    bool renamed = false;
    std::string moved_old;
    std::string reason;
    std::vector<size_t> dirs;  // indexes into Batch::dirs
  };
  struct Dir {
    int fd = -1;  // borrowed from an item's TempFile
    int error = 0;
  };
  struct Batch {
    uint64_t id = 0;
    std::vector<Item> items;
    std::vector<Dir> dirs;
    std::vector<common::UniqueFd> new_parents;  // folders holding new folders' entries
    size_t syncs_pending = 0;
    bool done = false;
  };

  void maybe_start();
  void flush_and_rename(Batch& b);  // on a pool thread
  void on_flushed(Batch& b);        // writer thread
  void release();

  OutputDir& out_;
  FsPool& pool_;
  WriteMode mode_;
  OutcomeLog* journal_;
  SubmitSync submit_sync_;
  Done done_;
  std::vector<CommitRequest> collecting_;
  std::deque<std::unique_ptr<Batch>> batches_;  // in order; the front is released first
  bool flushing_ = false;
  uint64_t next_batch_ = 1;
  size_t in_progress_ = 0;
};

}  // namespace ddft::receiver
