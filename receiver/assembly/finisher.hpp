// The finisher: the last steps of a file whose writes are done. Verification (the hash streamed
// in file order, or the file read back on the pool), the commit (Committer: flush, rename, folder
// sync), delivery (the File: line and its "repaired:" line, counters, --on-complete, the
// journal's P line with the repairs), and failure (the record, its Error line). It tells the
// file's owner, the file table, when a file has failed (Owner::fail) and when its life is over
// (Owner::end); it never ends a file itself.
//
// Writer thread only. Its pool work and the committer's results come back through FsPool::reap()
// and the write engine's completions, both processed in FileTable::pump(): the seam where a
// finishing thread can later sit, fed a queue of files whose writes are done.
//
// The folder, pool, engine, blocks, records, counters and owner are the caller's and must outlive
// it; it owns the Committer. Nothing here throws: a failed verification, flush or rename fails
// the file (Owner::fail).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.hpp"
#include "common/hash.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/file_blocks.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/committer.hpp"
#include "receiver/delivery/delivered_file.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/delivery/write_engine.hpp"

namespace ddft::receiver {

class Finisher {
 public:
  // The owner of the files (the file table). Called once per file, never per packet.
  class Owner {
   public:
    // `f` failed with `reason` (its writes, if any, then its record follow).
    virtual void fail(File& f, const std::string& reason) = 0;
    // `f` is delivered or recorded: its life is over.
    virtual void end(File& f) = 0;
    // `f` is delivered (its File: line logged), before end().
    virtual void passed(File& f) = 0;
    // The counts of session `s`'s summary line, or null when the session is over.
    virtual SessionFiles* tally(uint64_t s) = 0;

   protected:
    ~Owner() = default;
  };

  // References must outlive the finisher.
  Finisher(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs, common::Clock& clock,
           WriteEngine& engine, FileBlocks& blocks, FailureRecords& records,
           AssemblerCounters& counters, Owner& owner);
  Finisher(const Finisher&) = delete;
  Finisher& operator=(const Finisher&) = delete;

  // The journal that gets the C and P lines (may be null); it must outlive the finisher.
  void set_journal(OutcomeLog* journal);
  // Called for each file delivered, right after its File: line. Must not block.
  void set_on_delivered(std::function<void(const DeliveredFile&)> fn) {
    on_delivered_ = std::move(fn);
  }
  // `f` has all its data written (state kEnding, no I/O pending): verified, then committed or
  // failed.
  void finish(File& f);
  // `f` failed and has no I/O pending: its record is written (its blocks given back first),
  // its Error line logged, then Owner::end.
  void record_failure(File& f);
  // A folder sync the committer asked for completed (its cookie has Committer::kCookieTag).
  void on_dir_synced(uint64_t cookie, int error) { committer_->on_dir_synced(cookie, error); }
  // Files with the committer.
  bool busy() const { return committer_->busy(); }

 private:
  void make_committer();
  void read_back(File& f);
  void verified(File& f, const common::Digest& got);
  void commit(File& f);
  void on_committed(const CommitResult& r);
  void deliver(File& f, const std::string& moved_old);
  void notify_delivered(const File& f, const std::string& moved_old);
  FailureRecord failure_record(File& f);

  const ReceiverConfig& cfg_;
  OutputDir& out_;
  FsPool& fs_;
  common::Clock& clock_;
  WriteEngine& engine_;
  FileBlocks& blocks_;
  FailureRecords& records_;
  AssemblerCounters& counters_;
  Owner& owner_;
  OutcomeLog* journal_ = nullptr;
  std::unique_ptr<Committer> committer_;
  std::function<void(const DeliveredFile&)> on_delivered_;
};

}  // namespace ddft::receiver
