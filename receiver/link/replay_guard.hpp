// Which authenticated datagrams are fresh (--key-file). A datagram that passed its GCM tag is
// still refused when it is a replay: of an earlier session (its salt's start time is not after
// the newest session accepted), or of this session (a sequence number already taken, or one too
// far behind to tell). The newest session and how far it got are kept in a small state file, so a
// restart of the receiver does not reopen the door to what it had taken before.
//
// One guard per lane, on the writer thread; no I/O of its own (the session gate saves and
// restores the mark). parse_session_mark() returns nothing with a reason; nothing here throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/seal.hpp"
#include "receiver/seq_window.hpp"

namespace ddft::receiver {

// The newest session accepted and the highest sequence number taken from it.
struct SessionMark {
  common::Salt salt{};
  uint64_t session_id = 0;
  uint64_t max_seq = 0;
  uint64_t start_ns() const { return common::salt_start_ns(salt); }
};

// One line of text: "ddft-session-state v1 salt=HEX32 session=HEX16 max_seq=N".
std::string format_session_mark(const SessionMark& m);
// Parses format_session_mark(); on error returns nullopt and sets *why to a one-line reason.
[[nodiscard]] std::optional<SessionMark> parse_session_mark(std::string_view text,
                                                            std::string* why);

class ReplayGuard {
 public:
  enum class Verdict {
    kFresh,         // take it
    kNewSession,    // take it: the first datagram of a newer session (persist the mark now)
    kDuplicate,     // seen already, within the window: a link duplicate, or a replay of one
    kReplayed,      // of this session but older than the window, or than the restored mark
    kStaleSession,  // of a session that does not start after the newest one accepted
  };
  // Window of recent sequence numbers in which order does not matter.
  static constexpr uint64_t kWindow = 16384;

  // `restored`: the mark a previous run left, if any. Sequence numbers of that session up to its
  // max_seq are refused.
  explicit ReplayGuard(std::optional<SessionMark> restored = std::nullopt);
  // Only ever for datagrams that passed authentication.
  Verdict check(const common::Salt& salt, uint64_t session_id, uint64_t seq);
  const std::optional<SessionMark>& mark() const { return mark_; }
  // True once when the mark moved since the last call (for a periodic save).
  bool take_changed();

 private:
  using Window = SeqWindow<kWindow>;
  std::optional<SessionMark> mark_;  // max_seq follows the window's highest number
  uint64_t floor_ = 0;               // restored session: numbers <= floor_ are refused
  bool have_floor_ = false;
  bool changed_ = false;
  Window window_;  // numbers of the mark's session taken by this run
};

}  // namespace ddft::receiver
