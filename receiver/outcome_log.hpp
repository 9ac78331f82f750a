// The receiver's journal of what became of each file of the current sender session
// (OUTPUT/.ddft-outcomes): committing (about to be renamed into place), passed, or named as
// failed. It lets a receiver that restarts in the middle of a session tell the files an earlier
// run already finished from those it never saw, so that the session's file list (which the
// sender repeats) names as lost only files that really are, each exactly once; and it finishes
// at start-up a file that was renamed into place just before a crash, but not yet logged.
//
// One line per event, appended: "<kind> <session hex> <file id> <size> <verify> <key hex or ->
// <path as a JSON string>", and for F lines " <record as a JSON string> <reason as a JSON
// string> <bytes received>"; for P lines, when the file's repairs are known (not for a file the
// start-up finished), " <FEC rebuilt> <repeat filled>" (receiver/file_repairs.hpp). Lines are
// not synced on their own: the journal is rewritten to the current session's lines when a new
// session starts, and compacted when it grows.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "receiver/file_repairs.hpp"

namespace ddft::receiver {

inline constexpr const char* kOutcomeLogName = ".ddft-outcomes";

struct Outcome {
  // kFailed: its record is being written (record, reason and received say what it holds);
  // kLogged: its Error line is in the log too. A failure is whole once both lines are there:
  // the start-up finishes one that has only the first (recover_at_start()).
  enum class Kind : char { kCommitting = 'C', kPassed = 'P', kFailed = 'F', kLogged = 'L' };
  Kind kind = Kind::kFailed;
  common::FileIdentity file;
  // kFailed only (they follow the path on its line):
  std::string record;  // the record's path
  std::string reason;
  uint64_t received = 0;
  // kPassed only: what repaired it, when known (a P line without them: unknown).
  std::optional<FileRepairs> repairs;
};

// Formats one journal line (newline included), and parses one (without it). parse returns false
// for a damaged line.
std::string format_outcome(const Outcome& o);
bool parse_outcome(std::string_view line, Outcome* out);

// The journal file. append() may be called from any thread; the others from one thread.
class OutcomeLog {
 public:
  // Creates OUTPUT/.ddft-outcomes through `root_fd` when missing (the file is opened for each
  // use, not held). Throws std::runtime_error with a
  // one-line reason when it cannot. `root_fd` must outlive the log.
  explicit OutcomeLog(int root_fd);
  // Every valid line, in order (a damaged line, e.g. the half line of a crash, is skipped).
  std::vector<Outcome> read_all() const;
  // Appends one line. Best effort: false (errno set) when the write failed. Thread-safe.
  bool append(const Outcome& o);
  // Replaces the journal with `keep` (a temporary file renamed over it). False on failure.
  bool rewrite(const std::vector<Outcome>& keep);
  // Keeps only the lines of `session`, read and rewritten under one lock (no append between
  // them can be lost). False on failure. Thread-safe.
  bool keep_session(uint64_t session);

 private:
  common::UniqueFd open_journal(int flags) const;
  std::vector<Outcome> read_locked() const;               // mu_ held
  bool rewrite_locked(const std::vector<Outcome>& keep);  // mu_ held

  int root_fd_;
  mutable std::mutex mu_;  // one reader or writer of the file at a time
};

}  // namespace ddft::receiver
