// The session's file list (kFileList, common/protocol.hpp), shared by the session's lanes, and
// the barrier at which the lanes end together.
//
//   lane k's transmitter ──add (the last lane done with a file)──> SessionList
//                         <──take (lane k's cursor: what lane k has not sent yet)──
//
// A file goes into the list once, when the last lane that carries it has ended or aborted it
// (sender/transmit/lane_hub.hpp decides which lane that is). Every lane sends every entry: each has
// its own cursor and takes, on its own cadence (kListInterval, kListBatch), the entries it has not
// sent yet. At the end a lane reports done (lane_done()) and keeps its link alive until every lane
// is; then it takes its last list: the complete list while that may be sent, else the rest.
//
// Thread-safe (one mutex): every lane's transmit thread calls it. It owns its entries (copies).
// The constructor throws std::invalid_argument for 0 lanes (a bug).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "common/hash.hpp"
#include "common/protocol.hpp"

namespace ddft::sender {

// The file list's cadence: a list of the files finished since the previous list goes out when
// that list (or the session's start) is this long ago, or when this many files are waiting,
// whichever comes first. Checked after every work item, between files and, while the queue is
// empty, once a heartbeat interval (so an idle hot folder's list waits at most that longer).
inline constexpr std::chrono::seconds kListInterval{5};
inline constexpr size_t kListBatch = 256;
// A session that finished at most this many files ends with the complete list (kListComplete);
// a longer one (and a hot folder, which runs for months) ends with the files since the last list,
// so that the sender keeps no more than this many entries.
inline constexpr uint64_t kCompleteListMax = 100'000;

// A file of the session's list: finished or aborted on the wire.
struct ListedFile {
  uint32_t file_id = 0;
  uint64_t size = 0;
  bool aborted = false;
  common::Digest digest{};  // what its end packets carried; none when aborted
  std::string path{};
  int lane = common::kLaneUnsaid;  // the lane that carried it, common::kLaneAll when striped
  bool resend = false;             // a copy of a file sent before (FileMeta::resend_of)
};

// Thread-safe: every lane's transmitter calls it.
class SessionList {
 public:
  // A list for `lanes` lanes (at least 1). `keep_all`: keep every entry for the complete list at
  // the end while the session has at most kCompleteListMax files (false for a hot folder).
  SessionList(size_t lanes, bool keep_all);
  SessionList(const SessionList&) = delete;
  SessionList& operator=(const SessionList&) = delete;

  // A file finished or aborted on the wire, by every lane that carried it. Once per file.
  void add(ListedFile file);
  // How many entries lane `lane` has not taken yet.
  size_t waiting(size_t lane) const;
  // The entries lane `lane` has not taken yet, in the order they were added; its cursor moves
  // past them. An entry every lane has taken is dropped, unless kept for the complete list.
  std::vector<ListedFile> take(size_t lane);
  // Lane `lane`'s last list, after every lane is done: every entry of the session, with
  // *complete true, while the complete list may be sent (keep_all and at most kCompleteListMax
  // files); else what take() would give, with *complete false.
  std::vector<ListedFile> take_last(size_t lane, bool* complete);
  // Files added so far.
  uint64_t files() const;

  // Lane `lane` went down: it takes nothing more, so its cursor no longer holds entries back.
  // It still reports done (lane_done()) once it has drained its queue.
  void lane_down(size_t lane);

  // The end barrier. Lane `lane` has nothing more to send but its last list and final heartbeat
  // (a second call for the same lane counts once).
  void lane_done(size_t lane);
  bool all_done() const;
  // Waits up to `timeout` for every lane to be done; true when they are.
  bool wait_all_done(std::chrono::nanoseconds timeout);

 private:
  // Under mu_: drops the entries every lane has taken, unless kept for the complete list.
  void trim();
  std::vector<ListedFile> take_locked(size_t lane);

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<ListedFile> entries_;  // guarded by mu_; entries_[i] is file number base_ + i
  uint64_t base_ = 0;               // guarded by mu_
  std::vector<uint64_t> cursor_;    // guarded by mu_; per lane, the first number not taken
  std::vector<bool> done_;          // guarded by mu_
  std::vector<bool> down_;          // guarded by mu_; lanes that take nothing more
  size_t lanes_done_ = 0;           // guarded by mu_
  uint64_t files_ = 0;              // guarded by mu_
  bool keep_all_;                   // guarded by mu_
};

}  // namespace ddft::sender
