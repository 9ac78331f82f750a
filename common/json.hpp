// Minimal JSON output for the records the programs write (failed-file records, summaries).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace ddft::common {

// Returns `s` as a JSON string literal, quotes included. Bytes that are not valid UTF-8 and control
// characters are escaped (\u00XX), so hostile file names from the wire stay one valid line.
std::string json_quote(std::string_view s);

// `t` as local ISO 8601 with milliseconds and the UTC offset, as JSON records carry it:
// "2026-11-22T18:20:01.123+01:00" (the offset of the time zone in force, TZ as usual).
std::string iso8601_local(std::chrono::system_clock::time_point t);

}  // namespace ddft::common
