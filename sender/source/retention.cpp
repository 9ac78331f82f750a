#include "sender/source/retention.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "common/clock.hpp"
#include "common/fd.hpp"
#include "common/json.hpp"

namespace ddft::sender {
namespace {

struct Line {
  int64_t moved_ns = 0;
  uint64_t size = 0;
  std::string path;
};

bool take_number(std::string_view* rest, auto* out, char end = ' ') {
  const size_t sp = rest->find(end);
  if (sp == std::string_view::npos) return false;
  const auto [p, ec] = std::from_chars(rest->data(), rest->data() + sp, *out);
  if (ec != std::errc() || p != rest->data() + sp || sp == 0) return false;
  rest->remove_prefix(sp + 1);
  return true;
}

bool parse_line(std::string_view text, Line* out) {
  return take_number(&text, &out->moved_ns) && take_number(&text, &out->size) &&
         common::take_json_string(&text, &out->path) && text.empty() && !out->path.empty() &&
         out->path.find("..") == std::string::npos && out->path.front() != '/';
}

// Index bytes read at a time while pruning.
constexpr size_t kPruneChunk = size_t{1} << 20;

// The index from `offset` on (what pruning has not passed yet), at most `most` bytes.
std::string read_from(const std::string& path, uint64_t offset, size_t most = SIZE_MAX) {
  const common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  if (most == SIZE_MAX) return common::read_whole(fd.get(), static_cast<off_t>(offset));
  std::string text(most, '\0');
  size_t got = 0;
  while (got < most) {
    const ssize_t n =
        ::pread(fd.get(), text.data() + got, most - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

}  // namespace

Retention::Retention(std::string dir, RetentionLimits limits, WallNs wall_ns)
    : dir_(std::move(dir)),
      index_(dir_ + "/" + kRetentionIndex),
      limits_(limits),
      wall_ns_(std::move(wall_ns)) {
  if (!wall_ns_) wall_ns_ = common::wall_clock_ns;
  const common::UniqueFd fd(::open(index_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) {
    throw std::runtime_error(
        fmt::format("the retention index '{}' cannot be opened: {}", index_, std::strerror(errno)));
  }
  const std::string text = common::read_whole(fd.get());
  // The last "X <offset>" mark says where the files not yet removed start.
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    uint64_t head = 0;
    std::string_view mark = std::string_view(text).substr(at, nl - at + 1);
    if (mark.starts_with("X ") && (mark.remove_prefix(2), take_number(&mark, &head, '\n')) &&
        head <= text.size()) {
      head_ = std::max(head_, head);
    }
    at = nl + 1;
  }
  for (size_t at = head_; at < text.size();) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    Line l;
    if (parse_line(std::string_view(text).substr(at, nl - at), &l)) {
      bytes_ += l.size;
      ++files_;
    }
    at = nl + 1;
  }
  end_ = text.size();
}

void Retention::kept(const std::string& path, uint64_t size) {
  const std::string rel = path.starts_with(dir_ + "/") ? path.substr(dir_.size() + 1) : path;
  const std::string line = fmt::format("{} {} {}\n", wall_ns_(), size, common::json_quote(rel));
  std::lock_guard lock(mu_);
  const common::UniqueFd fd(::open(index_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd || !common::write_all(fd.get(), line)) {
    spdlog::error(
        "Error: the retention index '{}' cannot be written: {}; '{}' stays until "
        "removed by hand",
        index_, std::strerror(errno), path);
    return;
  }
  end_ += line.size();
  bytes_ += size;
  ++files_;
}

size_t Retention::prune(bool now_anyway) {
  const int64_t now = wall_ns_();
  std::lock_guard lock(mu_);
  if (!now_anyway && now - last_prune_ns_ < int64_t{60'000'000'000}) return 0;
  last_prune_ns_ = now;
  size_t removed = 0;
  prune_locked(now, &removed);
  if (removed == 0) return 0;
  if (head_ > (uint64_t{1} << 20) && head_ * 2 > end_) {
    compact_locked();
  } else {
    // Where the files still kept start, for the next start-up.
    const std::string mark = fmt::format("X {}\n", head_);
    const common::UniqueFd fd(::open(index_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (fd && common::write_all(fd.get(), mark)) end_ += mark.size();
  }
  return removed;
}

void Retention::prune_locked(int64_t now, size_t* removed) {
  // The index from its oldest kept line on, a chunk at a time: pruning stops at the first file
  // to keep, so it reads about what it removes, not the whole index.
  for (;;) {
    const std::string text = read_from(index_, head_, kPruneChunk);
    size_t at = 0;
    for (size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
      Line l;
      if (parse_line(std::string_view(text).substr(at, nl - at), &l)) {
        if (!remove_oldest(l.moved_ns, l.size, l.path, now)) return;
        ++*removed;
      }
      head_ += nl + 1 - at;
    }
    if (at == 0) return;  // no whole line left
  }
}

bool Retention::remove_oldest(int64_t moved_ns, uint64_t size, const std::string& path,
                              int64_t now) {
  const int64_t age = now - moved_ns;
  const bool too_old =
      limits_.keep_for.count() > 0 && age > std::chrono::nanoseconds(limits_.keep_for).count();
  const bool too_big = limits_.max_bytes > 0 && bytes_ > limits_.max_bytes;
  if (!too_old && !too_big) return false;
  if (!too_old && age < std::chrono::nanoseconds(limits_.protect_for).count()) {
    if (!warned_) {
      warned_ = true;
      spdlog::warn(
          "Warn: the retention folder '{}' holds {} bytes, over --sent-keep-gb, but its oldest "
          "files may still be asked for (their history is still on the wire): kept",
          dir_, bytes_);
    }
    return false;
  }
  const std::string file = dir_ + "/" + path;
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
    spdlog::warn("Warn: the retention folder: cannot remove '{}': {}", file, std::strerror(errno));
  }
  bytes_ -= std::min(bytes_, size);
  if (files_ > 0) --files_;
  return true;
}

void Retention::compact_locked() {
  const std::string rest = read_from(index_, head_);
  if (!common::replace_file_in(dir_, kRetentionIndex, rest)) return;
  head_ = 0;
  end_ = rest.size();
}

uint64_t Retention::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

uint64_t Retention::files() const {
  std::lock_guard lock(mu_);
  return files_;
}

}  // namespace ddft::sender
