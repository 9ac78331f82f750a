// The senders a receiver follows side by side: one slot per sender session, each with its own
// sequence numbers, heartbeats and liveness (SenderSession) and its own FEC windows per lane.
// A sender is known by the id its kSenderInfo gives (--state-dir on the sender), or by its
// session id when it has none. At most --max-senders slots are live: the first packet of a
// session beyond them takes the place of a quiet one (silent for 3 heartbeat intervals, or
// past its final heartbeat) when there is one, else it is refused: counted, and logged naming
// it at most once a minute per session. Sessions that ended (replaced by their sender's next
// one, or given up for a new sender) are remembered, and their late packets refused.
//
// Writer thread only. It owns the slots; the configuration, clock and counters are the
// caller's and must outlive it. Nothing here throws but allocation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/link/fec_decoder.hpp"
#include "receiver/link/sender_session.hpp"

namespace ddft::receiver {

struct SenderSlot {
  std::unique_ptr<SenderSession> session;
  std::vector<std::unique_ptr<FecDecoder>> fec;  // one per lane: each has its own windows
  FecCounters fec_counters() const;
  uint64_t fec_unrepaired_open() const;
};

class SenderSlots {
 public:
  SenderSlots(const ReceiverConfig& cfg, common::Clock& clock, AssemblerCounters& counters);
  SenderSlots(const SenderSlots&) = delete;
  SenderSlots& operator=(const SenderSlots&) = delete;

  // The live slot of session `s`, or null.
  SenderSlot* find(uint64_t s);
  const SenderSlot* find(uint64_t s) const;
  // Whether `p`, of no live session, may open one: it is of a kind that starts a session, and of
  // a session not ended here. False: counted as of another session.
  bool may_open(const common::Packet& p);
  // Whether a new session would exceed --max-senders.
  bool full() const { return slots_.size() >= max_; }
  // The quietest live slot that may give way to a new sender at `now` (SenderSession::quiet()),
  // or null.
  SenderSlot* quiet_slot(common::Clock::time_point now);
  // `p`'s session is refused for want of a place: counted, and logged once a minute at most.
  void refuse(const common::Packet& p);
  // A slot for session `s` (not live yet).
  SenderSlot& open(uint64_t s);
  // The live slot, other than `s`'s, whose sender has the id `sender_id` (not 0), or null.
  SenderSlot* same_sender(uint64_t s, uint64_t sender_id);
  // Session `s` is over: its slot goes, and its late packets are refused.
  void close(uint64_t s);

  size_t size() const { return slots_.size(); }
  size_t max() const { return max_; }
  bool empty() const { return slots_.empty(); }
  // Every live slot, in the order of their session ids.
  template <typename F>
  void for_each(F&& fn) {
    for (auto& [s, slot] : slots_) fn(*slot);
  }
  template <typename F>
  void for_each(F&& fn) const {
    for (const auto& [s, slot] : slots_) fn(*slot);
  }
  // The session ids of the live slots.
  std::vector<uint64_t> sessions() const;

 private:
  const ReceiverConfig& cfg_;
  common::Clock& clock_;
  AssemblerCounters& counters_;
  size_t max_;
  std::map<uint64_t, std::unique_ptr<SenderSlot>> slots_;
  std::set<uint64_t> ended_;
  std::vector<uint64_t> ended_order_;  // oldest first, to bound ended_
  // Refused sessions: when each was last logged.
  std::map<uint64_t, common::Clock::time_point> refused_;
};

}  // namespace ddft::receiver
