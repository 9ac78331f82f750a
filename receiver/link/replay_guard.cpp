#include "receiver/link/replay_guard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <utility>

namespace ddft::receiver {
namespace {

constexpr std::string_view kMagic = "ddft-session-state v1";

template <size_t N>
bool parse_hex(std::string_view text, std::array<uint8_t, N>* out) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    unsigned v = 0;
    const auto r = std::from_chars(text.data() + 2 * i, text.data() + 2 * i + 2, v, 16);
    if (r.ec != std::errc() || r.ptr != text.data() + 2 * i + 2) return false;
    (*out)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

// The value of "name=" among the space-separated fields of `text`.
std::optional<std::string_view> field(std::string_view text, std::string_view name) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view f = text.substr(pos, end - pos);
    if (f.size() > name.size() && f.starts_with(name) && f[name.size()] == '=') {
      return f.substr(name.size() + 1);
    }
    pos = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::string format_session_marks(const std::vector<SessionMark>& marks) {
  std::string out;
  for (const SessionMark& m : marks) {
    out += fmt::format("{} salt={:02x} session={:016x} max_seq={}{}\n", kMagic,
                       fmt::join(m.salt, ""), m.session_id, m.max_seq,
                       m.named ? fmt::format(" sender={:016x}", m.sender_id) : "");
  }
  return out;
}

namespace {

std::optional<SessionMark> parse_line(std::string_view text) {
  while (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  SessionMark m;
  const auto salt = field(text, "salt");
  const auto session = field(text, "session");
  const auto max_seq = field(text, "max_seq");
  const auto sender = field(text, "sender");
  auto number = [](std::string_view t, int base, uint64_t* v) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), *v, base);
    return r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  if (!text.starts_with(kMagic) || !salt || !session || !max_seq || !parse_hex(*salt, &m.salt) ||
      !number(*session, 16, &m.session_id) || !number(*max_seq, 10, &m.max_seq) ||
      (sender && !number(*sender, 16, &m.sender_id))) {
    return std::nullopt;
  }
  m.named = sender.has_value();
  return m;
}

}  // namespace

std::optional<std::vector<SessionMark>> parse_session_marks(std::string_view text,
                                                            std::string* why) {
  std::vector<SessionMark> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_no;
    if (line.empty()) continue;
    auto m = parse_line(line);
    if (!m) {
      *why = fmt::format("line {} is not a ddft session state line", line_no);
      return std::nullopt;
    }
    out.push_back(*m);
  }
  if (out.empty()) {
    *why = "not a ddft session state line";
    return std::nullopt;
  }
  return out;
}

ReplayGuard::ReplayGuard(const std::vector<SessionMark>& restored) {
  for (const SessionMark& m : restored) {
    Entry& e = add(m);
    e.floor = m.max_seq;
    e.have_floor = true;
  }
  changed_ = false;
}

ReplayGuard::~ReplayGuard() = default;

bool ReplayGuard::take_changed() { return std::exchange(changed_, false); }

ReplayGuard::Entry* ReplayGuard::find(const common::Salt& salt, uint64_t session_id) {
  for (Entry& e : entries_) {
    if (e.mark.session_id == session_id && e.mark.salt == salt) return &e;
  }
  return nullptr;
}

uint64_t ReplayGuard::newest_start() const {
  uint64_t newest = 0;
  for (const Entry& e : entries_) newest = std::max(newest, e.mark.start_ns());
  return newest;
}

ReplayGuard::Entry& ReplayGuard::add(const SessionMark& m) {
  if (entries_.size() >= kMarksKept) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.used < b.used; });
    entries_.erase(oldest);
  }
  entries_.emplace_back();
  Entry& e = entries_.back();
  e.mark = m;
  e.used = ++checks_;
  changed_ = true;
  return e;
}

std::vector<SessionMark> ReplayGuard::marks() const {
  std::vector<SessionMark> out;
  for (const Entry& e : entries_) out.push_back(e.mark);
  std::sort(out.begin(), out.end(),
            [](const SessionMark& a, const SessionMark& b) { return a.start_ns() > b.start_ns(); });
  return out;
}

ReplayGuard::Verdict ReplayGuard::check(const common::Salt& salt, uint64_t session_id,
                                        uint64_t seq) {
  Entry* e = find(salt, session_id);
  if (e == nullptr) {
    if (!entries_.empty() && common::salt_start_ns(salt) <= newest_start()) {
      return Verdict::kUnidentified;
    }
    return take(add(SessionMark{salt, session_id, seq, 0}), seq, Verdict::kNewSession);
  }
  if (e->have_floor && seq <= e->floor) return Verdict::kReplayed;
  e->used = ++checks_;
  return take(*e, seq, Verdict::kFresh);
}

ReplayGuard::Verdict ReplayGuard::take(Entry& e, uint64_t seq, Verdict fresh) {
  switch (e.window->take(seq)) {
    case Window::Take::kTooOld:
      return Verdict::kReplayed;
    case Window::Take::kSeen:
      return Verdict::kDuplicate;
    case Window::Take::kNew:
      break;
  }
  if (e.window->max() != e.mark.max_seq) {
    e.mark.max_seq = e.window->max();
    changed_ = true;
  }
  return fresh;
}

bool ReplayGuard::identify(const common::Salt& salt, uint64_t session_id, uint64_t seq,
                           uint64_t sender_id) {
  const uint64_t start = common::salt_start_ns(salt);
  Entry* e = find(salt, session_id);
  if (e == nullptr && sender_id == 0) return false;  // nothing tells it from a replay
  const auto same_sender = [&](const Entry& o) {
    const bool itself = o.mark.session_id == session_id && o.mark.salt == salt;
    return !itself && o.mark.named && o.mark.sender_id == sender_id;
  };
  for (const Entry& o : entries_) {
    if (same_sender(o) && o.mark.start_ns() >= start) {
      // An earlier session of a sender whose later one was taken.
      if (e != nullptr) entries_.erase(entries_.begin() + (e - entries_.data()));
      changed_ = true;
      return false;
    }
  }
  // The sender's earlier sessions are over.
  std::erase_if(entries_,
                [&](const Entry& o) { return same_sender(o) && o.mark.start_ns() < start; });
  e = find(salt, session_id);  // the erase moved it
  if (e == nullptr) {
    e = &add(SessionMark{salt, session_id, seq, sender_id, true});
    return take(*e, seq, Verdict::kNewSession) == Verdict::kNewSession;
  }
  if (!e->mark.named || e->mark.sender_id != sender_id) {
    e->mark.sender_id = sender_id;
    e->mark.named = true;
    changed_ = true;
  }
  return true;
}

}  // namespace ddft::receiver
