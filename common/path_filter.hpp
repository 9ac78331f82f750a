// Include/exclude globs on relative paths (--include, --exclude), on both sides of the diode.
//
// A PathFilter is a value: its const calls from any thread. Its constructor throws
// std::invalid_argument with one line for an empty pattern or one with an unclosed '['
// (start-up); matching never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddft::common {

// A pattern without '/' matches a file's base name ("*.tmp" drops "a/b/x.tmp"); a pattern with
// '/' matches the whole '/'-separated relative path, '*' and '?' crossing '/' ("logs/*" takes
// everything under logs/). Matching is fnmatch(3) glob syntax: *, ?, [...], and \ to quote.
// With any include pattern a path must match one; an exclude pattern wins over every include.
class PathFilter {
 public:
  PathFilter() = default;
  // Throws std::invalid_argument with a one-line reason on an empty pattern or one with an
  // unclosed '['.
  PathFilter(std::vector<std::string> includes, std::vector<std::string> excludes);

  bool empty() const { return includes_.empty() && excludes_.empty(); }
  // Why `rel_path` is refused ("matches --exclude '*.tmp'", "matches no --include"), or nothing
  // when it passes.
  std::optional<std::string> refusal(std::string_view rel_path) const;
  bool accepts(std::string_view rel_path) const { return !refusal(rel_path); }

 private:
  std::vector<std::string> includes_;
  std::vector<std::string> excludes_;
};

// True when `pattern` (the syntax above) matches `rel_path`.
bool glob_matches(const std::string& pattern, std::string_view rel_path);

}  // namespace ddft::common
