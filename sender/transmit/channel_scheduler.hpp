// Which channel's next item a lane sends: the sharing policy between a sender's channels, kept
// apart from any queue or thread so that it is decided, and tested, on a clock of its own.
//
// The rules, on each lane, between the channels that have an item ready for it:
// - **Rate cap** (`rate_cap`, bytes/s, over all lanes together): a channel that has sent its
//   cap's worth is not eligible until its next deadline (absolute deadlines, as
//   common::RateLimiter: a pick made late because the lane was sending another channel's item
//   never slows the average); a channel that had nothing ready catches up at most `kCapBurst`
//   of the time it was idle. An item of no cost (a file's begin or end) is never held back, so a
//   file ends as soon as its last block is out.
// - **Minimum share** (`min_share`, a fraction of the lane): every byte the lane sends earns each
//   channel min_share x its size in credit (at most kCreditMax bytes saved up); a ready channel
//   whose credit covers its next item goes first. So a channel of a lower class still gets at
//   least its share of a lane that a higher class keeps busy, and never starves.
// - **Strict priority** between classes (`priority`, 0 first): otherwise the most urgent class
//   with a ready channel sends.
// - **Weighted fair share** within a class (`weight`): start-time fair queueing on bytes. Each
//   channel's virtual time grows by bytes / weight as it sends; the ready channel with the least
//   goes next. A channel that was idle restarts at the class's current virtual time, so an idle
//   spell earns no burst.
// Ties go to the lower channel index.
//
// One object for all lanes (the caps span lanes; the rest is per lane). Not thread-safe: the
// caller (ChannelMux) holds its lock around every call. Throws std::invalid_argument from the
// constructor for a policy it cannot follow (no channel, a weight of 0, a share outside [0, 1),
// shares adding up to 1 or more); nothing else throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/clock.hpp"
#include "sender/channel.hpp"

namespace ddft::sender {

class ChannelScheduler {
 public:
  // How much of an idle spell a capped channel may catch up at full speed.
  static constexpr std::chrono::milliseconds kCapBurst{20};
  // The most minimum-share credit a channel saves up, in bytes (a few blocks: enough to send
  // its next block at once, never a burst that shuts the others out for long).
  static constexpr uint64_t kCreditMax = uint64_t{8} << 20;

  // Channels (at least one) in index order, over `lanes` lanes (at least one).
  ChannelScheduler(std::vector<ChannelPolicy> channels, size_t lanes);

  // The channel whose next item goes next on `lane` at `now`. `ready[c]`: the cost in bytes of
  // channel c's next item for the lane, nullopt when it has none. nullopt when no ready channel
  // may send now (all capped): *retry_at (when given) is then the earliest time one may, or
  // time_point::max() when none is ready at all.
  std::optional<size_t> pick(size_t lane, std::span<const std::optional<uint64_t>> ready,
                             common::Clock::time_point now,
                             common::Clock::time_point* retry_at = nullptr);
  // Channel `c` sent an item of `bytes` on `lane` at `now`: its virtual time, its credit, every
  // channel's credit on the lane and its cap's deadline move on.
  void charge(size_t lane, size_t c, uint64_t bytes, common::Clock::time_point now);

  size_t channels() const { return policies_.size(); }
  const ChannelPolicy& policy(size_t c) const { return policies_[c]; }

 private:
  struct PerLane {
    std::vector<double> vtime;    // each channel's virtual time (bytes / weight)
    std::vector<double> credit;   // each channel's minimum-share credit, bytes
    std::vector<bool> was_ready;  // ready at the last pick (an idle one restarts at the class's)
    // Since when each channel's next item has waited on the lane (its arrival, or the last
    // charge): a cap's schedule is late by no more than that.
    std::vector<common::Clock::time_point> ready_since;
    std::vector<double> class_vtime;  // per class: the virtual time of its last pick
  };
  // Whether channel `c`'s cap lets it send at `now`.
  bool under_cap(size_t c, common::Clock::time_point now) const;

  std::vector<ChannelPolicy> policies_;
  unsigned classes_ = 1;
  std::vector<PerLane> lanes_;
  std::vector<common::Clock::time_point> cap_next_;  // each channel's cap deadline
  std::vector<double> cap_ns_per_byte_;              // 0: no cap
};

}  // namespace ddft::sender
