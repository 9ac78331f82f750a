// The sender's state on its host (--state-dir DIR): who it is and what it has sent.
//
//   DIR/sender-id   the sender's id, 16 hex digits and a newline: made once at random, kept
//                   (--sender-id replaces it); every session carries it (kSenderInfo)
//   DIR/history     one line per file wholly on the wire, appended as its last end goes out:
//                   "H <sender id> <session> <file id> <size> <mtime ns> <verify> <digest or ->
//                   <sent ns> <lane> <path as a JSON string>" (ids and session in hex, times
//                   in ns since the epoch; lane: its number in that session, '*' striped over
//                   every lane, '-' not said); and "W <ns>" marks: every repeat on the wire
//                   due before that time went out (sender/source/history_feed.hpp)
//
// The history is shared by every run on the host (a hot folder and one-shot sends, one after
// the other or at once): each appends whole lines (O_APPEND, one write each) under a shared
// lock, and the file is rewritten only under an exclusive one, when a run opens it and finds
// entries past its limits (older than --history-hours, or past --history-mb: the oldest go). So
// a later run reads what earlier runs sent within the window, and can repeat it on the wire.
//
// Lines are not synced one by one: sync() makes them durable (at a session's end, and at most
// once a second while files keep coming, as the manifest does).
//
// History's append(), mark_sent_up_to() and sync() are thread-safe (one mutex); it owns the
// file's descriptor. Its constructor and sender_id_in() throw std::runtime_error with one line
// (start-up); a line that cannot be written later returns false, which HistoryRecorder logs and
// counts. HistoryRecorder's callbacks come from the transmit threads, one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "common/hash.hpp"
#include "common/history_wire.hpp"
#include "sender/events.hpp"

namespace ddft::sender {

inline constexpr const char* kSenderIdFile = "sender-id";
inline constexpr const char* kHistoryFile = "history";

// One file of the history.
struct HistoryEntry {
  uint64_t sender_id = 0;
  common::FileIdentity file;       // session, id, path, size, verify and digest as sent
  int64_t mtime_ns = 0;            // the source's mtime as announced
  int64_t sent_ns = 0;             // wall clock when its last end went out
  int lane = common::kLaneUnsaid;  // the lane that carried it (common::kLaneAll: striped)
};
// Its entry as the wire carries it.
inline common::HistoryRecord record_of(const HistoryEntry& e) {
  return common::HistoryRecord{e.file, e.sent_ns, e.lane};
}
// Its line (no newline), and back; parse returns false for a line that is not one.
std::string format_history_entry(const HistoryEntry& e);
[[nodiscard]] bool parse_history_entry(std::string_view line, HistoryEntry* out);

// Parses --sender-id: 1 to 16 hex digits, not all zero. False when `text` is not one.
[[nodiscard]] bool parse_sender_id(std::string_view text, uint64_t* out);

// The sender id kept in `dir` (created, mode 0700, when missing): `wanted` when given (written
// there, replacing any other), else the one kept, else a new random one (written there).
// Throws std::runtime_error with one line when the folder or the file cannot be read or
// written, or the file holds no id.
uint64_t sender_id_in(const std::string& dir, std::optional<uint64_t> wanted);

struct HistoryLimits {
  std::chrono::seconds keep_for{std::chrono::hours(25)};
  uint64_t max_bytes = uint64_t{64} << 20;
};

class History {
 public:
  using WallNs = std::function<int64_t()>;  // ns since the epoch
  // Opens DIR/history (creating DIR, mode 0700, and the file when missing), reads it and, when
  // entries are past `limits`, rewrites it without them. Throws std::runtime_error with one
  // line when it cannot. A damaged line (the half line of a crash) is skipped.
  History(const std::string& dir, HistoryLimits limits, WallNs wall_ns = {});
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // What the history held at opening within its limits, oldest first (earlier runs' entries).
  const std::vector<HistoryEntry>& entries() const { return entries_; }
  // The latest "sent up to" mark it held at opening (0: none).
  int64_t sent_up_to() const { return sent_up_to_; }
  // Appends a "sent up to" mark. False (errno set) when the write failed. Thread-safe.
  [[nodiscard]] bool mark_sent_up_to(int64_t ns);
  // Appends `e`. False (errno set) when the write failed. Thread-safe.
  [[nodiscard]] bool append(const HistoryEntry& e);
  // Makes every appended line durable. False (errno set) on failure. Thread-safe.
  [[nodiscard]] bool sync();
  const std::string& path() const { return path_; }

 private:
  // Opens path_ for appending into fd_ (mu_ held).
  [[nodiscard]] bool open_locked();
  // Appends `line` (newline included) to the file as it is named now. Thread-safe.
  [[nodiscard]] bool append_line(const std::string& line);

  std::string dir_;
  std::string path_;
  HistoryLimits limits_;
  WallNs wall_ns_;
  std::vector<HistoryEntry> entries_;
  int64_t sent_up_to_ = 0;
  std::mutex mu_;
  common::UniqueFd fd_;  // path_ opened O_APPEND (mu_)
};

class HistoryFeed;

// The SendObserver that appends each file sent to the history, and syncs it at the session's
// end and at most once a second. Callbacks come from the transmit threads, one at a time.
class HistoryRecorder final : public SendObserver {
 public:
  // `history` must outlive this.
  HistoryRecorder(History& history, uint64_t sender_id, common::VerifyType verify,
                  History::WallNs wall_ns = {});
  void session_started(uint64_t session_id) override { session_ = session_id; }
  void file_sent_via(const FileMeta& file, const common::Digest& digest, int list_lane) override;
  void idle() override;
  void session_finished(uint64_t session_id) override;
  // Hands each entry to `feed` too (may be null), and keeps the feed's "sent up to" mark in the
  // history, at most once a minute and at the session's end. `feed` must outlive this.
  void set_feed(HistoryFeed* feed) { feed_ = feed; }
  // Sync every line as it is written (a hot folder, which deletes or moves a file once sent:
  // the history must name it first).
  void sync_each_line(bool on) { sync_each_ = on; }
  // Lines that could not be written (the first logged).
  uint64_t errors() const { return errors_; }

 private:
  History& history_;
  uint64_t sender_id_;
  common::VerifyType verify_;
  History::WallNs wall_ns_;
  uint64_t session_ = 0;
  int64_t last_sync_ns_ = 0;
  bool sync_each_ = false;
  uint64_t errors_ = 0;
  HistoryFeed* feed_ = nullptr;
  int64_t last_mark_ns_ = 0;
  // Appends the feed's mark when a minute has passed since the last (or `now_anyway`).
  void mark(bool now_anyway);
};

}  // namespace ddft::sender
