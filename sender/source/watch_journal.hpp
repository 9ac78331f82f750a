// The hot folder's journal (--watch-journal, default DIR/.ddft-watch-journal): what lets a
// restart neither send a file twice nor forget one.
//
// A file wholly on the wire is recorded "sent" (durably: fdatasync) before it is deleted or moved
// to --sent-dir, and "done" after. On start, a file still in the folder whose identity matches a
// record sent but not done was sent before a crash: it is finished without being sent again.
// Anything else present is sent (a file whose send was interrupted never arrived whole).
//
// The file is text, one record a line, appended:
//   ddft-watch-journal 1                               (the first line)
//   S <dev> <ino> <size> <mtime_ns> <path> <check>     sent
//   D <dev> <ino> <size> <mtime_ns> <path> <check>     done (deleted or moved)
// <path> is the relative path with every byte outside '!'..'~' and '%' written as %XX, so any
// name is one field; <check> is 8 hex digits, the first 32 bits of the XXH3-128 of the line up to
// the space before it, so a torn or altered line is told from a good one.
//
// Not thread-safe: HotFolder serialises the calls. The journal owns its descriptor. The
// constructor throws std::runtime_error with one line when the file cannot be read or created,
// or is not a journal (start-up); the records and compact() return a std::error_code.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.hpp"
#include "sender/source/readiness.hpp"

namespace ddft::sender {

struct JournalRecord {
  std::string rel_path;
  FileIdentity id;
  bool operator==(const JournalRecord&) const = default;
};

// One record as a line (newline included), and back. parse_journal_line() returns nothing and
// sets *why (a short reason) for a damaged line; *done tells a "D" record from an "S" one.
std::string format_journal_line(char kind, const JournalRecord& r);
[[nodiscard]] std::optional<JournalRecord> parse_journal_line(std::string_view line, bool* done,
                                                              std::string* why);

// Owns the journal file. Not thread-safe: HotFolder serialises the calls.
class WatchJournal {
 public:
  static constexpr std::string_view kHeader = "ddft-watch-journal 1";
  // Compacted once it holds this many lines.
  static constexpr size_t kCompactLines = 4096;

  // Opens `path`, creating it (durably, with its header) when missing, and reads it. A damaged
  // line is logged (one Warn: line naming the file and line) and skipped, and the journal as
  // found is kept as PATH.damaged; skipping loses nothing: at worst a file it recorded as sent is
  // sent once more. Throws std::runtime_error (one line) when the file cannot be read or created,
  // or is not a journal at all (another file given by mistake is never overwritten).
  // `compact_lines`: compact when it holds this many lines (tests make it small).
  explicit WatchJournal(std::string path, size_t compact_lines = kCompactLines);
  WatchJournal(const WatchJournal&) = delete;
  WatchJournal& operator=(const WatchJournal&) = delete;

  // Records sent and not done, in path order.
  std::vector<JournalRecord> unfinished() const;
  // "line N: reason" of each damaged line found by the constructor.
  const std::vector<std::string>& damaged() const { return damaged_; }

  // Appends a "sent" record and waits until it is on the disk (fdatasync). False, with the
  // kernel's reason (strerror) in *why, when it cannot.
  [[nodiscard]] bool record_sent(const JournalRecord& r, std::string* why);
  // Appends a "done" record (not synced: when it is lost, the restart finds the file gone, or
  // finishes it again). Compacts the journal when it has grown to `compact_lines`. False, with
  // *why set, when the append or the compaction failed.
  [[nodiscard]] bool record_done(const JournalRecord& r, std::string* why);
  // Drops a sent record without a "done" (its file is gone or changed): kept out of the next
  // compaction.
  void forget(const std::string& rel_path);
  // Rewrites the journal with the unfinished records only: written to PATH.tmp, synced, renamed
  // over it, and the folder synced. False, with *why set, when a step failed.
  [[nodiscard]] bool compact(std::string* why);

  const std::string& path() const { return path_; }
  size_t lines() const { return lines_; }

 private:
  // Takes in the records of journal `text` (its header included): unfinished_, lines_, and a
  // damaged_ entry and a warning for each damaged line.
  void load(const std::string& text);
  // Appends `line` (synced with `sync`); false with *why set when it cannot.
  [[nodiscard]] bool append(const std::string& line, bool sync, std::string* why);
  // Opens the journal for appending into fd_; false with *why set when it cannot.
  [[nodiscard]] bool open_for_append(std::string* why);

  std::string path_;
  size_t compact_lines_;
  common::UniqueFd fd_;
  size_t lines_ = 0;  // records in the file (the header not counted)
  std::map<std::string, FileIdentity> unfinished_;
  std::vector<std::string> damaged_;
};

}  // namespace ddft::sender
