// When a file in the hot folder is complete, and so may be sent (dd_file_send --watch): the
// readiness rules alone, apart from inotify and the disk, so that tests drive them with a
// FakeClock and a fake file system.
//
// A file is ready when
//   - a close after writing or a move in was seen (or it was found by a scan: at start, after an
//     inotify queue overflow, in a new subfolder), or the probe knows no writer has it open (a
//     hard link made into the folder has neither event);
//   - no writer has it open, as far as the probe can tell;
//   - no change (event, or another size/mtime/inode) for the settle time.
// A write (IN_MODIFY) takes a file back to waiting for its close, so a slow writer that keeps
// the file open is never sent half-written.
//
//   event ──> waiting ──(probe: unchanged for settle)──> ready ──(take_ready)──> in flight
//                ^                                                                  │
//                └──── an event on a held file ── held <── failed, or sent but kept ┤
//                                                                   finished <── sent, removed
//
// One caller at a time (HotFolder, under its mutex); time comes only from the `now` arguments and
// the file system only through the caller's probe. Nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.hpp"

namespace ddft::sender {

// What tells one version of a file from another: a file replaced by another (new inode) or
// written to (size, mtime) is a new version.
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// What a probe of one path found: the file's identity and whether a writer has it open.
struct FileProbe {
  enum class Writer { kUnknown, kNone, kOpen };
  FileIdentity id;
  Writer writer = Writer::kUnknown;
};

// Tracks every regular file of the hot folder by its '/'-separated relative path. Not
// thread-safe: the owner serialises the calls (HotFolder holds its mutex). Time comes only from
// the `now` arguments.
class ReadinessTracker {
 public:
  using time_point = common::Clock::time_point;
  using duration = common::Clock::duration;
  // Probes one path: nothing when no regular file is there any more.
  using ProbeFn = std::function<std::optional<FileProbe>(const std::string& rel)>;

  struct Ready {
    std::string rel;
    FileIdentity id;  // as probed when it became ready
  };

  // `settle`: how long a file must stay unchanged. A file a writer holds open is probed again
  // every max(settle, kMinRecheck).
  explicit ReadinessTracker(duration settle);
  static constexpr duration kMinRecheck = std::chrono::milliseconds(100);

  // Events. Each counts as a change (the settle time starts again).
  void created(const std::string& rel, time_point now);   // IN_CREATE of a regular file
  void closed(const std::string& rel, time_point now);    // IN_CLOSE_WRITE, IN_MOVED_TO
  void modified(const std::string& rel, time_point now);  // IN_MODIFY: wait for the close
  void attrib(const std::string& rel, time_point now);    // IN_ATTRIB (chmod, touch)
  void found(const std::string& rel, time_point now);     // seen by a scan
  void gone(const std::string& rel);                      // IN_DELETE, IN_MOVED_FROM
  void gone_under(const std::string& folder);             // a folder deleted or moved out

  // A full rescan: between the two calls the owner calls found() for every file there; files not
  // found are forgotten (those in flight are kept).
  void rescan_begin();
  void rescan_end();

  // Probes every file whose check is due, then hands out the ready file that became ready first
  // (files that became ready together: in path order), now "in flight". Nothing when none is.
  std::optional<Ready> take_ready(time_point now, const ProbeFn& probe);

  // What became of a file handed out by take_ready():
  // sent and removed from the folder: forgotten.
  void finished(const std::string& rel);
  // not sent (`rearm_on_attrib`: a chmod may fix it), or sent but left in place: held, not ready
  // again until it changes. A file that changed while in flight goes back to waiting instead.
  void hold(const std::string& rel, const FileIdentity& id, time_point now, bool rearm_on_attrib);
  // sent, but it changed meanwhile: waiting again.
  void requeue(const std::string& rel, time_point now);
  // True when an event came for `rel` while it was in flight.
  bool changed_in_flight(const std::string& rel) const;

  // Folders the hot folder emptied by removing a sent file: removed once quiet for the settle
  // time. Any event in one postpones it.
  void folder_emptied(const std::string& folder, time_point now);
  void folder_activity(const std::string& folder, time_point now);
  // Folders whose settle time passed (no longer tracked).
  std::vector<std::string> take_due_folders(time_point now);

  // The earliest time a call to take_ready() or take_due_folders() has work, if any.
  std::optional<time_point> next_deadline() const;
  // Files tracked (any state), for tests and the log.
  size_t tracked() const { return entries_.size(); }
  // Files waiting for their settle time or ready, not yet handed out, the bytes they had at
  // their last probe (0 for one not probed yet), and since when the oldest of them waits (first
  // seen, or changed after it was held or sent): the hot folder's queue.
  struct Queue {
    uint64_t files = 0;
    uint64_t bytes = 0;
    std::optional<time_point> oldest;
  };
  Queue queued() const;
  bool is_tracked(const std::string& rel) const { return entries_.contains(rel); }

 private:
  enum class State { kWaiting, kReady, kInFlight, kHeld };
  static constexpr time_point kNever = time_point::max();
  struct Entry {
    State state = State::kWaiting;
    bool complete = false;        // close/move-in seen, or found by a scan, since the last write
    bool changed = false;         // an event while ready or in flight
    bool seen = true;             // found by the rescan in progress
    bool rearm_on_attrib = true;  // kHeld
    std::optional<FileIdentity> last;  // identity at the last probe
    time_point stable_since{};         // the last change seen
    time_point queued_since{};         // waiting since (first seen, or a new version after)
    time_point check_at = kNever;      // the next probe
  };

  Entry& entry(const std::string& rel, time_point now);
  void schedule(const std::string& rel, Entry& e, time_point at);
  void erase(const std::string& rel);
  // A change to a ready or held file takes it back to waiting.
  void wake(const std::string& rel, Entry& e, time_point now);
  void evaluate(const std::string& rel, Entry& e, time_point now, const ProbeFn& probe);

  duration settle_;
  duration recheck_;
  std::map<std::string, Entry> entries_;
  std::set<std::pair<time_point, std::string>> due_;  // (check_at, rel) of scheduled entries
  std::deque<std::string> ready_;                     // kReady entries, oldest first
  std::map<std::string, time_point> folders_;         // emptied folder -> when to remove it
};

}  // namespace ddft::sender
