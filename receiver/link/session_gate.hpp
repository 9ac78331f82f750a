// The session gate: what a datagram must pass before any file sees it. It decodes and checks
// the header (counting what it rejects), opens sealed datagrams (--key-file: Opener, replay
// window, the replay state saved on the pool) and logs authentication failures at a bounded
// rate. What each sender session does on the lanes (sequence numbers, heartbeats, silence) is
// its SenderSession's (receiver/link/sender_session.hpp).
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

  // Saves the replay state when due and logs authentication failures not logged yet (every
  // 10 s).
  void poll(common::Clock::time_point now);
  // Saves the replay state if it changed since the last save (shutdown).
  void save_if_changed();
  bool keyed() const { return opener_ != nullptr; }
  size_t lanes() const { return lanes_.size(); }

 private:
  // What each lane has of its own.
  struct LaneState {
    std::unique_ptr<ReplayGuard> guard;  // --key-file
    std::string state_file;
    bool mark_saving = false;  // a save of the replay state is on the pool
    bool mark_dirty = false;   // and another is due when it is done
    common::Clock::time_point last_mark_save{};
  };

  // Counts and logs (at a bounded rate) a datagram that did not decode.
  void reject(const Prechecked& pre);
  bool unseal(const Prechecked& pre, std::span<const uint8_t>* data, common::Packet* p);
  bool check_fresh(const Prechecked& pre, size_t len, common::Packet* p);
  // Counts or logs what the guard said of `p`; true when it is taken.
  bool report_fresh(ReplayGuard::Verdict v, const Prechecked& pre, size_t len,
                    const common::Packet& p);
  void reject_auth(AuthReject why, const common::Packet& p, size_t len);
  void restore_mark(LaneState& l);
  void save_mark(size_t lane);
  void log_save_error(const std::string& file, const std::string& why);
  void log_unlogged_auth(common::Clock::time_point now);
  // " on lane K (ADDRESS)" with several lanes, else "".
  std::string lane_suffix(size_t lane) const;

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

  std::vector<LaneState> lanes_;
};

}  // namespace ddft::receiver
