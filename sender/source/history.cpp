#include "sender/source/history.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "common/clock.hpp"
#include "common/json.hpp"
#include "sender/source/history_feed.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Creates `dir` (and its parents) when missing, mode 0700. Throws one line.
void make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("the sender's state folder '{}' cannot be made: {}", dir, ec.message()));
  }
  ::chmod(dir.c_str(), 0700);
}

// Takes the space-separated field at the front of `*rest` as a number in `base`.
template <typename T>
bool take_number(std::string_view* rest, int base, T* out) {
  const size_t end = std::min(rest->find(' '), rest->size());
  const auto [p, ec] = std::from_chars(rest->data(), rest->data() + end, *out, base);
  if (ec != std::errc() || p != rest->data() + end || end == 0) return false;
  rest->remove_prefix(end == rest->size() ? end : end + 1);
  return true;
}

bool take_word(std::string_view* rest, std::string_view* out) {
  const size_t end = rest->find(' ');
  if (end == std::string_view::npos || end == 0) return false;
  *out = rest->substr(0, end);
  rest->remove_prefix(end + 1);
  return true;
}

// A lane field: '-' not said, '*' striped, else its number (below kMaxLanes).
bool take_lane(std::string_view* rest, int* out) {
  std::string_view word;
  if (!take_word(rest, &word)) return false;
  if (word == "-" || word == "*") {
    *out = word == "-" ? common::kLaneUnsaid : common::kLaneAll;
    return true;
  }
  int lane = 0;
  const auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), lane);
  if (ec != std::errc() || p != word.data() + word.size() || lane < 0 ||
      lane >= static_cast<int>(common::kMaxLanes)) {
    return false;
  }
  *out = lane;
  return true;
}

// A "W <ns>" line's mark; false when `line` is not one.
bool parse_mark(std::string_view line, int64_t* out) {
  if (line.substr(0, 2) != "W ") return false;
  line.remove_prefix(2);
  return take_number(&line, 10, out) && line.empty();
}

}  // namespace

std::string format_history_entry(const HistoryEntry& e) {
  const common::FileIdentity& f = e.file;
  const std::string lane = e.lane == common::kLaneAll ? "*"
                           : e.lane < 0               ? "-"
                                                      : std::to_string(e.lane);
  return fmt::format("H {:016x} {:016x} {} {} {} {} {} {} {} {}", e.sender_id, f.session, f.file_id,
                     f.size, e.mtime_ns, f.verify_name(), f.digest.empty() ? "-" : f.digest,
                     e.sent_ns, lane, common::json_quote(f.path));
}

bool parse_history_entry(std::string_view line, HistoryEntry* out) {
  HistoryEntry e;
  common::FileIdentity& f = e.file;
  std::string_view verify;
  std::string_view digest;
  if (line.substr(0, 2) != "H ") return false;
  line.remove_prefix(2);
  if (!take_number(&line, 16, &e.sender_id) || !take_number(&line, 16, &f.session) ||
      !take_number(&line, 10, &f.file_id) || !take_number(&line, 10, &f.size) ||
      !take_number(&line, 10, &e.mtime_ns) || !take_word(&line, &verify) ||
      !common::parse_verify_type(verify, &f.verify) || !take_word(&line, &digest) ||
      !take_number(&line, 10, &e.sent_ns) || !take_lane(&line, &e.lane) ||
      !common::take_json_string(&line, &f.path) || !line.empty() || f.path.empty()) {
    return false;
  }
  if (digest != "-") f.digest = std::string(digest);
  *out = std::move(e);
  return true;
}

bool parse_sender_id(std::string_view text, uint64_t* out) {
  uint64_t id = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), id, 16);
  if (text.empty() || text.size() > 16 || ec != std::errc() || p != text.data() + text.size() ||
      id == 0) {
    return false;
  }
  *out = id;
  return true;
}

uint64_t sender_id_in(const std::string& dir, std::optional<uint64_t> wanted) {
  make_dir(dir);
  const std::string path = dir + "/" + kSenderIdFile;
  if (!wanted) {
    common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd) {
      std::string text = common::read_whole(fd.get());
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      uint64_t id = 0;
      if (!parse_sender_id(text, &id)) {
        throw std::runtime_error(fmt::format(
            "the sender id file '{}' holds no id (16 hex digits): remove it to make a new one, "
            "or give --sender-id",
            path));
      }
      return id;
    }
    if (errno != ENOENT) {
      throw std::runtime_error(
          fmt::format("the sender id file '{}' cannot be read: {}", path, errno_text()));
    }
  }
  uint64_t id = wanted.value_or(0);
  if (id == 0) {
    std::random_device rd;
    while (id == 0) id = (uint64_t{rd()} << 32) | rd();
  }
  if (!common::replace_file_in(dir, kSenderIdFile, fmt::format("{:016x}\n", id))) {
    throw std::runtime_error(
        fmt::format("the sender id file '{}' cannot be written: {}", path, errno_text()));
  }
  return id;
}

History::History(const std::string& dir, HistoryLimits limits, WallNs wall_ns)
    : dir_(dir), path_(dir + "/" + kHistoryFile), limits_(limits), wall_ns_(std::move(wall_ns)) {
  if (!wall_ns_) wall_ns_ = common::wall_clock_ns;
  make_dir(dir_);
  common::UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::runtime_error(fmt::format("the sender's history '{}' cannot be opened: {}", path_,
                                         fd ? "not a regular file" : errno_text()));
  }
  // Exclusive while it is read and perhaps rewritten: no other run appends meanwhile.
  if (::flock(fd.get(), LOCK_EX) != 0) {
    throw std::runtime_error(
        fmt::format("the sender's history '{}' cannot be locked: {}", path_, errno_text()));
  }
  const std::string text = common::read_whole(fd.get());
  const int64_t cutoff =
      wall_ns_() - std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.keep_for).count();
  uint64_t bytes = 0;
  std::vector<std::string_view> kept;  // the lines of entries_, as read
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // a half line: the end of a crash
    const std::string_view line = std::string_view(text).substr(start, nl - start + 1);
    start = nl + 1;
    HistoryEntry e;
    int64_t mark = 0;
    if (parse_history_entry(line.substr(0, line.size() - 1), &e) && e.sent_ns >= cutoff) {
      bytes += line.size();
      entries_.push_back(std::move(e));
      kept.push_back(line);
    } else if (parse_mark(line.substr(0, line.size() - 1), &mark)) {
      sent_up_to_ = std::max(sent_up_to_, mark);
    }
  }
  // Past the size bound the oldest go.
  size_t first = 0;
  while (bytes > limits_.max_bytes && first < kept.size()) bytes -= kept[first++].size();
  if (first > 0) {
    spdlog::warn(
        "Warn: the sender's history '{}' is over --history-mb {}: its {} oldest entries were "
        "dropped before their window was over",
        path_, limits_.max_bytes >> 20, first);
    entries_.erase(entries_.begin(), entries_.begin() + static_cast<ptrdiff_t>(first));
  }
  // Rewritten when entries went over the size bound, when a quarter of it (at least 1 MiB) is
  // past its window, marks or damage, and after a crash's half line (the next line appended
  // would join it).
  const uint64_t stale = text.size() - bytes;
  if (first > 0 || stale >= std::max<uint64_t>(uint64_t{1} << 20, text.size() / 4) ||
      (!text.empty() && text.back() != '\n')) {
    std::string rest;
    rest.reserve(bytes + 32);
    for (size_t i = first; i < kept.size(); ++i) rest += kept[i];
    if (sent_up_to_ != 0) rest += fmt::format("W {}\n", sent_up_to_);
    if (!common::replace_file_in(dir_, kHistoryFile, rest)) {
      throw std::runtime_error(
          fmt::format("the sender's history '{}' cannot be rewritten: {}", path_, errno_text()));
    }
  }
  std::lock_guard lock(mu_);
  if (!open_locked()) {
    throw std::runtime_error(
        fmt::format("the sender's history '{}' cannot be opened: {}", path_, errno_text()));
  }
}

bool History::open_locked() {
  fd_.reset(::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
  return static_cast<bool>(fd_);
}

bool History::append(const HistoryEntry& e) { return append_line(format_history_entry(e) + "\n"); }

bool History::mark_sent_up_to(int64_t ns) { return append_line(fmt::format("W {}\n", ns)); }

bool History::append_line(const std::string& line) {
  std::lock_guard lock(mu_);
  // Another run may have rewritten the file since it was opened (under its exclusive lock):
  // the line goes into the file now under the name, never into the one it replaced.
  for (int tries = 0; tries < 3; ++tries) {
    if (!fd_ && !open_locked()) return false;
    if (::flock(fd_.get(), LOCK_SH) != 0) return false;
    struct stat mine {};
    struct stat named {};
    if (::fstat(fd_.get(), &mine) == 0 && ::stat(path_.c_str(), &named) == 0 &&
        mine.st_ino == named.st_ino && mine.st_dev == named.st_dev) {
      const bool ok = common::write_all(fd_.get(), line);
      const int err = errno;
      ::flock(fd_.get(), LOCK_UN);
      errno = err;
      return ok;
    }
    fd_.reset();
  }
  errno = ESTALE;
  return false;
}

bool History::sync() {
  std::lock_guard lock(mu_);
  return fd_ && ::fdatasync(fd_.get()) == 0;
}

HistoryRecorder::HistoryRecorder(History& history, uint64_t sender_id, common::VerifyType verify,
                                 History::WallNs wall_ns)
    : history_(history), sender_id_(sender_id), verify_(verify), wall_ns_(std::move(wall_ns)) {
  if (!wall_ns_) wall_ns_ = common::wall_clock_ns;
  last_mark_ns_ = wall_ns_();  // the first mark a minute on, or at the session's end
}

void HistoryRecorder::file_sent_via(const FileMeta& file, const common::Digest& digest,
                                    int list_lane) {
  // A resend is a copy: the history names the file as first sent, once.
  if (file.resend_of) return;
  HistoryEntry e;
  e.sender_id = sender_id_;
  e.file.session = session_;
  e.file.file_id = file.file_id;
  e.file.path = file.path_on_wire();
  e.file.size = file.size;
  e.file.verify = verify_;
  e.file.digest = digest.hex();
  e.mtime_ns = file.mtime_ns;
  e.sent_ns = wall_ns_();
  e.lane = list_lane;
  if (feed_ != nullptr) feed_->add(e);
  if (!history_.append(e)) {
    if (errors_++ == 0) {
      spdlog::error("Error: the sender's history '{}' cannot be written: {}; {} is not in it",
                    history_.path(), errno_text(), common::json_quote(file.path_on_wire()));
    }
    return;
  }
  mark(false);
  if (sync_each_ || e.sent_ns - last_sync_ns_ >= 1'000'000'000) {
    // Not reported here (the session's last sync is): the line is written, only its durability
    // waits for a later sync.
    (void)history_.sync();
    last_sync_ns_ = e.sent_ns;
  }
}

void HistoryRecorder::idle() { mark(false); }

void HistoryRecorder::mark(bool now_anyway) {
  if (feed_ == nullptr) return;
  const int64_t now = wall_ns_();
  if (!now_anyway && now - last_mark_ns_ < int64_t{60'000'000'000}) return;
  last_mark_ns_ = now;
  // Best effort: a lost mark makes the next run repeat more of the history, never less.
  (void)history_.mark_sent_up_to(feed_->sent_up_to());
}

void HistoryRecorder::session_finished(uint64_t /*session_id*/) {
  mark(true);
  if (!history_.sync()) {
    spdlog::error("Error: the sender's history '{}' cannot be synced: {}", history_.path(),
                  errno_text());
  }
}

}  // namespace ddft::sender
