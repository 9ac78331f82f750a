// The hot folder (dd_file_send --watch DIR): one long session that sends every regular file that
// lands in DIR or a subfolder, under its path relative to DIR, once it is complete, then deletes
// it or moves it to --sent-dir.
//
//   inotify (every folder of the tree) ──events──> ReadinessTracker (sender/source/readiness.hpp)
//   scans (start, overflow, new folder) ─found──>      │ take_ready
//                                                      v
//   Reader <── next() ── HotFolder ── file_sent ──> journal "sent" (fdatasync) ──> private name
//   (reader thread)                   (tx thread)   ──> its inode checked ──> delete or move
//                                                   ──> journal "done" ──> emptied folders removed
//                                                                          after the settle time
//   file_failed ──> the file stays, held until it changes
//
// FIFOs, sockets and devices are skipped with a warning (once per path); names starting ".ddft-"
// are reserved (the journal); --include/--exclude leave a file in place, logged once. A symbolic
// link is never followed (what is sent is deleted or moved, and a link's target is not the hot
// folder's to remove): --symlinks skip (a Warn line) or error (an Error line, a failure), once
// per link as it appears, counted, and told to HotFolderOptions::on_link (the manifest).
// With --shard K/N the files of other shards are another host's: ignored here, without a word.
//
// Renames by producers never make a file go twice or be lost: the file handed to the reader is
// opened here and checked against the version found settled (one renamed over the name since is
// a change, and waits its settle time), and a sent file is first renamed to a private name in its
// folder (finishing_name()), then the inode that moved is checked: a new version renamed over
// the name in that instant is put back (under its name, or "name.N.ext" when that is taken
// again) and sent, never removed. A stop between the two is finished at the next start from the
// journal's record.
//
// Its parts, each a unit of its own: TreeWatch (the inotify watches, scans, DIR's loss, emptied
// folders), EntryFilter (what is sent and what is said of the rest), ReadinessTracker (when a
// file is complete), SentRemoval (a sent file deleted or moved through its private name) and the
// journal (WatchJournal). The hot folder hands files out, records them as sent and finishes them.
//
// next() runs on the reader thread, the SendObserver callbacks on the transmit threads; one mutex
// serialises them. The hot folder owns its parts (the inotify descriptor, the journal). The
// constructor throws std::runtime_error with one line on a bad setting, before touching any file;
// once running, a file that cannot be sent or removed is logged and held, never thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.hpp"
#include "common/fd.hpp"
#include "common/path_filter.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/source/file_list.hpp"
#include "sender/source/hot_folder_options.hpp"
#include "sender/source/readiness.hpp"
#include "sender/source/resend_schedule.hpp"
#include "sender/source/retention.hpp"
#include "sender/source/sent_removal.hpp"
#include "sender/source/shard.hpp"
#include "sender/source/watch_journal.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class EntryFilter;
class TreeWatch;

// A FileSource for Sender::run() and the SendObserver that must be added to the same Sender (it
// removes what was sent). next() runs on the reader thread, the callbacks on the transmit threads;
// a mutex serialises them. Ignores SIGIO process-wide (see probe()).
class HotFolder final : public FileSource, public SendObserver {
 public:
  // Checks the paths, opens the journal and finishes what it recorded as sent, watches DIR and
  // scans it. Throws std::runtime_error with a one-line reason on a bad setting (DIR missing or not
  // a folder; --sent-dir missing, inside DIR or on another filesystem; a journal inside DIR whose
  // name does not start with ".ddft-"), before touching any file. `clock` must outlive this.
  HotFolder(HotFolderOptions opt, common::Clock& clock);
  ~HotFolder() override;
  HotFolder(const HotFolder&) = delete;
  HotFolder& operator=(const HotFolder&) = delete;

  // Blocks until a file is ready (polling inotify, probing files as their settle time passes);
  // nothing once `stop` is requested or DIR itself went away.
  std::optional<SourceFile> next(std::stop_token stop) override;
  std::string describe() const override;
  // What waits for its settle time or to be sent (thread-safe).
  std::optional<Backlog> backlog() const override;

  void file_sent(const FileMeta& file, const common::Digest& digest) override;
  void file_failed(const FileMeta& file, const std::string& reason) override;

  // One step of next() without waiting: reads the pending events, rescans after an overflow,
  // removes emptied folders that are due, probes what is due. Returns a ready file, if any.
  // Tests call it with a FakeClock.
  std::optional<SourceFile> poll();
  // True once DIR itself was deleted or moved away: the session ends.
  bool lost_root() const;
  // Files deleted or moved after sending, in this run (replayed ones included).
  uint64_t files_removed() const;
  // Symbolic links left out (each time one appeared), under --symlinks skip and error.
  uint64_t links_skipped() const;
  uint64_t links_failed() const;
  // What the sender's status tells of this hot folder (thread-safe).
  struct FolderStatus {
    std::string dir;               // the folder watched
    std::string sent_dir;          // --sent-dir, "" when sent files are deleted
    uint64_t refused = 0;          // files left out (filter, names, not regular, links)
    uint64_t retention_bytes = 0;  // what --sent-dir holds, when pruned (0 otherwise)
    uint64_t retention_limit = 0;  // --sent-keep-gb in bytes, 0 none
  };
  FolderStatus folder_status() const;

 private:
  struct Handout {
    std::string rel;
    FileIdentity id;
  };

  // Under mu_:
  [[nodiscard]] std::optional<FileProbe> probe(const std::string& rel);
  // Opens ready file `r` for the reader and checks that it is still the version found settled;
  // if not, it goes back to waiting and nothing is handed out.
  std::optional<SourceFile> hand_out(const ReadinessTracker::Ready& r,
                                     common::Clock::time_point now);
  // A record of the journal whose file is under its private name at start: finished.
  void replay_private(const JournalRecord& r, const std::string& priv);
  void hook(std::string_view point, const std::string& rel) const {
    if (opt_.test_hook) opt_.test_hook(point, rel);
  }
  // Finishes the files the journal recorded as sent before a restart.
  void replay();
  std::string abs(const std::string& rel) const;
  void wake();

  HotFolderOptions opt_;
  common::Clock& clock_;
  std::string journal_path_;
  mutable std::mutex mu_;
  ReadinessTracker tracker_;                      // guarded by mu_
  std::unique_ptr<SentRemoval> removal_;          // guarded by mu_
  std::unique_ptr<EntryFilter> entries_;          // guarded by mu_
  std::unique_ptr<TreeWatch> watch_;              // guarded by mu_
  std::unique_ptr<WatchJournal> journal_;         // guarded by mu_
  common::UniqueFd wake_fd_;                      // eventfd: stop, or work for next() to do
  std::map<uint64_t, Handout> handed_out_;        // by SourceFile::tag; guarded by mu_
  std::vector<JournalRecord> kept_after_replay_;  // sent before a restart, not removable
  uint64_t next_tag_ = 0;
  uint64_t removed_ = 0;
  unsigned sent_records_ = 0;
  std::stop_token stop_;  // the session's, from next()
};

}  // namespace ddft::sender
