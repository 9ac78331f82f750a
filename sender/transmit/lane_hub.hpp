// What the lanes of one session share: the observers, who hear each event once and one at a
// time, which lanes still carry each file, the session's file list and its end barrier.
//
//   lane k's transmitter ── file_begun, file_progress, ──> LaneHub ──> SendObserver(s): each
//   (one per lane)           lane_finished, file_done     (one mutex)   event once, one at a time
//                                                                   ──> SessionList: a file's
//                                                                       entry, once its last lane
//                                                                       is through with it
//
// A whole file is carried by one lane, a striped file by every lane. The first lane to announce a
// file tells the observers it started; its progress is the sum over lanes (and copies); the last
// lane to end or abort it decides its outcome (failed when any lane aborted it), and only then do
// the observers hear file_sent or file_failed and the list get its entry. So the program sees one
// session however many lanes carry it.
//
// A lane that goes down (--lane-down continue) tells the hub (lane_down()): every file it carries
// and has not finished its part of, begun or yet to begin, is doomed. It fails with the lane's
// reason; the other lanes that carry it (a striped file's) ask doomed() and abort it on the wire
// instead of ending it, since the receiver could never complete it.
//
// Thread-safe: every lane's transmit thread calls it, and the mutex is held while the observers
// run. The observers are the caller's and must outlive the hub; it owns the SessionList. Throws
// nothing of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.hpp"
#include "common/hash.hpp"
#include "sender/events.hpp"
#include "sender/transmit/session_list.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

// Thread-safe: every lane's transmitter calls it from its own thread.
class LaneHub {
 public:
  // What became of a file once every lane that carried it is through with it.
  struct Outcome {
    bool aborted = false;                 // some lane aborted it (file_failed)
    std::string reason{};                 // the first lane's reason for aborting it
    common::Digest digest{};              // its end packets' (not aborted)
    common::Clock::time_point started{};  // its first announce, on any lane
  };

  // For `lanes` lanes (at least 1). `observers` hear every event once, one at a time, from
  // whichever lane's thread; it must outlive the hub. `keep_all` is the list's (SessionList).
  LaneHub(size_t lanes, bool keep_all, SendObserver& observers);
  LaneHub(const LaneHub&) = delete;
  LaneHub& operator=(const LaneHub&) = delete;

  size_t lanes() const { return lanes_; }
  SessionList& list() { return list_; }

  // Each lane calls it as it starts; the observers hear it from the first, before that lane
  // returns (so before any lane sends).
  void session_started(uint64_t session_id);
  // Each lane calls it after its final heartbeat; the observers hear it from the last lane.
  void session_finished(uint64_t session_id);
  // A lane had nothing to send for a heartbeat interval.
  void idle();
  // A lane announced the first copy of `file`, which the lanes `lanes` carry (bit k: lane k; one
  // bit, or every lane up when it began when striped). The first lane's call tells the observers
  // (file_started). A file carried by a lane already down is doomed at once.
  void file_begun(const FileMeta& file, uint64_t lanes, common::Clock::time_point now);
  // A lane packetised `bytes` more of `file`: the observers hear the sum over lanes and copies.
  void file_progress(const FileMeta& file, uint64_t bytes);
  // A file that was never announced (it could not be opened): the observers hear it failed.
  void file_skipped(const FileMeta& file, const std::string& reason);
  // Lane `lane` is through with `file`: ended its last copy (`aborted` false, with `digest`) or
  // aborted it (`reason`). Returns nothing while other lanes still carry it; to the last lane,
  // the file's outcome (aborted when doomed), which that lane reports through file_done().
  std::optional<Outcome> lane_finished(const FileMeta& file, size_t lane, bool aborted,
                                       const common::Digest& digest, const std::string& reason);
  // Lane `lane` sends nothing more (its link failed, `reason` says how): every file it carries
  // and has not finished, begun now or later, is doomed with `reason`. Its list cursor no longer
  // holds entries back (SessionList::lane_down()).
  void lane_down(size_t lane, const std::string& reason);
  // Why `file` is doomed (a lane that carries it went down first), or nullopt when it is not.
  [[nodiscard]] std::optional<std::string> doomed(const FileMeta& file);
  // The last lane's report of a file lane_finished() gave it the outcome of: the observers hear
  // file_sent or file_failed, then the list gets the file's entry (`list_lane`: the lane that
  // carried it, common::kLaneAll for a striped file, common::kLaneUnsaid with one lane).
  void file_done(const FileMeta& file, const Outcome& outcome, int list_lane);

 private:
  struct Carried {
    size_t lanes_left = 0;
    uint64_t lanes = 0;     // the lanes that carry it, bit k for lane k
    uint64_t finished = 0;  // those through with it
    bool doomed = false;    // a lane of `lanes` went down before it was through
    uint64_t sent = 0;      // file bytes packetised, over every lane and copy
    Outcome outcome{};
  };
  // Under mu_: dooms `c` (a file not yet failed keeps `reason` as its outcome's).
  static void doom(Carried& c, const std::string& reason);

  const size_t lanes_;
  SendObserver& observers_;
  SessionList list_;
  std::mutex mu_;  // held while observers are called: they hear one event at a time
  std::unordered_map<uint32_t, Carried> files_;  // guarded by mu_; by file id
  size_t lanes_started_ = 0;                     // guarded by mu_
  size_t lanes_finished_ = 0;                    // guarded by mu_
  uint64_t down_ = 0;                            // guarded by mu_; lanes down, bit k for lane k
  std::vector<std::string> down_reason_;         // guarded by mu_; per lane, why it went down
};

}  // namespace ddft::sender
