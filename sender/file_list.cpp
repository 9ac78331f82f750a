#include "sender/file_list.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

namespace ddft::sender {
namespace fs = std::filesystem;

namespace {

std::string join_rel(const std::string& prefix, const fs::path& rel) {
  std::string r = rel.generic_string();
  if (prefix.empty()) return r;
  return prefix + "/" + r;
}

void walk_folder(const fs::path& root, const std::string& prefix, const common::PathFilter& filter,
                 const Shard& shard, FileList* out) {
  std::error_code ec;
  std::vector<SourceFile> found;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) {
    out->errors.push_back(
        {prefix, fmt::format("cannot read folder '{}': {}", root.string(), ec.message())});
    return;
  }
  // An entry that cannot be sent, unless the filter leaves it out anyway or another host's
  // shard holds it (that host reports it).
  const auto entry_error = [&](const fs::path& p, std::string message) {
    std::string rel = join_rel(prefix, p.lexically_relative(root));
    if (filter.accepts(rel) && shard.takes(rel)) {
      out->errors.push_back({std::move(rel), std::move(message)});
    }
  };
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) {
      out->errors.push_back(
          {prefix, fmt::format("cannot read in '{}': {}", root.string(), ec.message())});
      ec.clear();
      continue;
    }
    const fs::directory_entry& entry = *it;
    std::error_code sec;
    const auto st = entry.status(sec);  // follows symlinks
    if (sec) {
      entry_error(entry.path(),
                  fmt::format("cannot stat '{}': {}", entry.path().string(), sec.message()));
      continue;
    }
    if (fs::is_directory(st)) {
      if (entry.is_symlink()) it.disable_recursion_pending();  // never follow folder links
      continue;
    }
    if (!fs::is_regular_file(st)) {
      entry_error(entry.path(),
                  fmt::format("skipping '{}': not a regular file", entry.path().string()));
      continue;
    }
    // The size only sizes a progress display's batch; a file that vanished since counts 0 here
    // and gives its error when the reader opens it.
    const uint64_t size = entry.file_size(sec);
    found.push_back({.path = entry.path().string(),
                     .rel_path = join_rel(prefix, entry.path().lexically_relative(root)),
                     .size = sec ? 0 : size});
  }
  std::sort(found.begin(), found.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.rel_path < b.rel_path; });
  out->files.insert(out->files.end(), found.begin(), found.end());
}

}  // namespace

bool parse_size(std::string_view text, uint64_t* out) {
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr == text.data()) return false;
  std::string_view unit(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  int shift = 0;
  if (unit == "K" || unit == "k") {
    shift = 10;
  } else if (unit == "M" || unit == "m") {
    shift = 20;
  } else if (unit == "G" || unit == "g") {
    shift = 30;
  } else if (unit == "T" || unit == "t") {
    shift = 40;
  } else if (!unit.empty()) {
    return false;
  }
  if (shift > 0 && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

FileList discover_files(const std::vector<std::string>& sources, const common::PathFilter& filter,
                        const Shard& shard) {
  FileList out;
  for (const std::string& src : sources) {
    if (src.starts_with("synthetic:")) {
      uint64_t size = 0;
      if (!parse_size(std::string_view(src).substr(10), &size)) {
        out.errors.push_back(
            {src,
             fmt::format("cannot send '{}': expected synthetic:SIZE, e.g. synthetic:2G", src)});
        continue;
      }
      SourceFile f;
      f.rel_path = fmt::format("synthetic-{}.bin", size);
      f.synthetic = true;
      f.synthetic_size = size;
      f.size = size;
      out.files.push_back(std::move(f));
      continue;
    }
    std::error_code ec;
    const fs::path p(src);
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      out.errors.push_back(
          {p.filename().string(), fmt::format("cannot send '{}': {}", src,
                                              ec ? ec.message() : "No such file or directory")});
      continue;
    }
    if (fs::is_directory(st)) {
      const bool contents_only = !src.empty() && src.back() == '/';
      std::string prefix;
      if (!contents_only) {
        prefix = fs::weakly_canonical(p, ec).filename().string();
        if (prefix.empty() || prefix == "/") prefix = "";
      }
      walk_folder(p, prefix, filter, shard, &out);
    } else if (fs::is_regular_file(st)) {
      const uint64_t size = fs::file_size(p, ec);
      out.files.push_back({.path = src, .rel_path = p.filename().string(), .size = ec ? 0 : size});
    } else {
      out.errors.push_back({p.filename().string(),
                            fmt::format("cannot send '{}': not a regular file or folder", src)});
    }
  }
  if (!filter.empty() || shard.enabled()) {
    std::vector<SourceFile> kept;
    for (auto& f : out.files) {
      // Another shard's file first: that host filters it and says so, not this one.
      if (!shard.takes(f.rel_path)) {
        ++out.other_shards;
      } else if (filter.accepts(f.rel_path)) {
        kept.push_back(std::move(f));
      } else {
        out.filtered.push_back(f.rel_path);
      }
    }
    out.files = std::move(kept);
  }
  return out;
}

}  // namespace ddft::sender
