#include "receiver/assembly/failure_records.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "common/json.hpp"
#include "common/log_format.hpp"

namespace ddft::receiver {
using namespace std::chrono;

namespace {
// As many unnamed failures kept as the file table keeps recent file ids.
constexpr size_t kUnnamedKept = 262144;
constexpr size_t kUnwrittenKept = 10000;

// The journal's F line for a file named as failed by `rec`, whose record goes to `record`.
Outcome failed_outcome(const FailureRecord& rec, const std::string& record) {
  Outcome o;
  o.kind = Outcome::Kind::kFailed;
  o.file = rec.file;
  o.record = record;
  o.reason = rec.reason;
  o.received = rec.bytes_received;
  return o;
}
}  // namespace

std::string format_missing(const std::vector<std::pair<uint64_t, uint64_t>>& missing) {
  std::string ranges;
  for (size_t i = 0; i < std::min(missing.size(), kMissingRangesInLog); ++i) {
    ranges += fmt::format("{}{}-{}", i ? ", " : "", missing[i].first, missing[i].second);
  }
  return ranges;
}

FailureRecords::FailureRecords(OutputDir& out, FsPool& fs, common::Clock& clock, bool keyed,
                               AssemblerCounters& counters)
    : out_(out), fs_(fs), clock_(clock), keyed_(keyed), counters_(counters) {}

bool FailureRecords::take_slot(bool vouched) {
  // With a key only the authenticated sender can make refusals: each is recorded, whatever the
  // rate (a full disk refusing a thousand files must say which).
  if (keyed_) return true;
  roll_window(clock_.now());
  if (vouched ? ++vouched_in_window_ <= kVouchedRecordsPerMinute
              : ++in_window_ <= kRecordsPerMinute) {
    return true;
  }
  ++counters_.records_suppressed;
  return false;
}

void FailureRecords::roll_window(common::Clock::time_point now, bool force) {
  if (!force && now - window_ < minutes(1)) return;
  const uint64_t left_out =
      (in_window_ > kRecordsPerMinute ? in_window_ - kRecordsPerMinute : 0) +
      (vouched_in_window_ > kVouchedRecordsPerMinute ? vouched_in_window_ - kVouchedRecordsPerMinute
                                                     : 0);
  if (left_out > 0) {
    spdlog::warn(
        "Warn: {} refused file(s), or failed ones that had received nothing, got no "
        "record and no log line (at most {} a minute, {} for files the sender's file "
        "list or end packet vouches for: a flood of announces?)",
        left_out, kRecordsPerMinute, kVouchedRecordsPerMinute);
  }
  window_ = now;
  in_window_ = 0;
  vouched_in_window_ = 0;
}

void FailureRecords::refuse(const FailureRecord& rec, const std::string& reason) {
  if (!take_slot()) return;
  write(rec, nullptr, [path = rec.file.path, reason](const std::string& where) {
    spdlog::error("Error: refused file {}: {} (record: {})", common::json_quote(path), reason,
                  where.empty() ? "not written" : where);
  });
}

void FailureRecords::write(const FailureRecord& given, std::shared_ptr<TempFile> tmp,
                           std::function<void(const std::string&)> then) {
  FailureRecord rec = given;
  if (rec.sender_id == 0 && sender_of_) rec.sender_id = sender_of_(rec.file.session);
  const bool tracked = rec.file.session != 0 && !rec.no_record;
  if (tracked) writing_.insert({rec.file.session, rec.file.file_id});
  auto where = std::make_shared<std::string>();
  // The journal's F line first, naming the record to come: a crash before the record is
  // written, or before its Error line is logged, is finished at the next start (the record
  // written, the line logged), and the file list cannot name the file a second time. Then the
  // record (whole or not at all), the Error line, and the journal's L line.
  fs_.post(
      [this, rec, tmp, where, j = journal_] {
        const std::string name = out_.record_name(rec);
        if (j != nullptr && rec.file.session != 0 && !rec.no_record) {
          // Best effort, as every journal line: the record and its Error line go ahead without it.
          (void)j->append(failed_outcome(rec, out_.record_path(name)));
        }
        TempFile none;
        *where = out_.fail(tmp ? *tmp : none, rec, name);
      },
      [this, rec, tmp, where, tracked, then = std::move(then)] {
        // Kept for retry() when not written: still on its way.
        if (tracked && (!out_.has_records() || !where->empty())) {
          writing_.erase({rec.file.session, rec.file.file_id});
        }
        if (!out_.has_records()) {
          // --sink null without --output: no folder to write it to, the Error line is all.
          then(std::string(kRecordInLogOnly));
          note_logged(rec);
          return;
        }
        // Not written (a read-only or full file system): kept, and tried again until the file
        // system takes it (retry()), so that the file is named on disk too.
        if (where->empty() && !rec.no_record) keep_unwritten(rec, tmp);
        if (!where->empty() && on_recorded_) on_recorded_(rec.file, *where);
        then(*where);
        note_logged(rec);
      });
}

void FailureRecords::note_logged(const FailureRecord& rec) {
  if (journal_ == nullptr || rec.file.session == 0 || rec.no_record) return;
  Outcome o = failed_outcome(rec, "");
  o.kind = Outcome::Kind::kLogged;
  // Best effort, as every journal line: the Error line is logged whether or not this is written.
  fs_.post([j = journal_, o] { (void)j->append(o); }, nullptr);
}

void FailureRecords::keep_unwritten(const FailureRecord& rec, std::shared_ptr<TempFile> tmp) {
  if (unwritten_.size() >= kUnwrittenKept) {
    ++unwritten_dropped_;
    const common::FileIdentity& dropped = unwritten_.front().rec.file;
    writing_.erase({dropped.session, dropped.file_id});
    unwritten_.pop_front();
  }
  unwritten_.push_back({rec, std::move(tmp)});
}

void FailureRecords::write_named(FailureRecord rec, bool vouched) {
  // Without --key-file anyone on the link could forge lists: still bounded, by the larger budget
  // of files the sender vouches for. With a key, every one is recorded.
  rec.no_record = !take_slot(vouched);
  const std::string ranges = format_missing(rec.missing);
  const std::string line =
      rec.no_record ? std::string()
                    : fmt::format("Error: {} FAILED: {}; received {} of {} bytes{}", rec.file.path,
                                  rec.reason, common::with_commas(rec.bytes_received),
                                  common::with_commas(rec.file.size),
                                  ranges.empty() ? "" : "; missing bytes " + ranges);
  write(rec, nullptr, [line](const std::string& where) {
    if (line.empty()) return;
    spdlog::error("{}; record: {}", line, where.empty() ? "could not be written" : where);
  });
}

void FailureRecords::retry(common::Clock::time_point now, bool force) {
  if (force) last_retry_ = {};
  if (unwritten_.empty() || retrying_ || now - last_retry_ < seconds(5)) return;
  last_retry_ = now;
  retrying_ = true;
  // One task writes them in order and stops at the first that still fails.
  auto batch = std::make_shared<std::deque<Unwritten>>();
  batch->swap(unwritten_);
  auto written = std::make_shared<std::vector<std::string>>();
  fs_.post(
      [this, batch, written, j = journal_] {
        for (const Unwritten& u : *batch) {
          TempFile none;
          const std::string name = out_.record_name(u.rec);
          const std::string where = out_.fail(u.tmp ? *u.tmp : none, u.rec, name);
          if (where.empty()) break;
          if (j != nullptr && u.rec.file.session != 0) {
            // Best effort, as every journal line: the record is written either way.
            (void)j->append(failed_outcome(u.rec, where));
            Outcome logged = failed_outcome(u.rec, "");
            logged.kind = Outcome::Kind::kLogged;  // its Error line was logged when it failed
            (void)j->append(logged);
          }
          written->push_back(where);
        }
      },
      [this, batch, written] {
        retrying_ = false;
        for (size_t i = 0; i < written->size(); ++i) {
          const FailureRecord& rec = (*batch)[i].rec;
          spdlog::info(
              "Info: {}: its failure record is written now (the file system takes "
              "writes again): {}",
              rec.file.path, (*written)[i]);
          writing_.erase({rec.file.session, rec.file.file_id});
          if (on_recorded_) on_recorded_(rec.file, (*written)[i]);
        }
        // What is still unwritten goes back in front of anything that failed meanwhile.
        for (size_t i = batch->size(); i > written->size(); --i) {
          unwritten_.push_front(std::move((*batch)[i - 1]));
        }
        if (unwritten_dropped_ > 0) {
          spdlog::warn(
              "Warn: {} failure record(s) could not be written and were given up (more "
              "than 10,000 waited for the file system); their Error lines name them",
              unwritten_dropped_);
          unwritten_dropped_ = 0;
        }
      });
}

void FailureRecords::keep_unnamed(uint64_t session, uint32_t id, const FailureRecord& rec) {
  unnamed_.emplace(std::make_pair(session, id), rec);
  if (unnamed_.size() > kUnnamedKept) unnamed_.erase(unnamed_.begin());
}

std::optional<FailureRecord> FailureRecords::take_unnamed(uint64_t session, uint32_t id) {
  auto it = unnamed_.find({session, id});
  if (it == unnamed_.end()) return std::nullopt;
  FailureRecord rec = std::move(it->second);
  unnamed_.erase(it);
  return rec;
}

void FailureRecords::forget_unnamed(uint64_t session) {
  unnamed_.erase(unnamed_.lower_bound({session, 0}), unnamed_.upper_bound({session, UINT32_MAX}));
}

}  // namespace ddft::receiver
