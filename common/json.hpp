// Minimal JSON output for the records the programs write (failed-file records, summaries).
//
// Pure functions: no I/O, any thread; a parse that fails returns false; nothing throws.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddft::common {

// Returns `s` as a JSON string literal, quotes included. Bytes that are not valid UTF-8 and control
// characters are escaped (\u00XX), so hostile file names from the wire stay one valid line.
std::string json_quote(std::string_view s);
// Takes the JSON string that json_quote() wrote at the front of `*rest` (its \" \\ \n \t \r
// \b \f \/ and \u00XX escapes) into *out and moves *rest past it. False, with *rest as it was,
// when `*rest` does not start with one (a bare quote inside: two lines glued).
[[nodiscard]] bool take_json_string(std::string_view* rest, std::string* out);

// One flat JSON object, as the programs' JSON lines are: string keys, each value a string, a
// number, true, false or null (no nested object or array). *out gets each key's value: a string
// unquoted, a number or true/false as its text, null as nothing. False when `line` (surrounding
// spaces aside) is not one such object, or names a key twice.
[[nodiscard]] bool parse_flat_json(std::string_view line,
                                   std::map<std::string, std::optional<std::string>>* out);

// `t` as local ISO 8601 with milliseconds and the UTC offset, as JSON records carry it:
// "2026-11-22T18:20:01.123+01:00" (the offset of the time zone in force, TZ as usual).
std::string iso8601_local(std::chrono::system_clock::time_point t);

}  // namespace ddft::common
