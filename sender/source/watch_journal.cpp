#include "sender/source/watch_journal.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/hash.hpp"
#include "common/parse_number.hpp"

namespace ddft::sender {
using common::write_all;

namespace {

// The reason of the last failed system call (errno), for *why.
std::string last_error() { return std::strerror(errno); }

uint32_t line_check(std::string_view text) {
  return common::hash_buffer(common::VerifyType::kB2B,
                             {reinterpret_cast<const uint8_t*>(text.data()), text.size()})
      .key32();
}

std::string escape_path(std::string_view p) {
  std::string out;
  for (const char ch : p) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c > '~' || c == '%') {
      out += fmt::format("%{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> unescape_path(std::string_view p) {
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c <= ' ' || c > '~') return std::nullopt;
    if (c != '%') {
      out += p[i];
      continue;
    }
    if (i + 2 >= p.size()) return std::nullopt;
    const int hi = hex_digit(p[i + 1]);
    const int lo = hex_digit(p[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// Syncs the folder holding `path`, so that a rename or a new file in it survives a crash. False,
// with *why set, when it cannot.
[[nodiscard]] bool sync_parent(const std::string& path, std::string* why) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (parent.empty()) parent = ".";
  common::UniqueFd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir || ::fsync(dir.get()) != 0) {
    *why = last_error();
    return false;
  }
  return true;
}

// The text of the journal open as `fd` (at `path`): whole, or, when it does not start with the
// header, cut short. Throws std::runtime_error (one line) when it cannot be read or is not a
// journal.
std::string read_journal_text(int fd, const std::string& path) {
  constexpr std::string_view kHeader = WatchJournal::kHeader;
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = common::read_up_to(fd, buf, sizeof buf);
    if (n < 0) {
      throw std::runtime_error(
          fmt::format("--watch-journal '{}' cannot be read: {}", path, std::strerror(errno)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    // Another file given by mistake is refused before it is read whole.
    if (text.size() >= kHeader.size() + 1 && !text.starts_with(std::string(kHeader) + "\n")) break;
    if (static_cast<size_t>(n) < sizeof buf) break;
  }
  if (!text.empty() && !text.starts_with(std::string(kHeader) + "\n")) {
    throw std::runtime_error(fmt::format(
        "--watch-journal '{}' is not a ddft watch journal (its first line is not '{}'); "
        "refusing to overwrite it",
        path, kHeader));
  }
  return text;
}

// Keeps a copy of a damaged journal's `text` at `kept`, saying so (or that it could not).
void keep_damaged(const std::string& kept, const std::string& text) {
  common::UniqueFd out(::open(kept.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!out || !write_all(out.get(), text)) {
    spdlog::warn("Warn: cannot keep the damaged journal as '{}': {}", kept, std::strerror(errno));
  } else {
    spdlog::warn("Warn: the damaged journal is kept as '{}'", kept);
  }
}

}  // namespace

std::string format_journal_line(char kind, const JournalRecord& r) {
  const std::string body = fmt::format("{} {} {} {} {} {}", kind, r.id.dev, r.id.ino, r.id.size,
                                       r.id.mtime_ns, escape_path(r.rel_path));
  return fmt::format("{} {:08x}\n", body, line_check(body));
}

std::optional<JournalRecord> parse_journal_line(std::string_view line, bool* done,
                                                std::string* why) {
  const size_t last_space = line.rfind(' ');
  uint32_t check = 0;
  if (last_space == std::string_view::npos || line.size() - last_space - 1 != 8 ||
      std::from_chars(line.data() + last_space + 1, line.data() + line.size(), check, 16).ptr !=
          line.data() + line.size()) {
    *why = "no check field";
    return std::nullopt;
  }
  const std::string_view body = line.substr(0, last_space);
  if (line_check(body) != check) {
    *why = "check mismatch";
    return std::nullopt;
  }
  std::vector<std::string_view> f;
  for (size_t pos = 0; pos <= body.size();) {
    const size_t sp = body.find(' ', pos);
    const size_t end = sp == std::string_view::npos ? body.size() : sp;
    f.push_back(body.substr(pos, end - pos));
    pos = end + 1;
  }
  JournalRecord r;
  if (f.size() != 6 || (f[0] != "S" && f[0] != "D")) {
    *why = "not a record";
    return std::nullopt;
  }
  if (!common::parse_whole_number(f[1], &r.id.dev) ||
      !common::parse_whole_number(f[2], &r.id.ino) ||
      !common::parse_whole_number(f[3], &r.id.size) ||
      !common::parse_whole_number(f[4], &r.id.mtime_ns)) {
    *why = "bad number";
    return std::nullopt;
  }
  auto path = unescape_path(f[5]);
  if (!path || path->empty()) {
    *why = "bad path";
    return std::nullopt;
  }
  r.rel_path = std::move(*path);
  *done = f[0] == "D";
  return r;
}

WatchJournal::WatchJournal(std::string path, size_t compact_lines)
    : path_(std::move(path)), compact_lines_(compact_lines) {
  common::UniqueFd in(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) {
    if (errno != ENOENT) {
      throw std::runtime_error(
          fmt::format("--watch-journal '{}' cannot be read: {}", path_, std::strerror(errno)));
    }
    if (std::string why; !compact(&why)) {
      throw std::runtime_error(
          fmt::format("--watch-journal '{}' cannot be created: {}", path_, why));
    }
    return;
  }
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::runtime_error(fmt::format("--watch-journal '{}' is not a regular file", path_));
  }
  const std::string text = read_journal_text(in.get(), path_);
  load(text);
  if (!damaged_.empty()) {
    // Kept for whoever looks into it; the journal itself is rewritten without the damage, so
    // that the next record is not appended to a torn line.
    keep_damaged(path_ + ".damaged", text);
    if (std::string why; !compact(&why)) {
      throw std::runtime_error(
          fmt::format("--watch-journal '{}' cannot be rewritten: {}", path_, why));
    }
    return;
  }
  if (text.empty()) {
    // An empty file (made by the operator): given its header now.
    if (std::string why; !compact(&why)) {
      throw std::runtime_error(
          fmt::format("--watch-journal '{}' cannot be rewritten: {}", path_, why));
    }
    return;
  }
  if (std::string why; !open_for_append(&why)) {
    throw std::runtime_error(fmt::format("--watch-journal '{}' cannot be written: {}", path_, why));
  }
}

void WatchJournal::load(const std::string& text) {
  size_t line_no = 1;
  size_t pos = text.empty() ? 0 : kHeader.size() + 1;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    std::string why;
    bool done = false;
    std::optional<JournalRecord> r;
    if (nl == std::string::npos) {
      why = "cut short (no end of line)";
    } else {
      r = parse_journal_line(std::string_view(text).substr(pos, nl - pos), &done, &why);
    }
    ++lines_;
    if (!r) {
      damaged_.push_back(fmt::format("line {}: {}", line_no, why));
      spdlog::warn(
          "Warn: hot folder journal '{}' line {} is damaged ({}); skipped: a file it "
          "recorded as sent is sent again if it is still there",
          path_, line_no, why);
    } else if (!done) {
      unfinished_[r->rel_path] = r->id;
    } else if (auto it = unfinished_.find(r->rel_path);
               it != unfinished_.end() && it->second == r->id) {
      unfinished_.erase(it);
    }
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
}

std::vector<JournalRecord> WatchJournal::unfinished() const {
  std::vector<JournalRecord> out;
  for (const auto& [p, id] : unfinished_) out.push_back({p, id});
  return out;
}

bool WatchJournal::open_for_append(std::string* why) {
  fd_.reset(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
  if (fd_) return true;
  *why = last_error();
  return false;
}

bool WatchJournal::append(const std::string& line, bool sync, std::string* why) {
  if (!fd_ && !open_for_append(why)) return false;
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) {
    *why = last_error();
    return false;
  }
  if (!write_all(fd_.get(), line)) {
    *why = last_error();
    // A torn line would glue the next record to it: cut the file back to where it was.
    if (::ftruncate(fd_.get(), st.st_size) != 0) fd_.reset();
    return false;
  }
  if (sync && ::fdatasync(fd_.get()) != 0) {
    *why = last_error();
    return false;
  }
  ++lines_;
  return true;
}

bool WatchJournal::record_sent(const JournalRecord& r, std::string* why) {
  if (!append(format_journal_line('S', r), /*sync=*/true, why)) return false;
  unfinished_[r.rel_path] = r.id;
  return true;
}

bool WatchJournal::record_done(const JournalRecord& r, std::string* why) {
  if (auto it = unfinished_.find(r.rel_path); it != unfinished_.end() && it->second == r.id) {
    unfinished_.erase(it);
  }
  if (!append(format_journal_line('D', r), /*sync=*/false, why)) return false;
  if (lines_ >= compact_lines_) return compact(why);
  return true;
}

void WatchJournal::forget(const std::string& rel_path) { unfinished_.erase(rel_path); }

bool WatchJournal::compact(std::string* why) {
  const std::string tmp = path_ + ".tmp";
  {
    common::UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!out) {
      *why = last_error();
      return false;
    }
    std::string text = std::string(kHeader) + "\n";
    for (const auto& [p, id] : unfinished_) text += format_journal_line('S', {p, id});
    if (!write_all(out.get(), text) || ::fsync(out.get()) != 0) {
      *why = last_error();
      ::unlink(tmp.c_str());
      return false;
    }
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    *why = last_error();
    ::unlink(tmp.c_str());
    return false;
  }
  // The old file is gone from its name now: append to the new one even if the folder's sync
  // failed, or later records would go to an unlinked file.
  std::string sync_why;
  const bool synced = sync_parent(path_, &sync_why);
  lines_ = unfinished_.size();
  if (!open_for_append(why)) return false;
  if (!synced) *why = std::move(sync_why);
  return synced;
}

}  // namespace ddft::sender
