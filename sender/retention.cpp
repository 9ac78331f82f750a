#include "sender/retention.hpp"

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

std::string read_from(const std::string& path, uint64_t offset) {
  const common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::string all = common::read_whole(fd.get());
  return offset >= all.size() ? std::string() : all.substr(offset);
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

bool Retention::prune_locked(int64_t now, size_t* removed) {
  const int64_t keep_ns = std::chrono::nanoseconds(limits_.keep_for).count();
  const int64_t protect_ns = std::chrono::nanoseconds(limits_.protect_for).count();
  const std::string text = read_from(index_, head_);
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;
    Line l;
    const bool ok = parse_line(std::string_view(text).substr(at, nl - at), &l);
    if (ok) {
      const int64_t age = now - l.moved_ns;
      const bool too_old = keep_ns > 0 && age > keep_ns;
      const bool too_big = limits_.max_bytes > 0 && bytes_ > limits_.max_bytes;
      if (!too_old && !too_big) break;
      if (!too_old && age < protect_ns) {
        if (!warned_) {
          warned_ = true;
          spdlog::warn(
              "Warn: the retention folder '{}' holds {} bytes, over --sent-keep-gb, but its "
              "oldest files may still be asked for (their history is still on the wire): kept",
              dir_, bytes_);
        }
        break;
      }
      const std::string file = dir_ + "/" + l.path;
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        spdlog::warn("Warn: the retention folder: cannot remove '{}': {}", file,
                     std::strerror(errno));
      }
      bytes_ -= std::min(bytes_, l.size);
      if (files_ > 0) --files_;
      ++*removed;
    }
    head_ += nl + 1 - at;
    at = nl + 1;
  }
  return true;
}

void Retention::compact_locked() {
  const std::string rest = read_from(index_, head_);
  const size_t slash = index_.rfind('/');
  const common::UniqueFd d(
      ::open(index_.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d || !common::replace_file_at(d.get(), index_.substr(slash + 1), rest)) return;
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
