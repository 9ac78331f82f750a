// Failure records: how a failed or refused file is named on disk (a record in the failed
// folder, the journal's F and L lines) and in the log, within a budget per minute so that a
// flood of forged announces cannot fill the failed folder. Records the file system refused
// (read-only, full) are kept and tried again every 5 s.
//
// Writer thread only. The writes run on the FsPool; their `then` callbacks run on the writer
// thread from FsPool::reap() (FileTable::pump()).
// The folder, the pool, the clock, the counters and the journal are the caller's and must outlive
// it; it keeps the records the file system refused (a bounded number) until they are written.
// Nothing here throws.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "common/clock.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

// Records of refused files and of failed ones that received nothing, a minute, without a key.
inline constexpr uint64_t kRecordsPerMinute = 120;
// The same for files the sender's end packet or file list vouches for.
inline constexpr uint64_t kVouchedRecordsPerMinute = 20000;
// Missing ranges a record names, and the Error line.
inline constexpr size_t kMissingRangesInRecord = 1000;
inline constexpr size_t kMissingRangesInLog = 5;

// Where a record "went" when there is no failed folder (--sink null without --output): the
// Error line that names it is its only record.
inline constexpr std::string_view kRecordInLogOnly =
    "none written (--sink null without --output: this line is the record)";

// "0-1000, 5000-6000": the first kMissingRangesInLog ranges of `missing`, for an Error line.
std::string format_missing(const std::vector<std::pair<uint64_t, uint64_t>>& missing);

class FailureRecords {
 public:
  // References must outlive this. `keyed`: --key-file is set (only the authenticated sender
  // can cause records, so there is no budget). `counters` gets records_suppressed.
  FailureRecords(OutputDir& out, FsPool& fs, common::Clock& clock, bool keyed,
                 AssemblerCounters& counters);
  FailureRecords(const FailureRecords&) = delete;
  FailureRecords& operator=(const FailureRecords&) = delete;

  // The journal that gets F and L lines (may be null); it must outlive this.
  void set_journal(OutcomeLog* journal) { journal_ = journal; }
  // The id of the sender of session `s` (0 when not known), for the records that do not say.
  void set_sender_of(std::function<uint64_t(uint64_t)> fn) { sender_of_ = std::move(fn); }
  // Called on this thread with each file whose record was written, and where (at once, or when a
  // retry() writes it).
  void set_on_recorded(std::function<void(const common::FileIdentity&, const std::string&)> fn) {
    on_recorded_ = std::move(fn);
  }
  // True when one more record of a refused file, or of a failed one that received nothing,
  // fits this minute's budget; `vouched`: the sender's end packet or file list names the file
  // (a budget of its own, kVouchedRecordsPerMinute, else kRecordsPerMinute).
  bool take_slot(bool vouched = false);
  // Starts a new minute of records, logging how many the last one left out. `force`: now (at
  // shutdown), whatever the time.
  void roll_window(common::Clock::time_point now, bool force = false);
  // Queues a failure record to be written on the pool (moving `tmp`, when given, away with
  // it); `then` runs on this thread with where it went ("" when it could not be written).
  void write(const FailureRecord& rec, std::shared_ptr<TempFile> tmp,
             std::function<void(const std::string&)> then);
  // True while the record of file `id` of `session` is on its way: queued, being written, or
  // kept for retry() because the file system refused it. Its on_recorded call is still to come.
  bool writing(uint64_t session, uint32_t id) const { return writing_.contains({session, id}); }
  // A file refused at its announce: recorded (within the budget) and its Error line logged.
  void refuse(const FailureRecord& rec, const std::string& reason);
  // Writes the record of a file that failed with nothing received, and its Error line, within
  // the budget (take_slot(vouched)).
  void write_named(FailureRecord rec, bool vouched);
  // Every 5 s, tries the kept records again (on the pool), logging each one written. `force`:
  // now, whatever the time (at shutdown).
  void retry(common::Clock::time_point now, bool force = false);

  // Failed file `id` of live session `session`, left out by the budget: named if a file list
  // lists it.
  void keep_unnamed(uint64_t session, uint32_t id, const FailureRecord& rec);
  // The record kept for file `id` of `session` (and forgets it), if any.
  std::optional<FailureRecord> take_unnamed(uint64_t session, uint32_t id);
  // Session `session` is over: its unnamed files are no longer listed.
  void forget_unnamed(uint64_t session);

 private:
  struct Unwritten {
    FailureRecord rec;
    std::shared_ptr<TempFile> tmp;
  };
  void note_logged(const FailureRecord& rec);
  void keep_unwritten(const FailureRecord& rec, std::shared_ptr<TempFile> tmp);

  OutputDir& out_;
  FsPool& fs_;
  common::Clock& clock_;
  bool keyed_;
  AssemblerCounters& counters_;
  OutcomeLog* journal_ = nullptr;
  std::function<void(const common::FileIdentity&, const std::string&)> on_recorded_;
  std::function<uint64_t(uint64_t)> sender_of_;
  common::Clock::time_point window_{};
  uint64_t in_window_ = 0;
  uint64_t vouched_in_window_ = 0;
  std::map<std::pair<uint64_t, uint32_t>, FailureRecord> unnamed_;  // by (session, file id)
  std::deque<Unwritten> unwritten_;  // records the file system refused, oldest first
  std::set<std::pair<uint64_t, uint32_t>> writing_;  // (session, id) of the records on their way
  uint64_t unwritten_dropped_ = 0;
  bool retrying_ = false;
  common::Clock::time_point last_retry_{};
};

}  // namespace ddft::receiver
