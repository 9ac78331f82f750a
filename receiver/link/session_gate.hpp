// The session gate: what a datagram must pass before any file sees it. It decodes and checks
// the header (counting what it rejects), opens sealed datagrams (--key-file: Opener, replay
// window, the replay state saved on the pool), decides whether the packet's session is the
// current one, a new one to start, or one to refuse, and counts sequence numbers (loss and
// duplicates). It also watches the session's liveness (heartbeats, silence, the final
// heartbeat) and logs loss and authentication failures at a bounded rate.
//
// Writer thread only, but for precheck(): decoding and opening need no state of the gate, so
// UnsealPool's workers do them for a batch side by side, and admit() takes the batch in order.
//
// The folder, pool, clock and counters are the caller's and must outlive the gate; it owns the
// Opener and each lane's replay guard. The constructor throws std::runtime_error when a lane's
// replay state is damaged (start-up); a datagram that fails a check is counted and dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/link/replay_guard.hpp"

namespace ddft::receiver {

// What can be found out about a datagram without the gate's state, on any thread: whether it
// decodes (its checksum, lengths, type) and, with a key, whether it opens and to what. Filled by
// SessionGate::precheck(), read by SessionGate::admit(), which does the rest in arrival order.
struct Prechecked {
  std::span<const uint8_t> data;  // the datagram as received (may be cut at the buffer's end)
  size_t real_len = 0;            // its length on the wire: > data.size() when truncated
  size_t lane = 0;                // the link it came from (its ring)
  common::DecodeStatus status = common::DecodeStatus::kBadLength;
  common::Packet packet;  // when status is kOk: the outer datagram's header and payload
  // With a key and status kOk: what opening it gave; on kOk the inner datagram is
  // inner.first(inner_len).
  common::OpenStatus opened = common::OpenStatus::kNotSealed;
  std::span<uint8_t> inner;
  size_t inner_len = 0;
  size_t key_index = 0;
  common::Salt salt{};
};

class SessionGate {
 public:
  // References must outlive the gate. `lanes`: the links the receiver drains (each has its own
  // sequence numbers, liveness and, with a key, its own replay window and state file). With keys
  // in `cfg`, reads each lane's replay state from `out` (throws std::runtime_error when one is
  // damaged) and logs what it restored.
  SessionGate(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs, common::Clock& clock,
              AssemblerCounters& counters, size_t lanes = 1);
  SessionGate(const SessionGate&) = delete;
  SessionGate& operator=(const SessionGate&) = delete;

  // Decodes `*data` (`real_len` long on the wire, from `lane`) into `*p` and, with a key, opens
  // it: `*data` and `*p` are then the inner datagram, valid until the next call. False: dropped
  // (counted, logged at a bounded rate).
  bool open(std::span<const uint8_t>* data, size_t real_len, common::Packet* p, size_t lane = 0);
  // open() in two halves. precheck() fills `*pre` for pre->data and pre->real_len, opening a
  // sealed datagram with `opener` (null when there is no key) into `inner` (at least
  // --max-packet-size bytes, not overlapping the datagram). It touches no gate state, so
  // workers run it side by side, each with an Opener of its own. admit() then does what needs
  // the order of arrival (counters, replay window, logging) and gives the same answer and the
  // same *data and *p as open(); they stay valid while pre's buffers do.
  static void precheck(common::Opener* opener, std::span<uint8_t> inner, Prechecked* pre);
  bool admit(const Prechecked& pre, std::span<const uint8_t>* data, common::Packet* p);

  enum class Session { kCurrent, kNew, kRefused };
  // Whether `p` belongs to the current session, may start a new one, or is refused (counted as
  // other_session). The caller retires the current session, then calls start().
  Session classify(const common::Packet& p);
  // The current session is over: its packets are refused from now on.
  void retire();
  // `s` is the current session from now on (every lane's counters, sequence and liveness reset;
  // logged).
  void start(uint64_t s);
  // A packet of the current session arrived on `lane`: liveness noted, its sequence number
  // counted. False: a duplicate (counted).
  bool note_packet(size_t lane, const common::Packet& p);
  // A heartbeat of the session on `lane` (its interval, whether it is the final one, and which of
  // the sender's lanes it is).
  void on_heartbeat(size_t lane, const common::Heartbeat& hb);
  // The session's kSenderInfo (any lane): the sender's id and which of its lanes share a host.
  void on_sender_info(const common::SenderInfo& si);

  // Logs the loss of the session so far (at once, then at most every 10 s); `rebuilt` is what
  // FEC rebuilt in this session.
  void report_loss(common::Clock::time_point now, uint64_t rebuilt);
  // Saves the replay state when due, logs authentication failures not logged yet (every
  // 10 s) and a lane's silence (3 heartbeat intervals).
  void poll(common::Clock::time_point now);
  // Saves the replay state if it changed since the last save (shutdown).
  void save_if_changed();
  // True once, with `idle`, every lane is done (done()), at least one having been heard (logged
  // once when a lane is taken as done for its silence).
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

  uint64_t session() const { return session_; }
  bool keyed() const { return opener_ != nullptr; }
  size_t lanes() const { return lanes_.size(); }
  // The receiver lane that carries the sender's lane `sender_lane` (as its heartbeats say), or
  // -1 when none heard so far does.
  int lane_of_sender(int sender_lane) const;
  // The sequence number of the first packet of the session `lane` got (UINT64_MAX before it):
  // above 0 when this receiver started after the sender, or lost the session's first packets.
  uint64_t first_seq(size_t lane) const { return lanes_[lane].first_seq; }
  // The sender's lane that `lane` carries, -1 before its first heartbeat.
  int sender_lane(size_t lane) const { return lanes_[lane].sender_lane; }
  // The lanes the sender drives, as its heartbeats say (1 before the first).
  size_t sender_lanes() const { return sender_lanes_; }
  // Whether every lane has named the sender's lane it carries.
  bool all_lanes_named() const;
  // The sender's id as its kSenderInfo says (0 before, or from a sender without one).
  uint64_t sender_id() const { return sender_id_; }
  // Whether the session's kSenderInfo has said where the sender's lanes go.
  bool knows_lane_hosts() const { return !lane_hosts_.empty(); }
  // Whether the sender's lane `sender_lane` goes to this receiver's host: the sender says it
  // shares a host with a lane that one of this receiver's lanes carries. False while unknown.
  bool sender_lane_to_this_host(int sender_lane) const;
  const SeqCounter& seq(size_t lane = 0) const { return lanes_[lane].seq; }
  // Over every lane: packets received and lost (sequence gaps) in the session.
  uint64_t received() const;
  uint64_t lost() const;

 private:
  // What each lane has of its own.
  struct LaneState {
    std::unique_ptr<ReplayGuard> guard;  // --key-file
    std::string state_file;
    bool mark_saving = false;  // a save of the replay state is on the pool
    bool mark_dirty = false;   // and another is due when it is done
    common::Clock::time_point last_mark_save{};
    bool heard = false;               // a packet of the current session came
    uint64_t first_seq = UINT64_MAX;  // the sequence number of the first one
    int sender_lane = -1;             // the sender's lane, from its heartbeats
    bool final = false;
    common::Clock::time_point final_deadline{};
    common::Clock::time_point last_packet{};
    bool silence_warned = false;  // the 3-heartbeat silence warning is out
    std::chrono::milliseconds heartbeat_interval{common::kAssumedHeartbeatMs};
    SeqCounter seq;
  };

  // Counts and logs (at a bounded rate) a datagram that did not decode.
  void reject(const Prechecked& pre);
  bool unseal(const Prechecked& pre, std::span<const uint8_t>* data, common::Packet* p);
  bool check_fresh(const Prechecked& pre, size_t len, common::Packet* p);
  void reject_auth(AuthReject why, const common::Packet& p, size_t len);
  void restore_mark(LaneState& l);
  void save_mark(size_t lane);
  void log_save_error(const std::string& file, const std::string& why);
  void log_unlogged_auth(common::Clock::time_point now);
  // " on lane K (ADDRESS)" with several lanes, else "".
  std::string lane_suffix(size_t lane) const;
  // How long a lane may be silent before it is taken as done.
  std::chrono::nanoseconds silence_limit() const;

  const ReceiverConfig& cfg_;
  OutputDir& out_;
  FsPool& fs_;
  common::Clock& clock_;
  AssemblerCounters& counters_;
  std::unique_ptr<common::Opener> opener_;  // --key-file
  std::vector<uint8_t> open_buf_;           // the inner datagram of the sealed one in hand
  uint64_t auth_unlogged_[kAuthRejectCount] = {};
  common::Clock::time_point last_auth_log_{};
  bool auth_logged_ = false;
  common::Clock::time_point last_save_error_log_{};
  bool save_error_logged_ = false;
  common::Clock::time_point last_reject_log_{};

  uint64_t session_ = 0;
  common::Clock::time_point session_start_{};
  size_t sender_lanes_ = 1;          // as the session's heartbeats say
  uint64_t sender_id_ = 0;           // as its kSenderInfo says
  std::vector<uint8_t> lane_hosts_;  // as its kSenderInfo says; empty while unknown
  std::set<uint64_t> retired_;
  std::vector<LaneState> lanes_;
  mutable bool silence_logged_ = false;
  uint64_t lost_logged_ = 0;
  common::Clock::time_point last_loss_log_{};
};

}  // namespace ddft::receiver
