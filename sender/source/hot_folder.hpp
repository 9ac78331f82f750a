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
// next() runs on the reader thread, the SendObserver callbacks on the transmit threads; one mutex
// serialises them. The hot folder owns its inotify descriptor and its journal. The constructor
// throws std::runtime_error with one line on a bad setting, before touching any file; once
// running, a file that cannot be sent or removed is logged and held, never thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
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
#include "sender/source/readiness.hpp"
#include "sender/source/resend_schedule.hpp"
#include "sender/source/retention.hpp"
#include "sender/source/shard.hpp"
#include "sender/source/watch_journal.hpp"
#include "sender/work_item.hpp"

struct inotify_event;  // <sys/inotify.h>

namespace ddft::sender {

struct HotFolderOptions {
  std::string dir;       // --watch
  std::string sent_dir;  // --sent-dir; empty: delete sent files
  // --sent-keep-hours, --sent-keep-gb: sent_dir is a retention folder pruned to these
  // (sender/source/retention.hpp); both 0: kept for good.
  RetentionLimits retention;
  // --resend-after: the resends next() hands out as they come due, told where each sent file
  // was moved (may be null; must outlive the hot folder).
  ResendSchedule* resends = nullptr;
  double settle_s = 5;  // --settle
  // --watch-journal; empty: DIR/.ddft-watch-journal, or with --shard K/N
  // DIR/.ddft-watch-journal.shard-K-of-N (hosts sharing DIR must not share a journal)
  std::string journal;
  common::PathFilter filter;
  // --shard: a file of another shard is left alone entirely (not tracked, sent, removed or logged)
  Shard shard;
  // Seconds between scans of the whole tree besides inotify; < 0: every 10 s on a network
  // filesystem (NFS, SMB, Ceph, FUSE...), where inotify misses what other machines write, else
  // only when events were lost. Tests set it.
  double rescan_s = -1;
  // --symlinks: kSkip or kError (kFollow is refused by the config; taken as kSkip here).
  SymlinkMode symlinks = SymlinkMode::kSkip;
  // Told of each link left out, once as it appears, with its line (`failed`: --symlinks error).
  // Called under the hot folder's lock, from the constructor or the reader thread; may be empty.
  std::function<void(const std::string& rel, const std::string& message, bool failed)> on_link;
  // Test seam: called under the hot folder's lock at named points, so that a test changes the
  // folder exactly there: "scan" (a folder of the tree watched, not yet read; `rel` is the
  // folder), "handout" (a file found ready, not yet opened for the reader), "finish" (a sent file
  // checked, not yet renamed to its private name), "finish-moved" (renamed to its private name,
  // not yet checked). Empty in production.
  std::function<void(std::string_view point, const std::string& rel)> test_hook;
  // Test hook: after this many "sent" records (1-based), the process kills itself with SIGKILL
  // before deleting or moving the file, as a crash there would. 0 = off.
  unsigned crash_after_sent = 0;
};

// The private name, relative to DIR, that sent file `r` is renamed to before it is deleted or
// moved: in its own folder (so on its file system), reserved (".ddft-finishing-<inode>", never
// scanned or sent), and derived from the journal record, so that a restart finds a file left
// there by a stop in between.
std::string finishing_name(const JournalRecord& r);

// The options of `cfg` that concern the hot folder.
HotFolderOptions hot_folder_options(const SenderConfig& cfg);

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

 private:
  struct Handout {
    std::string rel;
    FileIdentity id;
  };

  // Under mu_:
  void read_events(common::Clock::time_point now);
  // One event of read_events(): a lost event queue, a watch gone, DIR gone, or an entry's event.
  void handle_event(const struct inotify_event& ev, common::Clock::time_point now);
  // An event (inotify `mask`) about entry `rel` (not reserved) of a watched folder.
  void handle_entry_event(const std::string& rel, uint32_t mask, common::Clock::time_point now);
  // Watches `rel_dir` and every folder below it, and reports every file found there.
  void add_tree(const std::string& rel_dir, common::Clock::time_point now);
  void rescan(common::Clock::time_point now);
  // Stops watching `rel_dir` and every folder below it (deleted or moved out).
  void forget_watches(const std::string& rel_dir);
  void remove_folders(common::Clock::time_point now);
  // Scans the whole tree every `every` from `now` on (or more often, if it does already).
  void rescan_every(common::Clock::duration every, common::Clock::time_point now);
  // Notices DIR deleted or replaced. An open file inside it (the journal) delays the kernel's
  // IN_DELETE_SELF until that file is closed, so the events alone cannot tell.
  void check_root();
  // Whether a regular file at `rel` is to be tracked: not reserved, in this shard (silently
  // not), passes the filter (logged once when not).
  bool admit(const std::string& rel);
  // Warns once about a non-regular file at `rel` of this shard; a symbolic link as --symlinks
  // says (counted, and told to on_link).
  void warn_not_regular(const std::string& rel, unsigned mode);
  void forget_warnings(const std::string& rel);
  // Tells once that a name starting ".ddft-" is left alone (but for the journal's own files).
  void note_reserved(const std::string& rel);
  [[nodiscard]] std::optional<FileProbe> probe(const std::string& rel);
  // Opens ready file `r` for the reader and checks that it is still the version found settled;
  // if not, it goes back to waiting and nothing is handed out.
  std::optional<SourceFile> hand_out(const ReadinessTracker::Ready& r,
                                     common::Clock::time_point now);
  // Deletes or moves a sent file, through its private name; on failure returns false with a
  // one-line reason in *why. `*moved_to` gets the destination of a move; `*put_back` the name
  // (relative) a new version found under the private name went back to ("" when none).
  [[nodiscard]] bool finish(const JournalRecord& r, std::string* moved_to, std::string* put_back,
                            std::string* why);
  // The file at `priv` (r's private name, absolute): deleted or moved when it is r's version,
  // else put back (a new version). Arguments as finish()'s.
  [[nodiscard]] bool finish_private(const JournalRecord& r, const std::string& priv,
                                    std::string* moved_to, std::string* put_back, std::string* why);
  // Moves `from` (absolute) to the sent folder under `rel`'s path. False, with *why set, when it
  // cannot.
  [[nodiscard]] bool move_to_sent(const std::string& rel, const std::string& from,
                                  std::string* moved_to, std::string* why);
  // Renames `priv` (absolute) back to `rel`, or the first free "name.N.ext" beside it. False,
  // with *why set, when it cannot.
  [[nodiscard]] bool put_back(const std::string& rel, const std::string& priv, std::string* where,
                              std::string* why);
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
  std::string own_prefix_;  // the journal's path relative to DIR (its kin start with it)
  mutable std::mutex mu_;
  ReadinessTracker tracker_;               // guarded by mu_
  std::unique_ptr<WatchJournal> journal_;  // guarded by mu_
  std::unique_ptr<Retention> retention_;   // --sent-keep-hours / --sent-keep-gb
  common::UniqueFd inotify_;
  common::UniqueFd wake_fd_;                // eventfd: stop, or work for next() to do
  std::map<int, std::string> watches_;      // wd -> relative folder ("" = DIR); guarded by mu_
  std::map<std::string, int> watch_of_;     // the reverse; guarded by mu_
  std::map<uint64_t, Handout> handed_out_;  // by SourceFile::tag; guarded by mu_
  std::set<std::string> warned_;            // non-regular paths warned about; guarded by mu_
  std::set<std::string> filtered_;          // paths the filter left in place; guarded by mu_
  std::vector<JournalRecord> kept_after_replay_;  // sent before a restart, not removable
  uint64_t next_tag_ = 0;
  bool rescan_pending_ = false;
  bool lost_root_ = false;
  FileIdentity root_id_;                    // DIR's dev and inode, to notice it going
  bool watch_failed_ = false;               // a folder could not be watched: rescan periodically
  common::Clock::duration rescan_every_{};  // between periodic rescans; zero: none
  common::Clock::time_point next_periodic_rescan_{};
  uint64_t removed_ = 0;
  uint64_t links_skipped_ = 0;  // guarded by mu_
  uint64_t links_failed_ = 0;   // guarded by mu_
  unsigned sent_records_ = 0;
  std::stop_token stop_;  // the session's, from next()
};

}  // namespace ddft::sender
