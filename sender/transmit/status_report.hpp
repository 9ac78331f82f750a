// The sender's status for the high side (common/status_wire.hpp): what waits to be sent and since
// when, what could not be read or was left out, the hot folders' disks and retention, the lanes
// up and the configured rate. Each lane's transmitter sends it at the end of its kSenderInfo
// every kStatusIntervalS, and at once when something that matters changes:
// - a lane going down, a file it could not read, a file it left out;
// - the queue emptying or filling, its oldest file passing kBacklogWarnS;
// - a watched or retention file system passing below kLowFreeRatio free, or the retention
//   folder above its limit.
//
// Thread-safe (one mutex): the transmit threads call due() and session_started() comes from
// Sender::run(). The sources and hot folders are the caller's and must outlive their use; nothing
// throws (a file system that cannot be read reports size 0).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.hpp"
#include "common/status_wire.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/send_status.hpp"
#include "sender/source/hot_folder.hpp"

namespace ddft::sender {

class StatusReport {
 public:
  using time_point = common::Clock::time_point;
  // `status` gives the counts and lanes; `folders` the hot folders (none for a list of files).
  StatusReport(const SenderConfig& cfg, const SendStatus& status,
               std::vector<const HotFolder*> folders);
  // A session starts at `now` with these channels (name "" without channels) and `lanes` lanes:
  // its statuses are numbered from 1.
  void session_started(const std::vector<std::pair<std::string, const FileSource*>>& channels,
                       size_t lanes, time_point now);
  // The status lane `lane` sends now, or nothing: its first, then every kStatusIntervalS, and at
  // once when what matters changed since the lane sent its last.
  std::optional<common::SenderStatus> due(size_t lane, time_point now);
  // The status as it stands at `now` (sampled again at most once a second).
  common::SenderStatus current(time_point now);
  // The same, sampled now whatever the last sample's age (the session's last status).
  common::SenderStatus sample_now(time_point now);

 private:
  struct LaneSent {
    bool sent = false;
    time_point at{};
    uint64_t mattered = 0;
  };
  common::SenderStatus sample(time_point now) const;                         // mu_ held
  common::SenderStatus& current_locked(time_point now, bool fresh = false);  // mu_ held

  const SenderConfig& cfg_;
  const SendStatus& status_;
  std::vector<const HotFolder*> folders_;
  std::mutex mu_;
  std::vector<std::pair<std::string, const FileSource*>> channels_;
  time_point started_{};
  std::vector<LaneSent> lanes_;
  std::optional<common::SenderStatus> last_;
  time_point sampled_at_{};
};

// What in `s` matters enough to be sent at once when it changes (a hash of those fields).
uint64_t status_mattering(const common::SenderStatus& s);

}  // namespace ddft::sender
