// Test helpers for file contents: read a file whole, write one (its folders made), compare two,
// fill one with pseudo-random bytes, and list the receiver's failure records.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ddft::testing {

// The bytes of `p`, or "" when it cannot be opened.
std::string read_file(const std::filesystem::path& p);
// Writes `text` to `p` (replacing what it held), creating its folders. Throws
// std::runtime_error when the file cannot be written.
void write_file(const std::filesystem::path& p, std::string_view text);
// True when both files exist and hold the same bytes.
bool same_content(const std::filesystem::path& a, const std::filesystem::path& b);
// Writes `size` pseudo-random bytes (from `seed`) to `p`, creating its folders.
void write_pattern(const std::filesystem::path& p, uint64_t size, uint64_t seed);
// The receiver's state folder and failed folder when --output is `out` and neither --state-dir nor
// --failed-dir is given: out/.ddft and out/.ddft/failed (receiver/delivery/state_dir.hpp).
std::filesystem::path state_folder(const std::filesystem::path& out);
std::filesystem::path failed_folder(const std::filesystem::path& out);
// The failure records (*.json) in the receiver's failed folder below `out` (failed_folder()).
std::vector<std::filesystem::path> failed_records(const std::filesystem::path& out);
// The text of each of those records (support/json_matchers.hpp checks them).
std::vector<std::string> failed_record_texts(const std::filesystem::path& out);

}  // namespace ddft::testing
