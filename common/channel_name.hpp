// A channel's name (the sender's --channel NAME, the receiver's --channel-dir NAME=PATH): the
// first component of its files' paths on the wire (common/protocol.hpp, "Channels"), so a name
// that is also a plain folder name.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

namespace ddft::common {

// Whether `name` may name a channel: 1 to 64 of [A-Za-z0-9._-], not "." or "..". The reason
// when it may not.
[[nodiscard]] inline std::optional<std::string> channel_name_refusal(std::string_view name) {
  if (name.empty() || name.size() > 64)
    return std::string("a channel's name is 1 to 64 characters");
  if (name == "." || name == "..") return fmt::format("'{}' cannot name a channel", name);
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return fmt::format("channel '{}': a name takes only A-Z a-z 0-9 . _ -", name);
  }
  return std::nullopt;
}

}  // namespace ddft::common
