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

std::string format_session_mark(const SessionMark& m) {
  return fmt::format("{} salt={:02x} session={:016x} max_seq={}\n", kMagic, fmt::join(m.salt, ""),
                     m.session_id, m.max_seq);
}

std::optional<SessionMark> parse_session_mark(std::string_view text, std::string* why) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  SessionMark m;
  const auto salt = field(text, "salt");
  const auto session = field(text, "session");
  const auto max_seq = field(text, "max_seq");
  auto number = [](std::string_view t, int base, uint64_t* v) {
    const auto r = std::from_chars(t.data(), t.data() + t.size(), *v, base);
    return r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  if (!text.starts_with(kMagic) || !salt || !session || !max_seq || !parse_hex(*salt, &m.salt) ||
      !number(*session, 16, &m.session_id) || !number(*max_seq, 10, &m.max_seq)) {
    *why = "not a ddft session state line";
    return std::nullopt;
  }
  return m;
}

ReplayGuard::ReplayGuard(std::optional<SessionMark> restored) : mark_(restored) {
  if (mark_) {
    floor_ = mark_->max_seq;
    have_floor_ = true;
  }
}

bool ReplayGuard::take_changed() { return std::exchange(changed_, false); }

ReplayGuard::Verdict ReplayGuard::check(const common::Salt& salt, uint64_t session_id,
                                        uint64_t seq) {
  Verdict fresh = Verdict::kFresh;
  if (!mark_ || mark_->salt != salt || mark_->session_id != session_id) {
    if (mark_ && common::salt_start_ns(salt) <= mark_->start_ns()) return Verdict::kStaleSession;
    mark_ = SessionMark{salt, session_id, seq};
    have_floor_ = false;
    window_ = Window();
    changed_ = true;
    fresh = Verdict::kNewSession;
  } else if (have_floor_ && seq <= floor_) {
    return Verdict::kReplayed;
  }
  switch (window_.take(seq)) {
    case Window::Take::kTooOld:
      return Verdict::kReplayed;
    case Window::Take::kSeen:
      return Verdict::kDuplicate;
    case Window::Take::kNew:
      break;
  }
  if (window_.max() != mark_->max_seq) {
    mark_->max_seq = window_.max();
    changed_ = true;
  }
  return fresh;
}

}  // namespace ddft::receiver
