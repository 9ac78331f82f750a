// One sender session as the receiver follows it: on each of the receiver's lanes, whether it was
// heard, its sequence numbers (loss, duplicates), its heartbeats (interval, final, which of the
// sender's lanes it carries) and its silence; and what the session's kSenderInfo says (the
// sender's id, which of its lanes share a host). It logs the session's loss and silence at a
// bounded rate, each line naming the session and, once known, its sender.
//
// Writer thread only. A plain value owned by the assembler's sender slot; the configuration,
// clock and counters are the caller's and must outlive it. Nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/seq_window.hpp"

namespace ddft::receiver {

class SenderSession {
 public:
  // Session `session`, heard from now on `lanes` receiver lanes (logged).
  SenderSession(const ReceiverConfig& cfg, common::Clock& clock, AssemblerCounters& counters,
                uint64_t session, size_t lanes);
  SenderSession(const SenderSession&) = delete;
  SenderSession& operator=(const SenderSession&) = delete;

  // A packet of the session arrived on `lane`: liveness noted, its sequence number counted.
  // False: a duplicate (counted).
  bool note_packet(size_t lane, const common::Packet& p);
  // A heartbeat of the session on `lane` (its interval, whether it is the final one, whether the
  // sender is sleeping, and which of the sender's lanes it is).
  void on_heartbeat(size_t lane, const common::Heartbeat& hb);
  // The session's kSenderInfo (any lane): the sender's id and which of its lanes share a host.
  void on_sender_info(const common::SenderInfo& si);

  // Logs the loss of the session so far (at once, then at most every 10 s); `rebuilt` is what
  // FEC rebuilt in this session.
  void report_loss(common::Clock::time_point now, uint64_t rebuilt);
  // Logs a lane's silence (3 heartbeat intervals without a packet).
  void poll(common::Clock::time_point now);
  // True once, with `idle` (nothing of the session in flight), every lane is done (done()), at
  // least one having been heard (logged once when a lane is taken as done for its silence).
  bool finished(bool idle) const;
  // `lane` is done with the session: its final heartbeat came; or it has been silent for
  // --file-timeout (since its last packet, or since the session started when it never had one);
  // or it was never heard and the lanes heard are as many as the sender drives (a lane the
  // sender does not use).
  bool done(size_t lane, common::Clock::time_point now) const;
  // `lane`'s final heartbeat came and its grace is over: its files still receiving fail.
  bool final_due(size_t lane, common::Clock::time_point now) const {
    const LaneState& l = lanes_[lane];
    return l.final && now >= l.final_deadline;
  }
  // final_due() or, for a lane's silence, done().
  bool gone(size_t lane, common::Clock::time_point now) const {
    return final_due(lane, now) || (!lanes_[lane].final && done(lane, now));
  }
  // No packet of the session on any lane for 3 heartbeat intervals (a sender killed, or cut
  // off), or every lane's final heartbeat came: another sender may take its place.
  bool quiet(common::Clock::time_point now) const;

  uint64_t session() const { return session_; }
  size_t lanes() const { return lanes_.size(); }
  // The receiver lane that carries the sender's lane `sender_lane` (as its heartbeats say), or
  // -1 when none heard so far does.
  int lane_of_sender(int sender_lane) const;
  // The sequence number of the first packet of the session `lane` got (UINT64_MAX before it):
  // above 0 when this receiver started after the sender, or lost the session's first packets.
  uint64_t first_seq(size_t lane) const { return lanes_[lane].first_seq; }
  // When `lane` last had a heartbeat saying the sender sleeps (kHeartbeatSleeping: a DFTS pause),
  // the clock's epoch before the first.
  common::Clock::time_point sleep_heard(size_t lane) const { return lanes_[lane].sleep_heard; }
  // The sender's lane that `lane` carries, -1 before its first heartbeat.
  int sender_lane(size_t lane) const { return lanes_[lane].sender_lane; }
  // The lanes the sender drives, as its heartbeats say (1 before the first).
  size_t sender_lanes() const { return sender_lanes_; }
  // Whether every lane has named the sender's lane it carries.
  bool all_lanes_named() const;
  // The sender's id as its kSenderInfo says (0 before, or from a sender without one).
  uint64_t sender_id() const { return sender_id_; }
  // Whether the session's kSenderInfo came.
  bool identified() const { return identified_; }
  // How log lines and records name the sender: "sender HEX" once its kSenderInfo gave an id,
  // else "sender session HEX".
  std::string name() const;
  // The sender as the metrics label it: its id in hex once known, else "session-" and the
  // session's.
  std::string label() const;
  // Whether the session's kSenderInfo has said where the sender's lanes go.
  bool knows_lane_hosts() const { return !lane_hosts_.empty(); }
  // Whether the sender's lane `sender_lane` goes to this receiver's host: the sender says it
  // shares a host with a lane that one of this receiver's lanes carries. False while unknown.
  bool sender_lane_to_this_host(int sender_lane) const;
  const SeqCounter& seq(size_t lane = 0) const { return lanes_[lane].seq; }
  // Over every lane: packets received and lost (sequence gaps) in the session.
  uint64_t received() const;
  uint64_t lost() const;
  common::Clock::time_point started() const { return start_; }

 private:
  struct LaneState {
    bool heard = false;               // a packet of the session came
    uint64_t first_seq = UINT64_MAX;  // the sequence number of the first one
    int sender_lane = -1;             // the sender's lane, from its heartbeats
    bool final = false;
    common::Clock::time_point final_deadline{};
    common::Clock::time_point last_packet{};
    // The latest kHeartbeatSleeping's arrival.
    common::Clock::time_point sleep_heard{};
    bool silence_warned = false;  // the 3-heartbeat silence warning is out
    std::chrono::milliseconds heartbeat_interval{common::kAssumedHeartbeatMs};
    SeqCounter seq;
  };
  // " on lane K (ADDRESS)" with several lanes, else "".
  std::string lane_suffix(size_t lane) const;
  // How long a lane may be silent before it is taken as done.
  std::chrono::nanoseconds silence_limit() const;

  const ReceiverConfig& cfg_;
  common::Clock& clock_;
  AssemblerCounters& counters_;
  uint64_t session_;
  common::Clock::time_point start_;
  size_t sender_lanes_ = 1;          // as the session's heartbeats say
  uint64_t sender_id_ = 0;           // as its kSenderInfo says
  bool identified_ = false;          // its kSenderInfo came
  std::vector<uint8_t> lane_hosts_;  // as its kSenderInfo says; empty while unknown
  std::vector<LaneState> lanes_;
  mutable bool silence_logged_ = false;
  uint64_t lost_logged_ = 0;
  common::Clock::time_point last_loss_log_{};
};

}  // namespace ddft::receiver
