// The send manifest (--manifest FILE): one JSON object per line for every file the sender sent or
// failed, appended, for reconciliation against the receive log (scripts/dd_reconcile):
//
//   {"time":"2026-11-22T18:20:01.123+01:00","session":"0f3c9a7d12e45b60","file_id":3,
//    "path":"a/b.txt","size":1048576,"verify":"B2B","key":"0x6999CF78","status":"sent"}
//   {..."file_id":0,"path":"a/c.txt","size":0,"verify":"B2B","key":null,"status":"failed",
//    "reason":"cannot read '/x/a/c.txt': Permission denied"}
//   {..."file_id":0,"path":"a/l","size":0,"verify":"B2B","key":null,"status":"skipped",
//    "reason":"skipping symbolic link '/x/a/l' (to 'b'; --symlinks skip)"}
//
// (each object on one line). "skipped": a symbolic link left out on purpose (--symlinks skip,
// or a folder reached a second time under --symlinks follow), never sent; one line per link, so
// that the manifest counts them too. `session` is printed as the logs print it; `key` as the
// receive log's "Key:" field, null with verify NONE and for a failed file; `file_id` 0 for a file
// that never got one (it could not be opened); `path` is the name the receiver is told (a channel's
// file: CHANNEL/..., and the line ends with "channel":"CHANNEL"). Strings are
// JSON (common::json_quote): a byte of a name that is not UTF-8 is written as \u00XX (XX >= 80),
// which a reader maps back to that byte, since real characters from U+0080 on are written as
// UTF-8, never escaped.
//
// Each line is written whole with one write() on a descriptor opened O_APPEND, so a crash leaves
// no half line and several senders may share one manifest. Lines are made durable (fdatasync)
// when the session ends and, while files keep coming, at most once a second (after every line
// with sync_each_line()): the page cache keeps every written line across a crash of the program,
// and a sync per line would cost the link's thread a disk flush per file.
//
// ManifestWriter owns the file. Its callbacks come from the transmit threads one at a time,
// link_left_out() from any thread. The constructor throws std::runtime_error with one line when
// the file cannot be opened (start-up); a line or a sync that fails later is logged and counted
// (errors()), never thrown.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.hpp"
#include "common/fd.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "sender/events.hpp"

namespace ddft::sender {

// A manifest line's "status".
enum class ManifestStatus { kSent, kFailed, kSkipped };

// The manifest's line for one file (no newline). `key` empty: null. `reason` empty: no reason
// field (a sent file).
std::string manifest_line(std::chrono::system_clock::time_point time, uint64_t session_id,
                          uint32_t file_id, std::string_view path, uint64_t size,
                          common::VerifyType verify, std::string_view key, ManifestStatus status,
                          std::string_view reason);

// The SendObserver that writes the manifest. Callbacks come from the transmit threads, one at a
// time; link_left_out() from any thread (a mutex keeps the lines whole and in order).
class ManifestWriter final : public SendObserver {
 public:
  using WallClock = std::function<std::chrono::system_clock::time_point()>;

  // Opens `path` for appending (created with mode 0644 when missing). Throws std::runtime_error
  // with one line ("cannot open the manifest '/x/m.jsonl': Permission denied") when it cannot:
  // at start, before anything is sent. `clock` times the periodic syncs and must outlive the
  // writer; `wall` gives each line's time (the system clock unless a test fixes it).
  ManifestWriter(const std::string& path, common::VerifyType verify, common::Clock& clock,
                 WallClock wall = std::chrono::system_clock::now);
  // Syncs what is not yet synced and closes the file.
  ~ManifestWriter() override;
  ManifestWriter(const ManifestWriter&) = delete;
  ManifestWriter& operator=(const ManifestWriter&) = delete;

  // Syncs after every line. The hot folder asks for it: it deletes or moves a file once it is sent,
  // so its line must not be lost to a power cut after the file is gone.
  void sync_each_line(bool on) { sync_each_line_ = on; }

  void session_started(uint64_t session_id) override;
  void file_sent(const FileMeta& file, const common::Digest& digest) override;
  void file_failed(const FileMeta& file, const std::string& reason) override;
  void session_finished(uint64_t session_id) override;
  // A symbolic link not sent: a "skipped" line (`failed` false), or a "failed" one (--symlinks
  // error in the hot folder), file_id 0, size 0, with `reason`. Before the session has started
  // the line is kept and written when it starts (its session is known then). Thread-safe.
  void link_left_out(std::string_view rel_path, std::string_view reason, bool failed);

  // Makes every line written so far durable (fdatasync). Returns false, with an Error: line
  // logged, when the disk refuses.
  bool sync();
  // Lines that could not be written, and failed syncs. Each was logged with an Error: line
  // (a lost line with its text, so that nothing is lost); the program's exit status says so.
  uint64_t errors() const {
    std::lock_guard lock(mu_);
    return errors_;
  }
  // fdatasync calls made that synced something.
  uint64_t syncs() const {
    std::lock_guard lock(mu_);
    return syncs_;
  }

 private:
  struct LeftOut {
    std::string rel_path;
    std::string reason;
    bool failed = false;
  };
  void append(const std::string& line);    // under mu_
  void append_left_out(const LeftOut& l);  // under mu_
  bool sync_locked();                      // under mu_

  std::string path_;
  common::VerifyType verify_;
  common::Clock& clock_;
  WallClock wall_;
  common::UniqueFd fd_;
  mutable std::mutex mu_;
  uint64_t session_id_ = 0;
  bool started_ = false;           // session_started() came
  std::vector<LeftOut> left_out_;  // link_left_out() before it
  bool sync_each_line_ = false;
  bool dirty_ = false;   // lines written since the last sync
  bool broken_ = false;  // a write was cut short: the next line starts on a line of its own
  common::Clock::time_point last_sync_{};
  uint64_t errors_ = 0;
  uint64_t syncs_ = 0;
};

}  // namespace ddft::sender
