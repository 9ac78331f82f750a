// Which lanes hold a file open. A file is open on the lanes that announced it: a whole file on its
// one lane, a striped one (kFlagStriped) on every lane. Each lane sends a channel's files one
// after the other in the order of their ids, so the next file of a channel a lane announces
// closes the lane for that channel's files still open on it (the file table picks them: other
// channels' files interleave), as does the file's last end on that lane. A file that no lane holds
// open any more (superseded) and still misses data fails after a short grace; one whose lanes
// are all gone (their final heartbeat's grace over, or silent) fails at once.
//
// Writer thread only. It keeps no files: the file table hands it a File& for one call. The
// configuration and the session (receiver/link/sender_session.hpp) are the caller's and must
// outlive it; without a gate there is one lane, never gone. Nothing here throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/config.hpp"
#include "receiver/link/sender_session.hpp"

namespace ddft::receiver {

class FileLanes {
 public:
  explicit FileLanes(const ReceiverConfig& cfg) : cfg_(cfg) {}

  // The gate that says how the session's lanes stand (null: one lane).
  void set_gate(const SenderSession* gate) { gate_ = gate; }

  // `f` is announced first on `lane`: open there, or, `striped`, on every lane (those that
  // have not announced it yet may still be busy with earlier files).
  void open(File& f, size_t lane, bool striped) const;
  // Another announce of `f` on `lane`: true when it is a striped file's first announce there
  // (the lane is now done with its files before `f`: close() them), false for a repeat.
  bool announced_again(File& f, size_t lane, bool striped) const;
  // Lane `lane` announced file `next_id`: `o` (of the same session) is closed there when it
  // comes before `next_id`, is still receiving and open on the lane; once no lane holds it open
  // it is superseded at `now`.
  void close(File& o, size_t lane, uint32_t next_id, common::Clock::time_point now) const;
  // End `e` of `f` came on `lane`: true when it is the last copy's end there and the lane held
  // `f` open (closed now).
  bool close_on_end(File& f, const common::End& e, size_t lane) const;

  // Whether every lane `f` is open on (its own, when none) is gone at `now`.
  bool final_due(const File& f, common::Clock::time_point now) const;
  // The latest heartbeat saying the sender sleeps (a DFTS pause) on a lane `f` is open on (its
  // own, when none), the clock's epoch when none came: the sender will go on with `f` when the
  // pause ends, so `f` is silent since then, not since its last packet (expiry_reason()). Each
  // lane paces, and so sleeps, on its own: a sleep on another lane holds none of `f`'s data.
  common::Clock::time_point sleep_heard(const File& f) const;
  // Why a striped file cannot be assembled here (it is striped over more lanes than this
  // receiver drains), or nullopt when it can.
  [[nodiscard]] std::optional<std::string> striped_refusal() const;
  // " (lane K, ADDRESS)" (or " (striped over every lane)") with several lanes, else "": what a
  // failure reason of `f` ends with.
  std::string note(const File& f) const;

 private:
  size_t count() const { return gate_ == nullptr ? 1 : gate_->lanes(); }

  const ReceiverConfig& cfg_;
  const SenderSession* gate_ = nullptr;
};

}  // namespace ddft::receiver
