#include "receiver/delivery/outcome_log.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "common/clock.hpp"
#include "common/json.hpp"

namespace ddft::receiver {

namespace {
// A time mark goes before the first line of each minute.
constexpr int64_t kMarkEveryNs = int64_t{60} * 1'000'000'000;
// "T <ns>\n" at most.
constexpr uint64_t kMaxMarkLine = 2 + 20 + 1;
// The journal is not compacted below this size.
constexpr uint64_t kCompactAtLeast = uint64_t{1} << 20;
}  // namespace

std::string format_outcome(const Outcome& o) {
  const common::FileIdentity& f = o.file;
  std::string line = fmt::format("{} {:016x} {} {} {} {} {}", static_cast<char>(o.kind), f.session,
                                 f.file_id, f.size, f.verify_name(),
                                 f.digest.empty() ? "-" : f.digest, common::json_quote(f.path));
  if (o.kind == Outcome::Kind::kFailed || o.kind == Outcome::Kind::kResolved) {
    line += fmt::format(" {} {} {}", common::json_quote(o.record), common::json_quote(o.reason),
                        o.received);
  }
  if (o.kind == Outcome::Kind::kPassed && o.repairs) {
    line += fmt::format(" {} {}", o.repairs->fec_rebuilt, o.repairs->repeat_filled);
  }
  return line + "\n";
}

namespace {

// Takes " <decimal> <decimal>" (a P line's repairs), the whole of `rest`.
bool take_counts(std::string_view* rest, FileRepairs* out) {
  uint64_t v[2] = {0, 0};
  for (uint64_t& n : v) {
    if (rest->size() < 2 || rest->front() != ' ') return false;
    rest->remove_prefix(1);
    const size_t digits = std::min(rest->find(' '), rest->size());
    if (digits == 0 || digits > 20) return false;
    const std::string text(rest->substr(0, digits));
    char* end = nullptr;
    errno = 0;
    n = std::strtoull(text.c_str(), &end, 10);
    if (*end != '\0' || text.front() < '0' || text.front() > '9' || errno == ERANGE) return false;
    rest->remove_prefix(digits);
  }
  if (!rest->empty()) return false;
  out->fec_rebuilt = v[0];
  out->repeat_filled = v[1];
  return true;
}

}  // namespace

bool parse_outcome(std::string_view line, Outcome* out) {
  // Six space-separated fields, then the quoted path (which may hold spaces).
  std::string_view fields[6];
  for (auto& f : fields) {
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return false;
    f = line.substr(0, sp);
    line.remove_prefix(sp + 1);
  }
  Outcome o;
  if (fields[0].size() != 1) return false;
  switch (fields[0][0]) {
    case 'C':
      o.kind = Outcome::Kind::kCommitting;
      break;
    case 'P':
      o.kind = Outcome::Kind::kPassed;
      break;
    case 'F':
      o.kind = Outcome::Kind::kFailed;
      break;
    case 'L':
      o.kind = Outcome::Kind::kLogged;
      break;
    case 'R':
      o.kind = Outcome::Kind::kResolved;
      break;
    default:
      return false;
  }
  const std::string session(fields[1]), id(fields[2]), size(fields[3]);
  char* end = nullptr;
  common::FileIdentity& f = o.file;
  f.session = std::strtoull(session.c_str(), &end, 16);
  if (session.size() != 16 || *end != '\0') return false;
  f.file_id = static_cast<uint32_t>(std::strtoul(id.c_str(), &end, 10));
  if (id.empty() || *end != '\0') return false;
  f.size = std::strtoull(size.c_str(), &end, 10);
  if (size.empty() || *end != '\0') return false;
  if (!common::parse_verify_type(fields[4], &f.verify)) return false;
  f.digest = fields[5] == "-" ? "" : std::string(fields[5]);
  if (!common::take_json_string(&line, &f.path)) return false;
  if (o.kind == Outcome::Kind::kFailed || o.kind == Outcome::Kind::kResolved) {
    if (line.size() < 2 || line.front() != ' ') return false;
    line.remove_prefix(1);
    if (!common::take_json_string(&line, &o.record) || line.empty() || line.front() != ' ')
      return false;
    line.remove_prefix(1);
    if (!common::take_json_string(&line, &o.reason) || line.size() < 2 || line.front() != ' ')
      return false;
    const std::string received(line.substr(1));
    o.received = std::strtoull(received.c_str(), &end, 10);
    if (received.empty() || *end != '\0' || received.front() == '-') return false;
    line = {};
  }
  if (o.kind == Outcome::Kind::kPassed && !line.empty()) {
    FileRepairs r;
    if (!take_counts(&line, &r)) return false;
    o.repairs = r;
  }
  if (!line.empty()) return false;
  *out = std::move(o);
  return true;
}

OutcomeLog::OutcomeLog(int state_fd, JournalLimits limits, std::function<int64_t()> wall_ns)
    : state_fd_(state_fd), limits_(limits), wall_ns_(std::move(wall_ns)) {
  if (!wall_ns_) wall_ns_ = common::wall_clock_ns;
  common::UniqueFd fd = open_journal(O_RDWR | O_CREAT);
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::runtime_error(
        fmt::format("the receiver's journal ('{}' in its state folder) cannot "
                    "be opened: {}",
                    kJournalName, fd ? "not a regular file" : std::strerror(errno)));
  }
  compacted_size_ = static_cast<uint64_t>(st.st_size);
}

// Opened for each use, never held: a descriptor open for writing would keep an operator from
// remounting the file system read-only while the receiver runs.
common::UniqueFd OutcomeLog::open_journal(int flags) const {
  return common::UniqueFd(
      ::openat(state_fd_, kJournalName, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
}

std::vector<Outcome> OutcomeLog::read_all() const {
  std::lock_guard lock(mu_);
  return read_locked();
}

std::string OutcomeLog::read_text_locked() const {
  const common::UniqueFd fd = open_journal(O_RDONLY);
  return fd ? common::read_whole(fd.get()) : std::string();
}

std::vector<Outcome> OutcomeLog::read_locked() const {
  std::vector<Outcome> out;
  const std::string text = read_text_locked();
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // a half line: the end of a crash
    Outcome o;
    if (parse_outcome(std::string_view(text).substr(start, nl - start), &o)) {
      out.push_back(std::move(o));
    }
    start = nl + 1;
  }
  return out;
}

bool OutcomeLog::append(const Outcome& o) {
  std::string line = format_outcome(o);
  std::lock_guard lock(mu_);
  const int64_t now = wall_ns_();
  const bool mark = now - last_mark_ns_ >= kMarkEveryNs;
  if (mark) line.insert(0, fmt::format("T {}\n", now));
  const common::UniqueFd fd = open_journal(O_RDWR | O_APPEND);
  if (!fd) return false;
  // A half line a crash left at the end would swallow this one: end it first.
  struct stat st {};
  char last = '\n';
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0 &&
      ::pread(fd.get(), &last, 1, st.st_size - 1) == 1 && last != '\n') {
    line.insert(line.begin(), '\n');
  }
  if (!common::write_all(fd.get(), line)) return false;
  if (mark) last_mark_ns_ = now;
  const uint64_t size = static_cast<uint64_t>(st.st_size) + line.size();
  // A failed compaction leaves the journal as it was (whole): the next append tries again.
  if (size > std::max(2 * compacted_size_, kCompactAtLeast)) (void)compact_locked();
  return true;
}

bool OutcomeLog::compact() {
  std::lock_guard lock(mu_);
  return compact_locked();
}

namespace {
// "K <session hex> <file id> ...": the file a journal line is about; false for a line that is
// not an outcome (a time mark, a damaged line).
bool line_key(std::string_view line, std::pair<uint64_t, uint32_t>* key) {
  if (line.size() < 21 || line[1] != ' ' || line[18] != ' ' ||
      std::string_view("CPFL").find(line[0]) == std::string_view::npos) {
    return false;
  }
  const char* end = line.data() + line.size();
  auto [p, ec] = std::from_chars(line.data() + 2, line.data() + 18, key->first, 16);
  if (ec != std::errc() || p != line.data() + 18) return false;
  auto [q, ec2] = std::from_chars(line.data() + 19, end, key->second, 10);
  return ec2 == std::errc() && q < end && *q == ' ';
}

// A time mark "T <ns>": its time.
bool line_mark(std::string_view line, int64_t* ns) {
  if (line.size() < 3 || line[0] != 'T' || line[1] != ' ') return false;
  auto [p, ec] = std::from_chars(line.data() + 2, line.data() + line.size(), *ns);
  return ec == std::errc() && p == line.data() + line.size();
}

struct PairHash {
  size_t operator()(const std::pair<uint64_t, uint32_t>& k) const {
    return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
  }
};

// A journal line within the window, and the time its mark gives it.
struct JournalLine {
  std::string_view text;
  int64_t time;
};

// The outcome lines of `text` written at `cutoff` or later (lines before any mark, an older
// receiver's, are taken as written at `now`), and which of them the start-up reads: of each
// file its last line, and its last F line with the first L line after it (recover_at_start()).
std::vector<JournalLine> needed_lines(const std::string& text, int64_t now, int64_t cutoff,
                                      std::vector<bool>* keep) {
  struct Needed {
    size_t last = SIZE_MAX;
    size_t last_f = SIZE_MAX;
    size_t logged = SIZE_MAX;
  };
  std::vector<JournalLine> lines;
  std::unordered_map<std::pair<uint64_t, uint32_t>, Needed, PairHash> needed;
  int64_t time = now;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;  // a half line: the end of a crash
    const std::string_view line = std::string_view(text).substr(start, nl - start);
    start = nl + 1;
    std::pair<uint64_t, uint32_t> key;
    if (line_mark(line, &time) || !line_key(line, &key) || time < cutoff) continue;
    Needed& n = needed[key];
    n.last = lines.size();
    if (line[0] == 'F') {
      n.last_f = lines.size();
      n.logged = SIZE_MAX;
    } else if (line[0] == 'L' && n.last_f != SIZE_MAX && n.logged == SIZE_MAX) {
      n.logged = lines.size();
    }
    lines.push_back({line, time});
  }
  keep->assign(lines.size(), false);
  for (const auto& [key, n] : needed) {
    for (const size_t i : {n.last, n.last_f, n.logged}) {
      if (i != SIZE_MAX) (*keep)[i] = true;
    }
  }
  return lines;
}

// Drops the oldest kept lines until they and their time marks fit `max_bytes`; logs how many.
void bound_lines(const std::vector<JournalLine>& lines, uint64_t max_bytes,
                 std::vector<bool>* keep) {
  uint64_t bytes = 0;
  int64_t last_time = INT64_MIN;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!(*keep)[i]) continue;
    bytes += lines[i].text.size() + 1;
    // Room for a mark before each run of lines of one time (dropping lines only removes marks).
    if (lines[i].time != last_time) bytes += kMaxMarkLine;
    last_time = lines[i].time;
  }
  size_t dropped = 0;
  int64_t dropped_until = 0;
  for (size_t i = 0; i < lines.size() && bytes > max_bytes; ++i) {
    if (!(*keep)[i]) continue;
    (*keep)[i] = false;
    bytes -= lines[i].text.size() + 1;
    ++dropped;
    dropped_until = lines[i].time;
  }
  if (dropped == 0) return;
  spdlog::warn(
      "Warn: the receiver's journal is over --journal-mb {}: its {} oldest line(s), written "
      "before {}, were dropped; a file they named that the sender lists or repeats again may be "
      "named again",
      max_bytes >> 20, dropped,
      common::iso8601_local(std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::nanoseconds(dropped_until)))));
}
}  // namespace

bool OutcomeLog::compact_locked() {
  const std::string text = read_text_locked();
  const int64_t now = wall_ns_();
  const int64_t cutoff =
      now - std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.keep_for).count();
  std::vector<bool> keep;
  const std::vector<JournalLine> lines = needed_lines(text, now, cutoff, &keep);
  bound_lines(lines, limits_.max_bytes, &keep);
  std::string out;
  int64_t mark = INT64_MIN;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!keep[i]) continue;
    if (lines[i].time != mark) {
      mark = lines[i].time;
      out += fmt::format("T {}\n", mark);
    }
    out.append(lines[i].text);
    out += '\n';
  }
  // Nothing to drop (a start-up after a compaction): the journal stays as it is.
  if (out != text && !replace_locked(out)) return false;
  compacted_size_ = out.size();
  last_mark_ns_ = mark == INT64_MIN ? 0 : mark;
  return true;
}

bool OutcomeLog::rewrite(const std::vector<Outcome>& keep) {
  std::lock_guard lock(mu_);
  return rewrite_locked(keep);
}

bool OutcomeLog::rewrite_locked(const std::vector<Outcome>& keep) {
  std::string text;
  for (const Outcome& o : keep) text += format_outcome(o);
  return replace_locked(text);
}

bool OutcomeLog::replace_locked(const std::string& text) {
  // A power cut leaves the old journal or the whole new one, never an empty one.
  return common::replace_file_at(state_fd_, kJournalName, text);
}

}  // namespace ddft::receiver
