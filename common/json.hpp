// Minimal JSON output for the records the programs write (failed-file records, summaries).
#pragma once

#include <string>
#include <string_view>

namespace ddft::common {

// Returns `s` as a JSON string literal, quotes included. Bytes that are not valid UTF-8 and control
// characters are escaped (\u00XX), so hostile file names from the wire stay one valid line.
std::string json_quote(std::string_view s);

}  // namespace ddft::common
