// The hot folder's watch on its tree: an inotify watch on every folder, its events turned into
// what the readiness tracker needs to know (a file created, written, closed, moved in or out, a
// folder added or gone), and what the entry filter says of each entry. The whole tree is scanned
// at start, when events were lost (the queue overflowed), every 30 s while a folder could not be
// watched, and every 10 s on a network file system (inotify sees only what this host writes) or
// as often as HotFolderOptions::rescan_s says. It notices DIR itself deleted, moved or replaced
// (the session then ends), and removes the folders that sending emptied once they are due.
//
// Not thread-safe: the hot folder calls it under its mutex. It owns its inotify descriptor; the
// options, tracker and filter are the caller's and must outlive it. The constructor and start()
// throw std::runtime_error with one line (start-up: no inotify, DIR cannot be watched); once
// running, a folder that cannot be watched is logged and scanned instead, never thrown.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "common/clock.hpp"
#include "common/fd.hpp"
#include "sender/source/entry_filter.hpp"
#include "sender/source/hot_folder_options.hpp"
#include "sender/source/readiness.hpp"

struct inotify_event;  // <sys/inotify.h>

namespace ddft::sender {

class TreeWatch {
 public:
  // The tree at opt.dir (absolute), given as `given_dir` (for the messages); `root_id`: DIR's
  // identity, to notice it going. Opens the inotify instance. References must outlive this.
  TreeWatch(const HotFolderOptions& opt, const std::string& given_dir, FileIdentity root_id,
            ReadinessTracker& tracker, EntryFilter& entries);
  TreeWatch(const TreeWatch&) = delete;
  TreeWatch& operator=(const TreeWatch&) = delete;

  // Watches DIR, sets the periodic rescans (a network file system is logged) and scans the tree:
  // every file found goes to the tracker.
  void start(common::Clock::time_point now);

  // The inotify descriptor, readable when events are pending.
  int fd() const { return inotify_.get(); }
  // Reads the pending events, checks DIR, and rescans when due or when events were lost. False
  // once DIR is gone (the session ends).
  bool update(common::Clock::time_point now);
  bool lost_root() const { return lost_root_; }
  // Removes the folders that sending emptied, once the tracker says they are due (never DIR).
  void remove_folders(common::Clock::time_point now);
  // When the next periodic rescan is due; nothing when there are none.
  std::optional<common::Clock::time_point> next_rescan() const;
  // Folders watched.
  size_t folders() const { return watches_.size(); }

 private:
  // One event of read_events(): a lost event queue, a watch gone, DIR gone, or an entry's event.
  void read_events(common::Clock::time_point now);
  void handle_event(const struct inotify_event& ev, common::Clock::time_point now);
  // An event (inotify `mask`) about entry `rel` (not reserved) of a watched folder.
  void handle_entry_event(const std::string& rel, uint32_t mask, common::Clock::time_point now);
  // Watches `rel_dir` and every folder below it, and reports every file found there.
  void add_tree(const std::string& rel_dir, common::Clock::time_point now);
  void rescan(common::Clock::time_point now);
  // Stops watching `rel_dir` and every folder below it (deleted or moved out).
  void forget_watches(const std::string& rel_dir);
  // Scans the whole tree every `every` from `now` on (or more often, if it does already).
  void rescan_every(common::Clock::duration every, common::Clock::time_point now);
  // Notices DIR deleted or replaced. An open file inside it (the journal) delays the kernel's
  // IN_DELETE_SELF until that file is closed, so the events alone cannot tell.
  void check_root();
  std::string abs(const std::string& rel) const;

  const HotFolderOptions& opt_;
  std::string given_dir_;
  FileIdentity root_id_;  // DIR's dev and inode, to notice it going
  ReadinessTracker& tracker_;
  EntryFilter& entries_;
  common::UniqueFd inotify_;
  std::map<int, std::string> watches_;   // wd -> relative folder ("" = DIR)
  std::map<std::string, int> watch_of_;  // the reverse
  bool rescan_pending_ = false;
  bool lost_root_ = false;
  bool watch_failed_ = false;               // a folder could not be watched: rescan periodically
  common::Clock::duration rescan_every_{};  // between periodic rescans; zero: none
  common::Clock::time_point next_periodic_rescan_{};
};

}  // namespace ddft::sender
