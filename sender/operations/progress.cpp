#include "sender/operations/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/log_format.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {
namespace {

using Glyphs = std::vector<std::string>;  // one entry per terminal column

// Splits `s` into what each column shows: a valid UTF-8 sequence, or '?' for a control byte or
// a byte that is not UTF-8. Wide (East Asian) characters are counted as one column; a line that
// is then too long is cut by the terminal, never wrapped (autowrap is off while drawing).
Glyphs to_glyphs(std::string_view s) {
  Glyphs out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 1 && (c < 0x20 || c == 0x7F)) len = 0;
    if (len > 1 && i + len <= s.size()) {
      for (size_t k = 1; k < len; ++k) {
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) len = 0;
      }
    } else if (len > 1) {
      len = 0;
    }
    if (len == 0) {
      out.emplace_back("?");
      ++i;
    } else {
      out.emplace_back(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

// `g` in at most `cols` columns: whole, or its end after "..." (the end of a path says most).
std::string fit_left(const Glyphs& g, size_t cols) {
  std::string out;
  if (g.size() <= cols) {
    for (const auto& s : g) out += s;
    return out;
  }
  if (cols <= 3) return std::string(cols, '.');
  out = "...";
  for (size_t i = g.size() - (cols - 3); i < g.size(); ++i) out += g[i];
  return out;
}

constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};

// The unit (power of 1024, as the logs' MB) in which `n` reads best.
int unit_of(uint64_t n) {
  int u = 0;
  while (u < 5 && n >= (uint64_t{1024} << (10 * u))) ++u;
  return u;
}

std::string in_unit(uint64_t n, int u) {
  if (u == 0) return std::to_string(n);
  return fmt::format("{:.1f}",
                     static_cast<double>(n) / static_cast<double>(uint64_t{1} << (10 * u)));
}

// "1.5 GB"
std::string format_bytes(uint64_t n) {
  const int u = unit_of(n);
  return in_unit(n, u) + " " + kUnits[u];
}

// " 3.0/40.0 MB": both in the total's unit, the done part padded to the total's width so that
// the line does not shift as it grows.
std::string format_pair(uint64_t done, uint64_t total) {
  const int u = unit_of(total);
  const std::string t = in_unit(total, u);
  return fmt::format("{:>{}}/{} {}", in_unit(done, u), t.size(), t, kUnits[u]);
}

std::string format_percent(uint64_t done, uint64_t total) {
  const double p =
      total == 0 ? 100.0
                 : 100.0 * static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  return fmt::format("{:5.1f}%", p);
}

std::string format_eta(uint64_t remaining, double rate_mb) {
  if (remaining == 0) return "ETA 00:00:00";
  if (rate_mb <= 0) return "ETA --:--:--";
  const double s = static_cast<double>(remaining) / (rate_mb * 1024.0 * 1024.0);
  if (s >= 100.0 * 3600.0) return "ETA >99 h";
  return "ETA " + common::format_hms(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(s)));
}

std::string format_rate(double rate_mb) { return fmt::format("{:6.2f} MB/s", rate_mb); }

// One field after the label; the lower its rank, the sooner it goes as the terminal narrows.
struct Field {
  std::string text;
  int rank;
};

constexpr size_t kMinBar = 10;  // inner columns below which no bar is drawn
constexpr size_t kMaxBar = 30;
constexpr size_t kMinLabel = 16;  // the label shrinks to this before stats are dropped
constexpr const char* kSep = "  ";
constexpr auto kRateWindow = std::chrono::seconds(5);  // the batch rate's

size_t width_of(const std::vector<Field>& fields) {
  size_t n = 0;
  for (const auto& f : fields) n += to_glyphs(f.text).size() + 2;
  return n;  // each with its separator before it
}

// One line laid out: label [bar]  field  field ...
struct Layout {
  const Glyphs* label;
  std::optional<double> fraction;  // nothing: no bar
  std::vector<Field> fields;
  size_t room = 0;  // columns left for the label and the bar
};

// Drops fields, lowest rank first, until the label fits at its minimum in `avail` columns.
void fit(Layout& l, size_t avail) {
  const size_t min_label = std::min(l.label->size(), kMinLabel);
  while (!l.fields.empty() && min_label + width_of(l.fields) > avail) {
    auto lowest = std::min_element(l.fields.begin(), l.fields.end(),
                                   [](const Field& a, const Field& b) { return a.rank < b.rank; });
    if (lowest->rank == INT32_MAX) break;  // never dropped: the line is cut at the end instead
    l.fields.erase(lowest);
  }
  const size_t stats = width_of(l.fields);
  l.room = avail > stats ? avail - stats : 0;
}

// The line of `l` with a bar of `bar` inner columns (0: none) in at most `avail` columns.
std::string compose(const Layout& l, size_t label_cols, size_t bar, size_t avail) {
  std::string line;
  if (bar > 0) {
    line = fit_left(*l.label, label_cols);
    line.append(label_cols - std::min(label_cols, l.label->size()), ' ');
    const auto full =
        static_cast<size_t>(std::clamp(*l.fraction, 0.0, 1.0) * static_cast<double>(bar));
    line += " [" + std::string(full, '#') + std::string(bar - full, '-') + "]";
  } else {
    const size_t stats = width_of(l.fields);
    line = fit_left(*l.label, avail > stats ? avail - stats : 0);
  }
  for (const auto& f : l.fields) line += kSep + f.text;
  // Still too long (a terminal a few columns wide): cut, on a character boundary.
  const Glyphs g = to_glyphs(line);
  if (g.size() > avail) {
    line.clear();
    for (size_t i = 0; i < avail; ++i) line += g[i];
  }
  return line;
}

}  // namespace

bool progress_wanted(ProgressMode mode, bool quiet, bool stdout_is_terminal) {
  switch (mode) {
    case ProgressMode::kOn:
      return true;
    case ProgressMode::kOff:
      return false;
    case ProgressMode::kAuto:
      break;
  }
  return stdout_is_terminal && !quiet;
}

bool stdout_is_terminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) == 1 && !(term != nullptr && std::string_view(term) == "dumb");
}

std::vector<std::string> render_progress(const ProgressView& v, size_t width) {
  const size_t avail = width > 1 ? width - 1 : 0;
  constexpr int kKeep = INT32_MAX;

  std::string batch_label = fmt::format("total {}", v.files_done);
  if (v.files_total) batch_label += fmt::format("/{}", *v.files_total);
  batch_label += " files";
  if (v.files_failed > 0) batch_label += fmt::format(", {} failed", v.files_failed);
  const Glyphs batch_glyphs = to_glyphs(batch_label);
  const Glyphs file_glyphs = to_glyphs(v.file_name);

  std::vector<Layout> layouts;
  if (v.has_file) {
    const double fraction =
        v.file_total == 0 ? 1.0
                          : static_cast<double>(v.file_done) / static_cast<double>(v.file_total);
    const uint64_t left = v.file_total - std::min(v.file_done, v.file_total);
    layouts.push_back({&file_glyphs,
                       fraction,
                       {{format_percent(v.file_done, v.file_total), kKeep},
                        {format_pair(v.file_done, v.file_total), 1},
                        {format_rate(v.file_rate), 2},
                        {format_eta(left, v.file_rate), 3}}});
  }
  if (v.batch_total) {
    const uint64_t total = *v.batch_total;
    const uint64_t done = std::min(v.batch_done, total);
    const double fraction =
        total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
    layouts.push_back({&batch_glyphs,
                       fraction,
                       {{format_percent(done, total), kKeep},
                        {format_pair(done, total), 1},
                        {format_rate(v.batch_rate), 2},
                        {format_eta(total - done, v.batch_rate), 3}}});
  } else {
    std::vector<Field> fields = {{format_bytes(v.batch_done) + " sent", kKeep},
                                 {format_rate(v.batch_rate), 2}};
    if (v.backlog) {
      fields.push_back(
          {fmt::format("queued {} files, {}", v.backlog->files, format_bytes(v.backlog->bytes)),
           1});
    }
    layouts.push_back({&batch_glyphs, std::nullopt, std::move(fields)});
  }

  // The lines with a bar share the label's width and the bar's, so that their bars line up. A
  // long name is shortened (to kMinLabel at most) rather than lose the bar.
  size_t label_cols = 0;
  size_t room = SIZE_MAX;
  for (auto& l : layouts) {
    fit(l, avail);
    if (!l.fraction) continue;
    label_cols = std::max(label_cols, l.label->size());
    room = std::min(room, l.room);
  }
  size_t bar = 0;
  if (room != SIZE_MAX && room >= kMinLabel + 3 + kMinBar) {
    label_cols = std::min(label_cols, room - 3 - kMinBar);
    bar = room >= label_cols + 3 + kMinBar ? std::min(kMaxBar, room - label_cols - 3) : 0;
  }
  std::vector<std::string> lines;
  for (const auto& l : layouts) {
    lines.push_back(compose(l, label_cols, l.fraction ? bar : 0, avail));
  }
  return lines;
}

ProgressDisplay::ProgressDisplay(common::Console& console, common::Clock& clock,
                                 ProgressOptions options)
    : console_(console), clock_(clock), options_(std::move(options)) {
  if (options_.copies == 0) options_.copies = 1;
  if (options_.planned) {
    for (uint64_t s : *options_.planned) planned_total_ += s * options_.copies;
  }
  console_.set_overlay(this);
}

ProgressDisplay::~ProgressDisplay() {
  // Erase first, then detach: a log line between the two finds nothing shown and stays whole.
  console_.locked([&](std::FILE* out) { hide(out); });
  console_.set_overlay(nullptr);
}

size_t ProgressDisplay::columns() const {
  if (options_.columns) return options_.columns();
  struct winsize ws {};
  if (::ioctl(::fileno(console_.file()), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    const long n = std::strtol(c, nullptr, 10);
    if (n > 0 && n < 10000) return static_cast<size_t>(n);
  }
  return 80;
}

ProgressView ProgressDisplay::view() const {
  const auto now = clock_.now();
  ProgressView v;
  if (current_) {
    v.has_file = true;
    v.file_name = current_->name;
    v.file_done = current_->sent;
    v.file_total = current_->total;
    v.file_rate = common::mib_per_s(current_->sent, now - current_->started);
  }
  v.files_done = files_done_;
  v.files_failed = files_failed_;
  if (options_.planned) {
    v.files_total = options_.planned->size();
    v.batch_total = planned_total_;
    const uint64_t in_file = current_ ? std::min(current_->sent, current_->planned) : 0;
    v.batch_done = std::min(planned_total_, planned_done_ + in_file);
  } else {
    v.batch_done = bytes_sent_;
    for (const FileSource* source : options_.sources) {
      if (const std::optional<Backlog> b = source->backlog()) {
        if (!v.backlog) v.backlog.emplace();
        v.backlog->files += b->files;
        v.backlog->bytes += b->bytes;
      }
    }
  }
  // The batch rate since the last sample at or before the window's start (the session's start
  // while it is younger), so that it follows changes and falls to 0 while a hot folder waits.
  if (!samples_.empty()) {
    const Sample* from = &samples_.front();
    for (const Sample& x : samples_) {
      if (x.at > now - kRateWindow) break;
      from = &x;
    }
    if (now > from->at) v.batch_rate = common::mib_per_s(bytes_sent_ - from->bytes, now - from->at);
  }
  return v;
}

void ProgressDisplay::session_started(uint64_t /*session_id*/) {
  running_ = true;
  const auto now = clock_.now();
  samples_.push_back({now, 0});
  redraw(now);
}

void ProgressDisplay::file_started(const FileMeta& file) {
  Current c;
  c.file_id = file.file_id;
  c.name = file.path_on_wire();
  c.total = file.size * options_.copies;
  c.started = clock_.now();
  if (options_.planned && files_done_ < options_.planned->size()) {
    c.planned = (*options_.planned)[files_done_] * options_.copies;
  }
  in_flight_[file.file_id].started = c.started;
  current_ = std::move(c);
  maybe_draw();
}

void ProgressDisplay::file_progress(const FileMeta& file, uint64_t sent) {
  // With lanes or channels several files are sent at once: each one's bytes count for the batch,
  // the file line shows the one started last, and once it is done the next one still going.
  InFlight& f = in_flight_[file.file_id];
  if (sent > f.sent) bytes_sent_ += sent - f.sent;
  f.sent = sent;
  if (!current_) {
    Current c;
    c.file_id = file.file_id;
    c.name = file.path_on_wire();
    c.total = file.size * options_.copies;
    c.planned = c.total;
    c.started = f.started;
    current_ = std::move(c);
  }
  if (current_->file_id == file.file_id) current_->sent = sent;
  maybe_draw();
}

void ProgressDisplay::file_sent(const FileMeta& file, const common::Digest& /*digest*/) {
  file_done(file, false);
}

void ProgressDisplay::file_failed(const FileMeta& file, const std::string& /*reason*/) {
  file_done(file, true);
}

void ProgressDisplay::file_done(const FileMeta& file, bool failed) {
  // A file that never got an id (it could not be opened) was never current.
  if (current_ && file.file_id != 0 && current_->file_id == file.file_id) current_.reset();
  in_flight_.erase(file.file_id);
  if (options_.planned && files_done_ < options_.planned->size()) {
    planned_done_ += (*options_.planned)[files_done_] * options_.copies;
  }
  ++files_done_;
  if (failed) ++files_failed_;
  maybe_draw();
}

void ProgressDisplay::idle() { maybe_draw(); }

void ProgressDisplay::session_finished(uint64_t /*session_id*/) {
  running_ = false;
  console_.locked([&](std::FILE* out) { hide(out); });
}

void ProgressDisplay::maybe_draw() {
  if (!running_) return;
  const auto now = clock_.now();
  if (now < next_draw_) return;
  redraw(now);
}

void ProgressDisplay::redraw(common::Clock::time_point now) {
  next_draw_ = now + options_.interval;
  samples_.push_back({now, bytes_sent_});
  // Keep one sample at or before the window's start, so the rate spans the whole window.
  while (samples_.size() > 2 && samples_[1].at <= now - kRateWindow) samples_.pop_front();
  const std::vector<std::string> lines = render_progress(view(), columns());
  // Autowrap off while drawing: a line the terminal shows wider than we counted is cut, not
  // wrapped onto a row that erase() would not know about.
  std::string text = "\x1b[?7l";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) text += "\r\n";
    text += lines[i];
  }
  text += "\x1b[?7h";
  console_.locked([&](std::FILE* out) {
    erase(out);
    shown_ = std::move(text);
    shown_lines_ = lines.size();
    draw(out);
    std::fflush(out);
  });
}

void ProgressDisplay::hide(std::FILE* out) {
  erase(out);
  shown_.clear();
  shown_lines_ = 0;
  std::fflush(out);
}

void ProgressDisplay::erase(std::FILE* out) {
  if (shown_lines_ == 0) return;
  // To the start of the display's first row, clearing each of its rows on the way up.
  std::string seq = "\r\x1b[K";
  for (size_t i = 1; i < shown_lines_; ++i) seq += "\x1b[A\x1b[K";
  std::fwrite(seq.data(), 1, seq.size(), out);
}

void ProgressDisplay::draw(std::FILE* out) { std::fwrite(shown_.data(), 1, shown_.size(), out); }

}  // namespace ddft::sender
