// A channel: one of the sources a sender serves at once (a hot folder, or the files of a one-shot
// send), with what it asks of the link. Its files go to the receiver under its name, the first
// component of their paths (common/protocol.hpp, "Channels"), and share every lane with the other
// channels by the policy ChannelScheduler follows (sender/transmit/channel_scheduler.hpp).
//
// --channel NAME:KEY=VALUE,... on the command line (or `channel = ...` in the config file), once
// per channel:
//   watch=DIR      a hot folder, as --watch DIR       source=PATH  a file or folder to send once
//                  (one of the two; source= may come several times)
//   class=N        its priority class, 0 first (default 0)
//   weight=N       its share within the class (default 1)
//   rate=MB/s      a cap over all lanes, in MiB/s as --rate (default none)
//   min-share=P%   the part of each lane it gets at least while it has data (default 0%)
//
// Plain values and pure functions; nothing here throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/channel_name.hpp"

namespace ddft::sender {

// What a channel asks of the link.
struct ChannelPolicy {
  unsigned priority = 0;  // its class: 0 sends first
  unsigned weight = 1;    // its share within the class, against the others' weights
  double rate_cap = 0;    // bytes/s over all lanes; 0: no cap
  double min_share = 0;   // the fraction of each lane it gets at least while it has data
};

struct ChannelSpec {
  std::string name;
  std::string watch_dir;             // watch=: a hot folder
  std::vector<std::string> sources;  // source=: sent once
  ChannelPolicy policy;
};

using common::channel_name_refusal;

// Parses one --channel value into *out. On a bad value returns the one-line reason (naming the
// key at fault) and leaves *out unspecified.
[[nodiscard]] std::optional<std::string> parse_channel(std::string_view text, ChannelSpec* out);

// Checks the channels together: names unique, minimum shares adding up to less than 100%, and
// either every channel a hot folder or none (a session is one or the other). The reason when not.
[[nodiscard]] std::optional<std::string> channels_refusal(const std::vector<ChannelSpec>& channels);

}  // namespace ddft::sender
