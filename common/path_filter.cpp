#include "common/path_filter.hpp"

#include <fnmatch.h>

#include <stdexcept>

namespace ddft::common {
namespace {

void check_pattern(const std::string& p, const char* option) {
  if (p.empty()) throw std::invalid_argument(std::string(option) + ": an empty pattern");
  // fnmatch treats an unclosed '[' as a literal; an operator who wrote one meant a class.
  bool escaped = false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (escaped) {
      escaped = false;
    } else if (p[i] == '\\') {
      escaped = true;
    } else if (p[i] == '[') {
      size_t j = i + 1;
      if (j < p.size() && (p[j] == '!' || p[j] == '^')) ++j;
      if (j < p.size() && p[j] == ']') ++j;  // a leading ']' is a member of the class
      while (j < p.size() && p[j] != ']') ++j;
      if (j >= p.size()) {
        throw std::invalid_argument(std::string(option) + " '" + p + "': unclosed '['");
      }
      i = j;
    }
  }
}

}  // namespace

bool glob_matches(const std::string& pattern, std::string_view rel_path) {
  const bool whole = pattern.find('/') != std::string::npos;
  std::string_view subject = rel_path;
  if (!whole) {
    const size_t slash = rel_path.rfind('/');
    if (slash != std::string_view::npos) subject = rel_path.substr(slash + 1);
  }
  const std::string s(subject);  // fnmatch needs a terminated string
  return ::fnmatch(pattern.c_str(), s.c_str(), 0) == 0;
}

PathFilter::PathFilter(std::vector<std::string> includes, std::vector<std::string> excludes)
    : includes_(std::move(includes)), excludes_(std::move(excludes)) {
  for (const auto& p : includes_) check_pattern(p, "--include");
  for (const auto& p : excludes_) check_pattern(p, "--exclude");
}

std::optional<std::string> PathFilter::refusal(std::string_view rel_path) const {
  for (const auto& p : excludes_) {
    if (glob_matches(p, rel_path)) return "matches --exclude '" + p + "'";
  }
  if (includes_.empty()) return std::nullopt;
  for (const auto& p : includes_) {
    if (glob_matches(p, rel_path)) return std::nullopt;
  }
  return std::string("matches no --include");
}

}  // namespace ddft::common
