#include "receiver/assembly/sender_history.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <utility>

#include "common/json.hpp"
#include "common/logging.hpp"

namespace ddft::receiver {
using common::DecodeStatus;
using common::HistoryRecord;
using common::Packet;

SenderHistory::SenderHistory(OutputDir& out, FsPool& fs, common::Clock& clock,
                             AssemblerCounters& counters, KnownFiles& known,
                             const FilesInFlight& files, ListedFiles& listed,
                             const FailureRecords& records)
    : out_(out),
      fs_(fs),
      clock_(clock),
      counters_(counters),
      known_(known),
      files_(files),
      listed_(listed),
      records_(records) {}

void SenderHistory::handle_history(const Packet& p) {
  common::HistoryBundle bundle;
  if (common::decode_history(p.payload, &bundle) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  for (const HistoryRecord& r : bundle.records) {
    const uint64_t s = r.file.session;
    const uint32_t id = r.file.file_id;
    if (s == 0 || id == 0 || known_.settled().contains(s, id) || files_.count({s, id}) != 0) {
      continue;
    }
    // This session's: in flight, seen, filtered, or waiting for its lane.
    if (s == known_.session() && (known_.seen(id) || known_.filtered(id) || listed_.holds(id))) {
      continue;
    }
    if (left_elsewhere(r)) continue;
    record_missed(r, missed_reason(r), bundle.sender_id);
  }
}

bool SenderHistory::left_elsewhere(const HistoryRecord& r) const {
  if (gate_ == nullptr || r.lane < 0 || !gate_->all_lanes_named()) return false;
  if (gate_->lane_of_sender(r.lane) >= 0) return false;  // a lane here carried it
  return !gate_->sender_lane_to_this_host(r.lane);
}

std::string SenderHistory::missed_reason(const HistoryRecord& r) const {
  const std::string when = common::iso8601_local(std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(r.sent_ns))));
  // This session's, after the first file this receiver heard announced (of its channel): it was
  // receiving.
  const KnownFiles::Sent sent = r.file.session == known_.session()
                                    ? known_.sent_when(r.file.file_id, r.file.path)
                                    : KnownFiles::Sent::kBefore;
  if (sent == KnownFiles::Sent::kUnknown) {
    return fmt::format(
        "sent at {} in this session, file {}, while this receiver was not receiving, or all its "
        "packets lost (no file of its channel was heard yet; named by the sender's history)",
        when, r.file.file_id);
  }
  if (sent == KnownFiles::Sent::kWhileReceiving) {
    return fmt::format(
        "never reached this receiver: sent at {} in this session, all its packets lost (named "
        "by the sender's history)",
        when);
  }
  return fmt::format(
      "sent at {} in session {:016x}, file {}, while this receiver was not receiving (named by "
      "the sender's history)",
      when, r.file.session, r.file.file_id);
}

void SenderHistory::record_missed(const HistoryRecord& r, const std::string& reason,
                                  uint64_t sender_id) {
  known_.remember_named(r.file.session, r.file.file_id, clock_.now());
  FailureRecord rec;
  rec.file = r.file;
  rec.sender_id = sender_id;
  if (r.file.size > 0) {
    rec.missing.emplace_back(0, r.file.size);
    rec.missing_ranges_total = 1;
  }
  rec.reason = reason;
  if (listed_.record_unheard(std::move(rec), r.lane, "history")) ++counters_.files_missed;
}

void SenderHistory::handle_resend(const Packet& p) {
  common::Resend r;
  if (common::decode_resend(p.payload, &r) != DecodeStatus::kOk || r.file_id == 0) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  if (resends_.size() >= kResendsKept) resends_.erase(resends_.begin());
  resends_[r.file_id] = std::move(r.of);
}

bool SenderHistory::skip_copy(File& f, bool flagged) {
  auto it = resends_.find(f.id);
  if (it == resends_.end()) {
    if (!flagged) return false;
    // Its kResend was lost: the copy is skipped when a file of that name and size is in place
    // (what it is a copy of, delivered), else taken as the file.
    struct stat st {};
    if (::fstatat(out_.root_fd(), f.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != f.size) {
      return false;
    }
    ++counters_.resends_skipped;
    spdlog::info(
        "Info: {}: a copy of a file sent before (which one was lost on the way); the file of "
        "that name and size is in place: not written (resent as file {} of session {:016x})",
        common::json_quote(f.path), f.id, f.session);
    return true;
  }
  common::FileIdentity of = std::move(it->second);
  resends_.erase(it);
  if (known_.settled().fate(of.session, of.file_id) == SettledFiles::Fate::kPassed) {
    ++counters_.resends_skipped;
    spdlog::info(
        "Info: {}: a copy of the file delivered in session {:016x} (file {}); not written "
        "(resent as file {} of session {:016x})",
        common::json_quote(f.path), of.session, of.file_id, f.id, f.session);
    return true;
  }
  f.resend_of = std::move(of);
  return false;
}

void SenderHistory::resolve(const File& f) {
  const common::FileIdentity& of = *f.resend_of;
  SettledFiles& settled = known_.settled();
  const std::string record = settled.record(of.session, of.file_id);
  settled.add(of.session, of.file_id, clock_.now(), SettledFiles::Fate::kPassed);
  ++counters_.resends_delivered;
  // The journal's R line: a later copy of it is skipped, and the start-up knows it delivered.
  Outcome o;
  o.kind = Outcome::Kind::kResolved;
  o.file = identity_of(f);
  o.file.session = of.session;
  o.file.file_id = of.file_id;
  o.reason = fmt::format("delivered on resend (session {:016x}, file {}) at {}", f.session, f.id,
                         common::iso8601_local(std::chrono::system_clock::now()));
  if (record.empty() && records_.writing(of.session, of.file_id)) {
    // Its record and F line are on their way: the R line must come after them, and the record
    // be there to mark.
    if (waiting_.size() >= kResendsKept) {
      auto oldest = waiting_.begin();
      for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
        if (it->second.order < oldest->second.order) oldest = it;
      }
      finish_resolve(std::move(oldest->second.outcome), oldest->second.path, "");
      waiting_.erase(oldest);
    }
    waiting_[{of.session, of.file_id}] = Waiting{next_order_++, std::move(o), f.path};
    return;
  }
  finish_resolve(std::move(o), f.path, record);
}

void SenderHistory::recorded(const common::FileIdentity& f, const std::string& where) {
  auto it = waiting_.find({f.session, f.file_id});
  if (it == waiting_.end()) {
    known_.settled().add(f.session, f.file_id, clock_.now(), SettledFiles::Fate::kFailed, where);
    return;
  }
  Waiting w = std::move(it->second);
  waiting_.erase(it);
  finish_resolve(std::move(w.outcome), w.path, where);
}

void SenderHistory::finish_resolve(Outcome o, const std::string& path, const std::string& record) {
  spdlog::info("Info: {}: {}: the failure of session {:016x}, file {} is resolved{}",
               common::json_quote(path), o.reason, o.file.session, o.file.file_id,
               record.empty() ? "" : "; record: " + record);
  o.record = record;
  fs_.post(
      [o, j = journal_, &out = out_] {
        // Best effort, as every journal line: the record is marked resolved either way.
        if (j != nullptr) (void)j->append(o);
        if (!o.record.empty() && !out.resolve_record(o.record, o.reason)) {
          spdlog::warn("Warn: the record {} could not be marked resolved", o.record);
        }
      },
      nullptr);
}

}  // namespace ddft::receiver
