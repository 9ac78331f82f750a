#include "receiver/delivery/recovery.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/log_format.hpp"

namespace ddft::receiver {

namespace {
std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

using FileKey = std::pair<uint64_t, uint32_t>;  // session, file id

// What the journal says of each file: the last word on it, in journal order; and for failed
// files their last F line and whether an L line (its Error line logged) came after it.
struct JournalView {
  std::map<FileKey, Outcome> last;
  std::map<FileKey, std::pair<Outcome, bool>> failed;
};

JournalView read_journal(OutcomeLog& journal) {
  JournalView v;
  auto& last = v.last;
  auto& failed = v.failed;
  for (Outcome& o : journal.read_all()) {
    const FileKey key{o.file.session, o.file.file_id};
    if (o.kind == Outcome::Kind::kFailed) failed[key] = {o, false};
    if (o.kind == Outcome::Kind::kLogged) {
      // An L line whose F line a crash cut short (a damaged line is skipped): logged, and
      // nothing known to finish.
      auto [it, added] = failed.try_emplace(key, o, true);
      it->second.second = true;
    }
    last[key] = std::move(o);
  }
  return v;
}

// Step 1 of recover_at_start(): every file whose last word is "committing" and that is in place
// is synced and logged Passed; each file the journal knows goes into r.known (but for one in
// place that cannot be synced).
void finish_committed(OutputDir& out, OutcomeLog& journal, std::map<FileKey, Outcome>& last,
                      StartRecovery& r) {
  for (auto& [key, o] : last) {
    r.known.push_back(key);
    if (o.kind != Outcome::Kind::kCommitting) continue;
    bool finished = false;
    std::string why;
    if (!out.finish_renamed(o.file, &finished, &why)) {
      // Not delivered: it stays under its name, but the next file list names it as failed.
      r.known.pop_back();
      spdlog::error(
          "Error: {}: renamed into place by an earlier run, but it cannot be synced "
          "now: {}",
          o.file.path, why);
      continue;
    }
    if (!finished) continue;  // not there: its temporary file, if any, is a leftover below
    ++r.delivered;
    o.kind = Outcome::Kind::kPassed;
    // Best effort, as every journal line: the file is delivered and logged either way.
    (void)journal.append(o);
    spdlog::info(
        "Info: {}: delivered by an earlier run of the receiver (session {:016x}, file "
        "{}), which stopped before logging it; synced now",
        o.file.path, o.file.session, o.file.file_id);
    const std::string key_text =
        o.file.digest.size() >= 8
            ? fmt::format("Key: 0x{}, {} Passed", upper(o.file.digest.substr(0, 8)),
                          o.file.verify_name())
            : std::string("Key: none, NONE Not verified");
    spdlog::info("File: {}, Trans: {} (bytes), Time: 00:00:00.000, Rate: 0.000 (MB/s), {}",
                 o.file.path, common::with_commas(o.file.size), key_text);
  }
}

// The journal's F line of leftover `l`, its record at `record`.
Outcome leftover_outcome(const Leftover& l, std::string record) {
  Outcome o;
  o.kind = Outcome::Kind::kFailed;
  o.file = l.file;
  o.record = std::move(record);
  o.reason = "the receiver stopped while the file was being received";
  o.received = l.bytes_present;
  return o;
}

// Step 2: a record and a line for every temporary file left behind. Returns the files named so.
// Each is journaled (F, under its record's name) before its record is written and its data
// removed, and again (L) once its line is logged: a stop anywhere in between leaves it named by
// the journal, and the next start finishes it under the same record (step 3, or this step again
// while its temporary file is still there). `failed`: the F lines of the journal.
std::set<FileKey> record_leftovers(OutputDir& out, OutcomeLog& journal, bool keep_partial,
                                   const std::map<FileKey, std::pair<Outcome, bool>>& failed,
                                   StartRecovery& r) {
  const auto claim = [&](const Leftover& l, const FailureRecord& rec) -> std::string {
    if (l.file.session == 0) return {};  // nothing names it but its temporary name
    const auto it = failed.find({l.file.session, l.file.file_id});
    std::string name = it != failed.end() ? out.record_name_at(it->second.first.record) : "";
    if (name.empty()) name = out.record_name(rec);
    if (!journal.append(leftover_outcome(l, out.record_path(name)))) {
      spdlog::warn(
          "Warn: {}: the journal cannot be written; if the receiver stops before this "
          "file's failure is logged, the next start may record it a second time",
          l.file.path);
    }
    return name;
  };
  std::set<FileKey> named_now;  // leftovers recorded just now
  for (const Leftover& l : out.recover_leftovers(keep_partial, claim)) {
    ++r.leftovers;
    const std::string where = l.record.empty() ? "could not be written" : l.record;
    Outcome o = leftover_outcome(l, l.record);
    if (!l.named) {
      // A file from before origins were written (or whose origin is damaged): only its
      // temporary name says which session and file it was.
      spdlog::warn(
          "Warn: {}: left incomplete by an earlier run of the receiver; moved to the "
          "failed folder (record: {})",
          l.temp_path, where);
    } else {
      spdlog::error(
          "Error: {} FAILED: the receiver stopped (crash, kill or power cut) while the "
          "file was being received; found at start-up (session {:016x}, file {}); "
          "received {} of {} bytes{}{}; record: {}",
          l.file.path, l.file.session, l.file.file_id, common::with_commas(l.bytes_present),
          common::with_commas(l.file.size),
          l.missing_text.empty() ? "" : "; missing bytes " + l.missing_text + " (as far as known)",
          l.data_kept ? "; partial data kept" : "; partial data removed", where);
    }
    if (l.file.session != 0) {
      o.kind = Outcome::Kind::kLogged;
      // Best effort, as every journal line: the Error line is logged either way.
      (void)journal.append(o);
      r.known.emplace_back(l.file.session, l.file.file_id);
      r.failed.push_back({{l.file.session, l.file.file_id}, l.record});
      named_now.insert({l.file.session, l.file.file_id});
    }
  }
  return named_now;
}

// Step 3: a failure an earlier run stopped in the middle of: its record is written (if it never
// was) and its Error line logged (if it never was), so that it is named exactly once. Files in
// `named_now` were named by step 2.
void finish_failures(OutputDir& out, OutcomeLog& journal,
                     std::map<FileKey, std::pair<Outcome, bool>>& failed,
                     const std::set<FileKey>& named_now) {
  for (auto& [key, entry] : failed) {
    // A kill between the journal's F line and the move of its temporary file: the leftover
    // above named it (with what it held); it is not named again.
    if (named_now.count(key) != 0) continue;
    Outcome& f = entry.first;
    const bool logged = entry.second;
    if (f.kind != Outcome::Kind::kFailed) continue;  // an L line without its F: nothing to do
    std::string where = f.record;
    bool wrote_now = false;
    if (!out.record_exists(f.record)) {
      wrote_now = true;
      FailureRecord rec;
      rec.file = f.file;
      rec.bytes_received = f.received;
      rec.reason = f.reason;
      rec.repairs_known = false;  // the journal's F line does not carry them
      TempFile none;
      // Under the name its F line gave it: data moved there before the stop is the record's.
      where = out.fail(none, rec, out.record_name_at(f.record));
      f.record = where;
      // Best effort, as every journal line: the record is written either way.
      if (!where.empty()) (void)journal.append(f);
    }
    if (logged) {
      if (wrote_now) {
        spdlog::info(
            "Info: {}: its failure record is written now (an earlier run of the receiver "
            "could not): {}",
            f.file.path, where.empty() ? "could not be written" : where);
      }
      continue;
    }
    spdlog::error(
        "Error: {} FAILED: {} (an earlier run of the receiver recorded it and stopped "
        "before logging it); found at start-up (session {:016x}, file {}); received {} "
        "of {} bytes; record: {}",
        f.file.path, f.reason, f.file.session, f.file.file_id, common::with_commas(f.received),
        common::with_commas(f.file.size), where.empty() ? "could not be written" : where);
    Outcome l = f;
    l.kind = Outcome::Kind::kLogged;
    // Best effort, as every journal line: the Error line is logged either way.
    (void)journal.append(l);
  }
}

}  // namespace

StartRecovery recover_at_start(OutputDir& out, OutcomeLog& journal, bool keep_partial) {
  StartRecovery r;
  JournalView view = read_journal(journal);
  finish_committed(out, journal, view.last, r);
  const std::set<FileKey> named_now = record_leftovers(out, journal, keep_partial, view.failed, r);
  finish_failures(out, journal, view.failed, named_now);
  for (const auto& [key, o] : view.last) {
    if (o.kind != Outcome::Kind::kFailed && o.kind != Outcome::Kind::kLogged) continue;
    auto it = view.failed.find(key);
    r.failed.emplace_back(key, it != view.failed.end() ? it->second.first.record : std::string());
  }
  return r;
}

}  // namespace ddft::receiver
