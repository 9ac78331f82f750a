// The senders' status as the high side sees it (common/status_wire.hpp): the last status each
// sender sent with its kSenderInfo, kept by sender for --metrics (the ddft_sender_* families),
// for a small JSON file operators can read, and for the log lines that say when a sender crosses
// a threshold and when it recovers:
// - the low side backing up: its oldest file waiting kBacklogWarnS or more;
// - files it could not read (a line each time the count grows; recovered after kReadQuietS
//   without a new one);
// - a watched or retention file system below kLowFreeRatio free; a retention folder over its limit;
// - a lane down;
// - no status for kMissingIntervals of its interval (and its status coming again); a sender whose
//   session ended with its final heartbeats is forgotten instead.
//
// take() and poll() run on the writer thread; snapshot() from any thread (one mutex). The JSON
// file is written whole beside itself and renamed over (readers never see half of it), after each
// status taken and each change of a sender's silence; a file that cannot be written is logged
// once, never thrown. At most kMaxSenders senders are kept: the one silent longest gives way.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/status_wire.hpp"

namespace ddft::receiver {

inline constexpr uint32_t kMissingIntervals = 3;
inline constexpr std::chrono::seconds kReadQuietS{900};

// One sender's last status and what the receiver knows of it.
struct SenderStatusView {
  std::string sender;    // its id (16 hex digits), or session-ID for a sender without one
  uint64_t session = 0;  // the session that sent the status
  size_t lanes = 0;      // the lanes its kSenderInfo names
  common::SenderStatus status;
  int64_t received_wall_ns = 0;  // when the receiver took it (wall clock)
  bool missing = false;          // no status for kMissingIntervals intervals
};

class StatusBoard {
 public:
  using WallNs = std::function<int64_t()>;
  // `json_path`: the file the last statuses go to ("" none). `clock` (steady) times the silences,
  // `wall_ns` (default: the system clock) stamps each status. `clock` must outlive the board.
  StatusBoard(common::Clock& clock, std::string json_path, WallNs wall_ns = {});

  // A status of `sender`'s session `session`, from a kSenderInfo naming `lanes` lanes. Taken
  // when it is the session's first or its seq is above the last taken (copies are dropped).
  void take(const std::string& sender, uint64_t session, size_t lanes,
            const common::SenderStatus& status);
  // Session `session` ended with its final heartbeats: its sender's status goes (a sender that
  // finished is not missing). Nothing when the board holds another session of that sender.
  void ended(uint64_t session);
  // Notes the senders whose status is kMissingIntervals intervals late (writer thread).
  void poll(common::Clock::time_point now);
  // Every sender's last status, in the order of their names. Any thread.
  std::vector<SenderStatusView> snapshot() const;

 private:
  struct Entry {
    SenderStatusView view;
    common::Clock::time_point at{};  // when taken (steady)
    common::StatusAlarms alarms;
    bool unreadable = false;
    common::Clock::time_point last_unreadable{};
  };
  // Logs what crossed a threshold between `was` (nothing: the sender's first) and `e`.
  void log_changes(const Entry* was, Entry& e, common::Clock::time_point now) const;
  void write_json() const;  // mu_ held
  void evict_if_full();     // mu_ held

  common::Clock& clock_;
  std::string json_path_;
  WallNs wall_ns_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> senders_;
  mutable bool json_error_logged_ = false;
};

}  // namespace ddft::receiver
