// The sender's history on the wire (kHistory, common/history_wire.hpp): each file of the
// history goes again after each delay of --history-repeat (by default 1 min, 10 min, 1 h, 6 h
// and 24 h after it was sent), on every lane, so that a receiver that was not receiving when
// it was sent names it as missed within one repeat of coming back.
//
//   HistoryRecorder ── add() ──> schedule (by due time) ──> waiting (due) ──> packed payloads
//   (a file sent)                earlier runs' entries       within the       ──> each lane's
//                                (add_earlier())             budget               take()
//
// Entries due are gathered for up to a second (or until they fill a datagram) and packed,
// compressed, into as few payloads as they fit; every lane sends every payload once. The
// payload bytes are bounded by a budget (bytes a second, on each lane): past it, due entries
// wait (counted) rather than crowd the files out.
//
// A run repeats what is due while it runs; what came due while no run was sending is sent once
// by the next run, at its start (the history keeps "sent up to" marks: sent_up_to()).
//
// Thread-safe: the lanes' transmit threads take(), the session's observer thread add()s.
// It owns the schedule and the packed payloads (each shared with the lanes until all have sent
// it); nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/history_wire.hpp"
#include "sender/source/history.hpp"

namespace ddft::sender {

// The default --history-repeat.
std::vector<std::chrono::seconds> default_history_repeats();

class HistoryFeed {
 public:
  using Payload = std::shared_ptr<const std::vector<uint8_t>>;
  // Entries due are gathered this long before they are packed (unless they fill a payload).
  static constexpr int64_t kGatherNs = 1'000'000'000;

  struct Totals {
    uint64_t entries_sent = 0;  // entries packed (each repeat counts)
    uint64_t payloads = 0;      // payloads packed
    uint64_t bytes = 0;         // their bytes (each lane sends them all: add the headers)
    uint64_t waiting = 0;       // entries due and not packed yet (the budget, or gathering)
    uint64_t scheduled = 0;     // entries with a repeat still to come
    uint64_t dropped = 0;       // entries dropped before their last repeat (the bound)
  };

  // `repeats`: the delays after a file's send time (ascending; at least one). `max_payload`:
  // the largest kHistory payload a lane's datagram holds. `budget`: payload bytes a second at
  // most. `max_bytes`: what the schedule holds at most (about; the history's bound), past which
  // the entries with the furthest repeat go. `wall_ns`: ns since the epoch (the system clock
  // by default).
  HistoryFeed(uint64_t sender_id, std::vector<std::chrono::seconds> repeats, size_t max_payload,
              uint64_t budget, uint64_t max_bytes, History::WallNs wall_ns = {});
  HistoryFeed(const HistoryFeed&) = delete;
  HistoryFeed& operator=(const HistoryFeed&) = delete;

  // Earlier runs' entries. Repeats due at or before `sent_up_to` went out then; of those due
  // since, the last goes at once (one catch-up); the later ones as they come due.
  void add_earlier(const std::vector<HistoryEntry>& entries, int64_t sent_up_to);
  // A file just sent: its first repeat comes after repeats[0].
  void add(const HistoryEntry& e);

  // A session of `lanes` lanes starts: each lane gets what is packed from now on.
  void start_session(size_t lanes);
  // Packs what is due (within the budget) and returns what lane `lane` has not sent yet;
  // *waiting (when not null): the entries due and not packed. `last`: the lane's last call of
  // the session: what is due is packed without gathering more.
  std::vector<Payload> take(size_t lane, uint64_t* waiting = nullptr, bool last = false);
  // Lane `lane` sends nothing more this session (it ended, or its link went down).
  void lane_done(size_t lane);

  // Every repeat due before this time is packed: the mark the history keeps.
  int64_t sent_up_to() const;
  Totals totals() const;

 private:
  struct Item {
    common::HistoryRecord record;
    size_t next = 0;  // the index of its next repeat
  };
  // The next repeat of `item` after the one at index item.next - 1, or drops it (mu_ held).
  void schedule_locked(Item item);
  // Moves what is due by `now` to waiting_, packs it within the budget (mu_ held); `all`:
  // without gathering more first.
  void pack_locked(int64_t now, bool all = false);
  void trim_payloads_locked();

  const uint64_t sender_id_;
  const std::vector<std::chrono::seconds> repeats_;
  const size_t max_payload_;
  const uint64_t budget_;
  const uint64_t max_bytes_;
  History::WallNs wall_ns_;
  mutable std::mutex mu_;
  std::multimap<int64_t, Item> schedule_;  // by due time (wall ns)
  uint64_t scheduled_bytes_ = 0;
  std::vector<std::pair<int64_t, common::HistoryRecord>> waiting_;  // due, in due order
  double tokens_ = 0;                                               // budget bytes available
  int64_t refilled_ = 0;  // when tokens_ was last refilled
  std::vector<Payload> payloads_;
  uint64_t first_payload_ = 0;    // the number of payloads_[0]
  std::vector<uint64_t> cursor_;  // per lane: the number of its next payload; UINT64_MAX done
  Totals totals_;
  bool warned_ = false;
};

}  // namespace ddft::sender
