#include "sender/channel.hpp"

#include <fmt/format.h>

#include <charconv>
#include <set>

namespace ddft::sender {
namespace {

// `text` as a whole number in [lo, hi], else nullopt.
std::optional<unsigned> whole(std::string_view text, unsigned lo, unsigned hi) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    return std::nullopt;
  }
  return v;
}

// `text` as a non-negative decimal number, else nullopt.
std::optional<double> decimal(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= 0)) return std::nullopt;
  return v;
}

// One KEY=VALUE of a channel into *out; the reason when it does not fit.
std::optional<std::string> take_setting(std::string_view key, std::string_view value,
                                        ChannelSpec* out) {
  if (key == "watch" || key == "source") {
    if (value.empty()) return fmt::format("{}= needs a path", key);
    if (key == "watch") {
      if (!out->watch_dir.empty()) return std::string("watch= given twice");
      out->watch_dir = std::string(value);
    } else {
      out->sources.emplace_back(value);
    }
    return std::nullopt;
  }
  if (key == "class") {
    const auto v = whole(value, 0, 7);
    if (!v) return fmt::format("class={}: expected a whole number from 0 to 7", value);
    out->policy.priority = *v;
  } else if (key == "weight") {
    const auto v = whole(value, 1, 1000);
    if (!v) return fmt::format("weight={}: expected a whole number from 1 to 1000", value);
    out->policy.weight = *v;
  } else if (key == "rate") {
    const auto v = decimal(value);
    if (!v || *v == 0) return fmt::format("rate={}: expected MB/s above 0", value);
    out->policy.rate_cap = *v * 1024.0 * 1024.0;
  } else if (key == "min-share") {
    const std::string_view pct = value.ends_with('%') ? value.substr(0, value.size() - 1) : value;
    const auto v = decimal(pct);
    if (!v || *v >= 100) return fmt::format("min-share={}: expected a percentage below 100", value);
    out->policy.min_share = *v / 100.0;
  } else {
    return fmt::format("unknown setting '{}' (watch, source, class, weight, rate, min-share)", key);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> parse_channel(std::string_view text, ChannelSpec* out) {
  *out = ChannelSpec{};
  const size_t colon = text.find(':');
  out->name = std::string(text.substr(0, colon));
  if (auto why = channel_name_refusal(out->name)) return why;
  if (colon == std::string_view::npos) {
    return fmt::format("channel '{}': expected NAME:watch=DIR or NAME:source=PATH", out->name);
  }
  std::string_view rest = text.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return fmt::format("channel '{}': '{}' is not KEY=VALUE", out->name, item);
    }
    if (auto why = take_setting(item.substr(0, eq), item.substr(eq + 1), out)) {
      return fmt::format("channel '{}': {}", out->name, *why);
    }
  }
  if (out->watch_dir.empty() == out->sources.empty()) {
    return fmt::format("channel '{}': give either watch=DIR or source=PATH", out->name);
  }
  return std::nullopt;
}

std::optional<std::string> channels_refusal(const std::vector<ChannelSpec>& channels) {
  std::set<std::string> names;
  double shares = 0;
  size_t watching = 0;
  for (const ChannelSpec& c : channels) {
    if (!names.insert(c.name).second) return fmt::format("channel '{}' given twice", c.name);
    shares += c.policy.min_share;
    watching += c.watch_dir.empty() ? 0 : 1;
  }
  if (shares >= 1.0) {
    return fmt::format("the channels' min-share settings add up to {:.0f}%: they must leave room",
                       shares * 100);
  }
  if (watching != 0 && watching != channels.size()) {
    return std::string("channels are either all hot folders (watch=) or all sent once (source=)");
  }
  return std::nullopt;
}

}  // namespace ddft::sender
