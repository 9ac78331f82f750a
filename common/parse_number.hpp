// Whole decimal numbers from text: the one parser the options, the journals and the wire's
// text fields share.
#pragma once

#include <charconv>
#include <string_view>
#include <system_error>

namespace ddft::common {

// True when `text` is exactly one decimal number that fits T: digits only (a leading '-' only
// for a signed T), no space, sign '+', base prefix or trailing character; not empty. *out is
// set only then.
template <typename T>
bool parse_whole_number(std::string_view text, T* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  T v{};
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end) return false;
  *out = v;
  return true;
}

}  // namespace ddft::common
