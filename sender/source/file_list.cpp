#include "sender/source/file_list.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <system_error>

namespace ddft::sender {
namespace fs = std::filesystem;

namespace {

std::string join_rel(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "/" + name;
}

// One folder source walked: its files, what cannot be sent, and its links as the mode says.
// Folders are walked by their own names first, folder links (--symlinks follow) afterwards, in
// name order: a folder that is both in the tree and behind a link is sent under its own name.
class TreeWalk {
 public:
  TreeWalk(const common::PathFilter& filter, const Shard& shard, SymlinkMode mode, FileList* out)
      : filter_(filter), shard_(shard), mode_(mode), out_(out) {}

  void run(const fs::path& root, const std::string& prefix) {
    if (!first_visit(root, prefix)) return;
    root_ = root.string();
    stack_.push_back({root, prefix, "", true});
    while (!stack_.empty() || !links_.empty()) {
      if (stack_.empty()) {
        std::sort(links_.begin(), links_.end(),
                  [](const FolderLink& a, const FolderLink& b) { return a.rel > b.rel; });
        const FolderLink l = std::move(links_.back());
        links_.pop_back();
        follow_folder(l);
        continue;
      }
      const Folder d = std::move(stack_.back());
      stack_.pop_back();
      read_folder(d);
    }
    std::sort(found_.begin(), found_.end(),
              [](const SourceFile& a, const SourceFile& b) { return a.rel_path < b.rel_path; });
    out_->files.insert(out_->files.end(), found_.begin(), found_.end());
  }

 private:
  struct Folder {
    fs::path path;      // where it is read
    std::string rel;    // what the receiver calls it
    std::string below;  // its path below the root, when no link led to it ("" for the root)
    bool root = false;
  };
  struct FolderLink {
    fs::path link;      // the link, as found
    fs::path resolved;  // the folder it leads to (canonical)
    std::string rel;
  };

  // Whether this host names `rel` in a line: its shard's, and for a file, one the filter takes
  // (the filter is about files: a folder's line does not depend on it).
  bool reportable(const std::string& rel, bool folder) const {
    return shard_.takes(rel) && (folder || filter_.accepts(rel));
  }
  void error(const std::string& rel, bool folder, std::string message) {
    if (reportable(rel, folder)) out_->errors.push_back({rel, std::move(message)});
  }
  void skipped(const std::string& rel, bool folder, std::string message) {
    if (reportable(rel, folder)) out_->skipped_links.push_back({rel, std::move(message)});
  }
  // A file at `path`, sent as `rel`; `below`: its path below the root, for a file reached by no
  // link (under skip and error, every file).
  void add_file(const fs::path& path, const std::string& rel, const std::string& below = {}) {
    // The size only sizes a progress display's batch; a file that vanished since counts 0 here
    // and gives its error when the reader opens it.
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    SourceFile f{.path = path.string(), .rel_path = rel, .size = ec ? 0 : size};
    // Under follow, links are the operator's choice, and a folder reached by one has no path
    // below the root: opened as listed.
    if (mode_ != SymlinkMode::kFollow && !below.empty()) {
      f.root = root_;
      f.below = below;
    }
    found_.push_back(std::move(f));
  }
  // False (with a line) when the folder at `path` was walked already, under another name.
  bool first_visit(const fs::path& path, const std::string& rel) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return true;  // its read says why
    const auto [it, added] = visited_.emplace(std::make_pair(st.st_dev, st.st_ino), rel);
    if (added) return true;
    skipped(rel, true,
            fmt::format("skipping '{}': the folder it leads to is sent already as '{}' (a loop, "
                        "or a second way to one folder)",
                        path.string(), it->second.empty() ? "." : it->second));
    return false;
  }

  void read_folder(const Folder& d) {
    std::error_code ec;
    fs::directory_iterator it(d.path, ec);
    if (ec) {
      const std::string message =
          fmt::format("cannot read folder '{}': {}", d.path.string(), ec.message());
      if (d.root) {
        out_->errors.push_back({d.rel, message});
      } else {
        error(d.rel, true, message);
      }
      return;
    }
    for (const fs::directory_iterator end; it != end;) {
      const fs::directory_entry& entry = *it;
      const std::string name = entry.path().filename().string();
      const std::string rel = join_rel(d.rel, name);
      const std::string below = d.root || !d.below.empty() ? join_rel(d.below, name) : "";
      std::error_code sec;
      if (entry.is_symlink(sec)) {
        link(entry.path(), rel);
      } else if (const auto st = entry.status(sec); sec) {
        error(rel, false,
              fmt::format("cannot stat '{}': {}", entry.path().string(), sec.message()));
      } else if (fs::is_directory(st)) {
        if (first_visit(entry.path(), rel)) stack_.push_back({entry.path(), rel, below, false});
      } else if (fs::is_regular_file(st)) {
        add_file(entry.path(), rel, below);
      } else {
        error(rel, false, fmt::format("skipping '{}': not a regular file", entry.path().string()));
      }
      it.increment(ec);
      if (ec) {
        error(d.rel, true, fmt::format("cannot read in '{}': {}", d.path.string(), ec.message()));
        break;
      }
    }
  }

  // A symbolic link at `path` found in a folder, to be sent as `rel`.
  void link(const fs::path& path, const std::string& rel) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(path, ec);
    const std::string to = ec ? std::string("?") : target.string();
    std::error_code tec;
    const auto st = fs::status(path, tec);  // follows it
    const bool folder = !tec && fs::is_directory(st);
    const char* what = tec ? ", which leads nowhere" : folder ? ", a folder" : "";
    if (mode_ == SymlinkMode::kSkip) {
      skipped(rel, folder,
              fmt::format("skipping symbolic link '{}' (to '{}'{}; --symlinks skip)", path.string(),
                          to, what));
      return;
    }
    if (mode_ == SymlinkMode::kError) {
      error(rel, folder,
            fmt::format("cannot send '{}': a symbolic link (to '{}'{}; --symlinks error)",
                        path.string(), to, what));
      return;
    }
    const fs::path resolved = tec ? fs::path() : fs::canonical(path, tec);
    if (tec) {
      error(rel, false,
            fmt::format("cannot send '{}': symbolic link to '{}' leads nowhere: {}", path.string(),
                        to, tec.message()));
    } else if (folder) {
      links_.push_back({path, resolved, rel});
    } else if (!fs::is_regular_file(st)) {
      error(rel, false,
            fmt::format("skipping '{}': symbolic link to '{}', not a regular file", path.string(),
                        resolved.string()));
    } else {
      if (reportable(rel, false)) {
        out_->followed_links.push_back(
            fmt::format("following symbolic link '{}' to '{}'", path.string(), resolved.string()));
      }
      add_file(resolved, rel);
    }
  }

  void follow_folder(const FolderLink& l) {
    if (!first_visit(l.resolved, l.rel)) return;
    if (reportable(l.rel, true)) {
      out_->followed_links.push_back(fmt::format("following symbolic link '{}' to folder '{}'",
                                                 l.link.string(), l.resolved.string()));
    }
    stack_.push_back({l.resolved, l.rel, "", false});
  }

  const common::PathFilter& filter_;
  const Shard& shard_;
  SymlinkMode mode_;
  FileList* out_;
  std::string root_;  // the folder named on the command line, as named
  std::vector<Folder> stack_;
  std::vector<FolderLink> links_;  // folder links to follow once the tree itself is walked
  std::map<std::pair<dev_t, ino_t>, std::string> visited_;  // folders walked -> first name
  std::vector<SourceFile> found_;
};

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

std::string_view symlink_mode_name(SymlinkMode mode) {
  return mode == SymlinkMode::kFollow ? "follow" : mode == SymlinkMode::kError ? "error" : "skip";
}

bool parse_symlink_mode(std::string_view text, SymlinkMode* out) {
  for (const SymlinkMode m : {SymlinkMode::kSkip, SymlinkMode::kFollow, SymlinkMode::kError}) {
    if (text == symlink_mode_name(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

FileList discover_files(const std::vector<std::string>& sources, const common::PathFilter& filter,
                        const Shard& shard, SymlinkMode symlinks) {
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
      TreeWalk(filter, shard, symlinks, &out).run(p, prefix);
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
