// The receiver's journal of what became of each file (STATE/outcomes, state_dir.hpp): committing
// (about to be renamed into place), passed, or named as failed, over every sender session of a
// window of time (--journal-hours, bounded by --journal-mb). It lets a receiver that restarts tell
// the files an earlier run already finished from those it never saw, so that what the sender
// repeats (its file lists) names as lost only files that really are, each exactly once; and it
// finishes at start-up a file that was renamed into place just before a crash, but not yet
// logged.
//
// One line per event, appended: "<kind> <session hex> <file id> <size> <verify> <key hex or ->
// <path as a JSON string>", and for F and R lines " <record as a JSON string> <reason as a JSON
// string> <bytes received>"; for P lines, when the file's repairs are known (not for a file the
// start-up finished), " <FEC rebuilt> <repeat filled>" (receiver/delivery/file_repairs.hpp). A
// time mark "T <ns since the epoch>" goes before the first line of each minute: every line after
// it was written at that time or later (a reader that does not know T lines skips it as
// damaged). Lines are not synced on their own.
//
// Compaction (compact()): lines older than the window go; of the rest, each file keeps only what
// the start-up reads (its last line, and its last F line with the L line after it); past
// --journal-mb the oldest go too, with a warning. Done at start-up, after the recovery, and
// whenever the journal has doubled since the last compaction (in append()).
//
// append() and compact() from any thread (one mutex), the other calls from one. The file is
// opened for each use, never held. The constructor throws std::runtime_error with one line when
// the journal cannot be created (start-up); later, a write that fails returns false with errno.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "receiver/delivery/file_repairs.hpp"
#include "receiver/delivery/state_dir.hpp"

namespace ddft::receiver {

struct Outcome {
  // kFailed: its record is being written (record, reason and received say what it holds);
  // kLogged: its Error line is in the log too. A failure is whole once both lines are there:
  // the start-up finishes one that has only the first (recover_at_start()). kResolved: a failed
  // file delivered since by a resend (record: its record; reason: which copy delivered it).
  enum class Kind : char {
    kCommitting = 'C',
    kPassed = 'P',
    kFailed = 'F',
    kLogged = 'L',
    kResolved = 'R'
  };
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
[[nodiscard]] bool parse_outcome(std::string_view line, Outcome* out);

// How long the journal remembers, and how big it may grow.
struct JournalLimits {
  std::chrono::seconds keep_for{std::chrono::hours(25)};
  uint64_t max_bytes = uint64_t{256} << 20;
};

// The journal file. append() and compact() may be called from any thread; the others from one
// thread.
class OutcomeLog {
 public:
  // Creates kJournalName in the state folder `state_fd` when missing (the file is opened for each
  // use, not held). Throws std::runtime_error with a one-line reason when it cannot. `state_fd`
  // must outlive the log.
  // `wall_ns`: the wall clock in ns since the epoch (the time marks), system_clock by default.
  explicit OutcomeLog(int state_fd, JournalLimits limits = {},
                      std::function<int64_t()> wall_ns = {});
  // Every valid line, in order (a damaged line, e.g. the half line of a crash, is skipped).
  std::vector<Outcome> read_all() const;
  // Appends one line (after a time mark when a minute has passed since the last), and compacts
  // the journal when it has doubled since the last compaction. Best effort: false (errno set)
  // when the write failed. Thread-safe.
  [[nodiscard]] bool append(const Outcome& o);
  // Drops what is past the limits and what the start-up no longer needs (see the top). False
  // when the journal could not be rewritten (it is then left as it was). Thread-safe.
  [[nodiscard]] bool compact();
  // Replaces the journal with `keep` (a temporary file renamed over it). False on failure.
  [[nodiscard]] bool rewrite(const std::vector<Outcome>& keep);

 private:
  common::UniqueFd open_journal(int flags) const;
  std::vector<Outcome> read_locked() const;                             // mu_ held
  std::string read_text_locked() const;                                 // mu_ held
  [[nodiscard]] bool rewrite_locked(const std::vector<Outcome>& keep);  // mu_ held
  [[nodiscard]] bool replace_locked(const std::string& text);           // mu_ held
  [[nodiscard]] bool compact_locked();                                  // mu_ held

  int state_fd_;
  JournalLimits limits_;
  std::function<int64_t()> wall_ns_;
  mutable std::mutex mu_;        // one reader or writer of the file at a time
  int64_t last_mark_ns_ = 0;     // the last time mark written (mu_)
  uint64_t compacted_size_ = 0;  // the journal's size after the last compaction (mu_)
};

}  // namespace ddft::receiver
