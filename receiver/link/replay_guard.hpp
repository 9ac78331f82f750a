// Which authenticated datagrams are fresh (--key-file). A datagram that passed its GCM tag is
// still refused when it is a replay: of an earlier session of its sender, or of a session already
// taken (a sequence number taken before, or one too far behind to tell). Several senders may
// share the key, each with its own sessions: the guard keeps a mark per session it follows (the
// newest sessions, up to kMarksKept), each with the sender its kSenderInfo names.
//
// A new session that starts after every session taken is fresh at once. One that starts before
// the newest may be another sender's, or a replay: it is taken only once its kSenderInfo names a
// sender (not 0) whose sessions here all started before it; until then its datagrams are
// refused. Once a sender's newer session is named, its older ones are refused for good; senders
// without an id count as one sender (the session started last is theirs). The marks
// are kept in a small state file, so a restart of the receiver does not reopen the door to what it
// had taken before.
//
// One guard per lane, on the writer thread; no I/O of its own (the session gate saves and
// restores the marks). parse_session_marks() returns nothing with a reason; nothing here throws
// but allocation.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/seal.hpp"
#include "receiver/seq_window.hpp"

namespace ddft::receiver {

// A session accepted, the highest sequence number taken from it, and its sender's id once its
// kSenderInfo named it (0 for a sender without one).
struct SessionMark {
  common::Salt salt{};
  uint64_t session_id = 0;
  uint64_t max_seq = 0;
  uint64_t sender_id = 0;
  bool named = false;  // its kSenderInfo came
  uint64_t start_ns() const { return common::salt_start_ns(salt); }
};

// One line per mark: "ddft-session-state v1 salt=HEX32 session=HEX16 max_seq=N[ sender=HEX16]"
// (sender= once named).
std::string format_session_marks(const std::vector<SessionMark>& marks);
// Parses format_session_marks() (at least one line); on error returns nullopt and sets *why to a
// one-line reason.
[[nodiscard]] std::optional<std::vector<SessionMark>> parse_session_marks(std::string_view text,
                                                                          std::string* why);

class ReplayGuard {
 public:
  enum class Verdict {
    kFresh,         // take it
    kNewSession,    // take it: the first datagram of a session newer than all (persist now)
    kDuplicate,     // seen already, within the window: a link duplicate, or a replay of one
    kReplayed,      // of a session taken but older than the window, or than the restored mark
    kUnidentified,  // of a session older than the newest, not named yet: see identify()
  };
  // Window of recent sequence numbers in which order does not matter.
  static constexpr uint64_t kWindow = 16384;
  // Sessions followed at most; past it, the one used longest ago is forgotten.
  static constexpr size_t kMarksKept = 128;

  // `restored`: the marks a previous run left. Sequence numbers of those sessions up to their
  // max_seq are refused.
  explicit ReplayGuard(const std::vector<SessionMark>& restored = {});
  ~ReplayGuard();
  ReplayGuard(const ReplayGuard&) = delete;
  ReplayGuard& operator=(const ReplayGuard&) = delete;

  // Only ever for datagrams that passed authentication.
  Verdict check(const common::Salt& salt, uint64_t session_id, uint64_t seq);
  // The session's kSenderInfo (datagram `seq`, authenticated) names its sender `sender_id` (0:
  // a sender without an id, all of which count as one). True when the session is taken: none of
  // that sender's sessions here started at or after it; if it was kUnidentified, `sender_id` is
  // not 0 (then `seq` is taken, as check() would). The sender's earlier sessions are forgotten.
  // False: it is an earlier session of its sender (forgotten, if it was taken), or was
  // kUnidentified with no sender id to tell it from a replay.
  bool identify(const common::Salt& salt, uint64_t session_id, uint64_t seq, uint64_t sender_id);
  // The marks to persist, newest session first (empty before the first).
  std::vector<SessionMark> marks() const;
  // True once when a mark moved since the last call (for a periodic save).
  bool take_changed();

 private:
  using Window = SeqWindow<kWindow>;
  struct Entry {
    SessionMark mark;    // max_seq follows the window's highest number
    uint64_t floor = 0;  // restored session: numbers <= floor are refused
    bool have_floor = false;
    uint64_t used = 0;                                            // when last matched, in checks
    std::unique_ptr<Window> window = std::make_unique<Window>();  // taken by this run
  };
  Entry* find(const common::Salt& salt, uint64_t session_id);
  Entry& add(const SessionMark& m);
  Verdict take(Entry& e, uint64_t seq, Verdict fresh);
  uint64_t newest_start() const;

  std::vector<Entry> entries_;
  uint64_t checks_ = 0;
  bool changed_ = false;
};

}  // namespace ddft::receiver
