// Files the sender sent before. Its history (kHistory, common/history_wire.hpp) names each file it
// sent lately: one this receiver neither delivered nor named, in any session of the journal's
// window, was sent while it was not receiving (stopped, restarting, not yet started, or its lane
// not listened on here) and is recorded as missed, once, with when it was sent. A resend
// (kResend) says that the next announce of a file id is a copy of a file sent before: a copy of
// a file delivered here is skipped unwritten; one of a file that failed or never came is
// delivered, and resolves that failure (its record marked, the journal's R line). A failure whose
// record is still on its way (FailureRecords::writing()) is resolved once the record is written:
// the record is marked and the R line follows the F line.
//
// Writer thread only. It owns the pending resends and the resolutions waiting for their record
// (at most kResendsKept each: past it, the oldest is dropped); the folder, pool, clock, counters,
// known ids, files in flight, listed files, records, gate and journal are the caller's and must
// outlive it. Malformed packets are counted,
// never thrown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "common/clock.hpp"
#include "common/file_identity.hpp"
#include "common/history_wire.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/known_files.hpp"
#include "receiver/assembly/listed_files.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/link/sender_session.hpp"

namespace ddft::receiver {

class SenderHistory {
 public:
  // Resends waiting for their copy's announce, at most: one per file in flight and a few more.
  static constexpr size_t kResendsKept = 4096;

  // References must outlive this. `listed`: where a missed file is recorded, and whose held
  // entries count as named. `records`: asked whether a failure's record is on its way.
  SenderHistory(OutputDir& out, FsPool& fs, common::Clock& clock, AssemblerCounters& counters,
                KnownFiles& known, const FilesInFlight& files, ListedFiles& listed,
                const FailureRecords& records);
  SenderHistory(const SenderHistory&) = delete;
  SenderHistory& operator=(const SenderHistory&) = delete;

  // The gate that says where the sender's lanes go (null: one lane, here).
  void set_gate(const SenderSession* gate) { gate_ = gate; }
  // The journal that gets an R line for each failure resolved (may be null).
  void set_journal(OutcomeLog* journal) { journal_ = journal; }
  // A new session: the resends of the last one are forgotten.
  void start_session() { resends_.clear(); }

  // The sender's history: each file it names that is neither settled, in flight, nor known to
  // the current session (seen, filtered, held) is recorded as missed, unless its lane goes to
  // another receiver's host.
  void handle_history(const common::Packet& p);
  // A kResend of the current session: the next announce of its file id is a copy.
  void handle_resend(const common::Packet& p);
  // The announce of `f` (`flagged`: kFlagResend): true when it is a copy of a file delivered
  // here (logged, counted: the caller drops it); else `f` learns what it is a copy of, if any.
  // A flagged copy whose kResend was lost is skipped when a file of its name and size is in
  // place.
  [[nodiscard]] bool skip_copy(File& f, bool flagged);
  // `f`, a resend (File::resend_of), is delivered: the failure it copies is resolved (settled as
  // delivered, logged, its record marked and the journal's R line written on the pool); when its
  // record is on its way, that waits for recorded().
  void resolve(const File& f);
  // The record of failed file `f` is written at `where` (FailureRecords' on_recorded): the file
  // is settled as failed, or, when a resend resolved it meanwhile, its resolution is finished.
  void recorded(const common::FileIdentity& f, const std::string& where);
  // Whether a resend of this session resolved failed file `f` while its record was on its way
  // (recorded() then finishes the resolution).
  bool resolves(const common::FileIdentity& f) const {
    return waiting_.count({f.session, f.file_id}) != 0;
  }

 private:
  // Whether history record `r`'s lane goes to another receiver's host.
  bool left_elsewhere(const common::HistoryRecord& r) const;
  // Why the file of `r` never reached this receiver.
  std::string missed_reason(const common::HistoryRecord& r) const;
  // The file of `r` (any session), named only by the sender's history: recorded with `reason`.
  void record_missed(const common::HistoryRecord& r, const std::string& reason, uint64_t sender_id);
  // A resolution: the R line `o` (its record field set from `record`), the record marked with
  // o.reason, the Info line naming the copy at `path`.
  void finish_resolve(Outcome o, const std::string& path, const std::string& record);

  OutputDir& out_;
  FsPool& fs_;
  common::Clock& clock_;
  AssemblerCounters& counters_;
  KnownFiles& known_;
  const FilesInFlight& files_;
  ListedFiles& listed_;
  const FailureRecords& records_;
  const SenderSession* gate_ = nullptr;
  OutcomeLog* journal_ = nullptr;
  // kResend of this session by the copy's file id, until its announce.
  std::map<uint32_t, common::FileIdentity> resends_;
  // Failures resolved whose record is on its way, by (session, id): the R line and the copy's
  // path, oldest first by when they were resolved.
  struct Waiting {
    uint64_t order;
    Outcome outcome;
    std::string path;
  };
  std::map<std::pair<uint64_t, uint32_t>, Waiting> waiting_;
  uint64_t next_order_ = 0;
};

}  // namespace ddft::receiver
