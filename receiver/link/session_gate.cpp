#include "receiver/link/session_gate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace ddft::receiver {
using namespace std::chrono;
using common::DecodeStatus;
using common::Packet;
using common::PacketType;

namespace {
// Authentication failures: the first in detail at once, then a count at most this often.
constexpr auto kAuthLogInterval = seconds(10);
// How often the replay state is saved while a session runs (it is saved at once when a session
// starts).
constexpr auto kMarkSaveInterval = seconds(1);
}  // namespace

SessionGate::SessionGate(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs,
                         common::Clock& clock, AssemblerCounters& counters, size_t lanes)
    : cfg_(cfg),
      out_(out),
      fs_(fs),
      clock_(clock),
      counters_(counters),
      lanes_(std::max<size_t>(1, lanes)) {
  for (size_t i = 0; i < lanes_.size(); ++i) lanes_[i].state_file = session_state_name(i);
  if (cfg.keys.empty()) return;
  opener_ = std::make_unique<common::Opener>(cfg.keys);
  open_buf_.resize(cfg.max_packet_size);
  for (LaneState& l : lanes_) restore_mark(l);
}

void SessionGate::restore_mark(LaneState& l) {
  std::vector<SessionMark> restored;
  std::optional<std::string> text;
  // Start-up: a state that cannot be read stops the receiver.
  if (std::string why; !out_.read_state(l.state_file, &text, &why)) {
    throw std::runtime_error(why);
  }
  if (text) {
    std::string why;
    auto marks = parse_session_marks(*text, &why);
    if (!marks) {
      throw std::runtime_error(fmt::format(
          "session state '{}/{}' is damaged ({}): remove it to accept the next session the "
          "sender starts",
          out_.state_dir(), l.state_file, why));
    }
    restored = std::move(*marks);
    const SessionMark& newest = restored.front();
    spdlog::info(
        "Info: replay protection{}: newest session {:016x} (started {} ns after the "
        "epoch by the sender's clock), datagrams up to seq {} taken{}",
        lanes_.size() > 1 ? fmt::format(" ({})", l.state_file) : "", newest.session_id,
        newest.start_ns(), newest.max_seq,
        restored.size() > 1 ? fmt::format("; {} sessions of other senders", restored.size() - 1)
                            : "");
  }
  l.guard = std::make_unique<ReplayGuard>(restored);
}

std::string SessionGate::lane_suffix(size_t lane) const {
  if (lanes_.size() <= 1) return {};
  return fmt::format(" on lane {} ({})", lane, cfg_.lane_name(lane));
}

bool SessionGate::open(std::span<const uint8_t>* data, size_t real_len, Packet* p, size_t lane) {
  Prechecked pre;
  pre.data = *data;
  pre.real_len = real_len;
  pre.lane = lane;
  precheck(opener_.get(), open_buf_, &pre);
  return admit(pre, data, p);
}

void SessionGate::precheck(common::Opener* opener, std::span<uint8_t> inner, Prechecked* pre) {
  pre->status = pre->real_len > pre->data.size() ? DecodeStatus::kBadLength
                                                 : common::decode_packet(pre->data, &pre->packet);
  if (pre->status != DecodeStatus::kOk || opener == nullptr) return;
  pre->inner = inner;
  pre->opened = opener->open(pre->data, pre->packet.header, inner, &pre->inner_len, &pre->salt,
                             &pre->key_index);
}

bool SessionGate::admit(const Prechecked& pre, std::span<const uint8_t>* data, Packet* p) {
  ++counters_.datagrams;
  if (pre.status != DecodeStatus::kOk) {
    reject(pre);
    return false;
  }
  *data = pre.data;
  *p = pre.packet;
  return unseal(pre, data, p);
}

void SessionGate::reject(const Prechecked& pre) {
  const bool truncated = pre.real_len > pre.data.size();
  if (truncated) ++counters_.truncated;
  ++counters_.rejected[static_cast<size_t>(pre.status)];
  const auto now = clock_.now();
  if (now - last_reject_log_ > seconds(1)) {
    last_reject_log_ = now;
    spdlog::warn("Warn: dropped a damaged or foreign datagram ({}, {} bytes{})",
                 common::decode_status_name(pre.status), pre.real_len,
                 truncated ? ", larger than --max-packet-size" : "");
  }
}

bool SessionGate::unseal(const Prechecked& pre, std::span<const uint8_t>* data, Packet* p) {
  const bool sealed = (p->header.flags & common::kSealFlags) != 0;
  if (!opener_) {
    if (sealed) reject_auth(AuthReject::kNoKey, *p, data->size());
    return !sealed;
  }
  switch (pre.opened) {
    case common::OpenStatus::kOk:
      break;
    case common::OpenStatus::kNotSealed:
      reject_auth(AuthReject::kNotSealed, *p, data->size());
      return false;
    case common::OpenStatus::kMalformed:
      reject_auth(AuthReject::kMalformed, *p, data->size());
      return false;
    case common::OpenStatus::kBadTag:
      reject_auth(AuthReject::kBadTag, *p, data->size());
      return false;
  }
  if (!check_fresh(pre, data->size(), p)) return false;
  // The outer header was checked (decode_packet) and authenticated: the inner one is the same
  // but for its length and the seal's flags. Its checksum is only recomputed for FEC sources.
  *data = std::span<const uint8_t>(pre.inner.data(), pre.inner_len);
  p->header.flags &= static_cast<uint16_t>(~common::kSealFlags);
  p->header.payload_len = static_cast<uint16_t>(pre.inner_len - common::kHeaderSize);
  p->payload = data->subspan(common::kHeaderSize);
  return true;
}

bool SessionGate::check_fresh(const Prechecked& pre, size_t len, Packet* p) {
  ReplayGuard& guard = *lanes_[pre.lane].guard;
  const uint64_t s = p->header.session_id;
  // A kSenderInfo names the session's sender: the guard tells an earlier session of that sender
  // (a replay, or a straggler of a sender that started anew) from another sender's.
  common::SenderInfo si;
  const bool names_sender =
      p->header.type == common::PacketType::kSenderInfo && pre.inner_len >= common::kHeaderSize &&
      common::decode_sender_info(std::span<const uint8_t>(pre.inner.data() + common::kHeaderSize,
                                                          pre.inner_len - common::kHeaderSize),
                                 &si) == common::DecodeStatus::kOk;
  const ReplayGuard::Verdict v = guard.check(pre.salt, s, p->header.seq);
  if (v == ReplayGuard::Verdict::kUnidentified) {
    if (!names_sender || !guard.identify(pre.salt, s, p->header.seq, si.sender_id)) {
      reject_auth(names_sender ? AuthReject::kStaleSession : AuthReject::kUnidentified, *p, len);
      return false;
    }
    save_mark(pre.lane);
    spdlog::info(
        "Info: sender session {:016x}{} of sender {:016x} started before the newest session "
        "taken: another sender's, taken",
        s, lane_suffix(pre.lane), si.sender_id);
    return true;
  }
  if ((v == ReplayGuard::Verdict::kFresh || v == ReplayGuard::Verdict::kNewSession) &&
      names_sender && !guard.identify(pre.salt, s, p->header.seq, si.sender_id)) {
    save_mark(pre.lane);
    reject_auth(AuthReject::kStaleSession, *p, len);
    return false;
  }
  return report_fresh(v, pre, len, *p);
}

bool SessionGate::report_fresh(ReplayGuard::Verdict v, const Prechecked& pre, size_t len,
                               const Packet& p) {
  const size_t key_index = pre.key_index;
  switch (v) {
    case ReplayGuard::Verdict::kFresh:
      return true;
    case ReplayGuard::Verdict::kNewSession:
      save_mark(pre.lane);
      spdlog::info(
          "Info: sender session {:016x}{}: datagrams authenticated{} (AES-256-GCM){}",
          p.header.session_id, lane_suffix(pre.lane),
          (p.header.flags & common::kFlagEncrypt) ? " and encrypted" : ", not encrypted",
          cfg_.keys.size() > 1
              ? fmt::format(" with key {} of {} ({})", key_index + 1, cfg_.keys.size(),
                            cfg_.key_files.size() > key_index ? cfg_.key_files[key_index] : "")
              : "");
      return true;
    case ReplayGuard::Verdict::kDuplicate:
      ++counters_.duplicates;
      return false;
    case ReplayGuard::Verdict::kReplayed:
      reject_auth(AuthReject::kReplayed, p, len);
      return false;
    case ReplayGuard::Verdict::kUnidentified:
      reject_auth(AuthReject::kUnidentified, p, len);
      return false;
  }
  return false;
}

void SessionGate::reject_auth(AuthReject why, const Packet& p, size_t len) {
  ++counters_.auth_rejected[static_cast<size_t>(why)];
  const auto now = clock_.now();
  if (auth_logged_ && now - last_auth_log_ < kAuthLogInterval) {
    ++auth_unlogged_[static_cast<size_t>(why)];
    return;
  }
  auth_logged_ = true;
  last_auth_log_ = now;
  spdlog::warn(
      "Warn: dropped a datagram that failed authentication ({}; {} bytes, session "
      "{:016x}, seq {}); its data is never written",
      auth_reject_name(why), len, p.header.session_id, p.header.seq);
}

void SessionGate::save_mark(size_t lane) {
  LaneState& l = lanes_[lane];
  if (!l.guard || l.guard->marks().empty()) return;
  l.guard->take_changed();  // what is saved now need not be saved again by the next poll
  l.last_mark_save = clock_.now();
  // One save at a time per lane, on the pool (it fsyncs): a change meanwhile is saved right
  // after.
  if (l.mark_saving) {
    l.mark_dirty = true;
    return;
  }
  l.mark_saving = true;
  auto why = std::make_shared<std::string>();
  auto ok = std::make_shared<bool>(false);
  fs_.post([this, file = l.state_file, text = format_session_marks(l.guard->marks()), why,
            ok] { *ok = out_.write_state(file, text, why.get()); },
           [this, lane, why, ok] {
             LaneState& ls = lanes_[lane];
             ls.mark_saving = false;
             if (!*ok) log_save_error(ls.state_file, *why);
             if (ls.mark_dirty) {
               ls.mark_dirty = false;
               save_mark(lane);
             }
           });
}

void SessionGate::log_save_error(const std::string& file, const std::string& why) {
  const auto now = clock_.now();
  if (save_error_logged_ && now - last_save_error_log_ < seconds(60)) return;
  save_error_logged_ = true;
  last_save_error_log_ = now;
  spdlog::warn(
      "Warn: cannot save the replay state '{}/{}': {} (after a restart the "
      "receiver could take this session's datagrams again)",
      out_.state_dir(), file, why);
}

void SessionGate::save_if_changed() {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i].guard && lanes_[i].guard->take_changed()) save_mark(i);
  }
}

void SessionGate::poll(common::Clock::time_point now) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    LaneState& l = lanes_[i];
    if (l.guard && now - l.last_mark_save >= kMarkSaveInterval && l.guard->take_changed()) {
      save_mark(i);
    }
  }
  log_unlogged_auth(now);
}

void SessionGate::log_unlogged_auth(common::Clock::time_point now) {
  uint64_t unlogged = 0;
  for (uint64_t n : auth_unlogged_) unlogged += n;
  if (unlogged == 0 || now - last_auth_log_ < kAuthLogInterval) return;
  std::string kinds;
  for (size_t i = 0; i < kAuthRejectCount; ++i) {
    if (auth_unlogged_[i] == 0) continue;
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", auth_unlogged_[i],
                         auth_reject_name(static_cast<AuthReject>(i)));
    auth_unlogged_[i] = 0;
  }
  spdlog::warn(
      "Warn: {} more datagram(s) failed authentication since the last report ({}); "
      "none was written",
      unlogged, kinds);
  last_auth_log_ = now;
}

}  // namespace ddft::receiver
