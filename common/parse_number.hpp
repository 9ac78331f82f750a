// Whole decimal numbers from text: the one parser the options, the journals and the wire's
// text fields share.
//
// Pure functions: any thread; a text that is not a number gives false, never an exception.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ddft::common {

// True when `text` is exactly one decimal number that fits T: digits only (a leading '-' only
// for a signed T), no space, sign '+', base prefix or trailing character; not empty. *out is
// set only then.
template <typename T>
[[nodiscard]] bool parse_whole_number(std::string_view text, T* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  T v{};
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return false;
  *out = v;
  return true;
}

// A list of delays, "60s,10m,1h,6h,24h": whole numbers each with its unit (s, m, h or d),
// comma-separated, each longer than the one before, at most 64. True and *out set when `text`
// is one.
[[nodiscard]] inline bool parse_delay_list(std::string_view text,
                                           std::vector<std::chrono::seconds>* out) {
  std::vector<std::chrono::seconds> v;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (comma != std::string_view::npos && text.empty()) return false;  // "1m,"
    if (item.size() < 2) return false;
    int64_t unit = 0;
    switch (item.back()) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        return false;
    }
    int64_t n = 0;
    if (!parse_whole_number(item.substr(0, item.size() - 1), &n) || n <= 0 ||
        n > 366 * 86400 / unit) {
      return false;
    }
    const std::chrono::seconds d(n * unit);
    if ((!v.empty() && d <= v.back()) || v.size() == 64) return false;
    v.push_back(d);
  }
  if (v.empty()) return false;
  *out = std::move(v);
  return true;
}

}  // namespace ddft::common
