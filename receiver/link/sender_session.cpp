#include "receiver/link/sender_session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace ddft::receiver {
using namespace std::chrono;
using common::Packet;

SenderSession::SenderSession(const ReceiverConfig& cfg, common::Clock& clock,
                             AssemblerCounters& counters, uint64_t session, size_t lanes)
    : cfg_(cfg),
      clock_(clock),
      counters_(counters),
      session_(session),
      start_(clock.now()),
      lanes_(std::max<size_t>(1, lanes)) {
  ++counters_.sessions;
  spdlog::info("Info: sender session {:016x} started", session_);
}

std::string SenderSession::name() const {
  return identified_ && sender_id_ != 0 ? fmt::format("sender {:016x}", sender_id_)
                                        : fmt::format("sender session {:016x}", session_);
}

std::string SenderSession::label() const {
  return identified_ && sender_id_ != 0 ? fmt::format("{:016x}", sender_id_)
                                        : fmt::format("session-{:016x}", session_);
}

std::string SenderSession::lane_suffix(size_t lane) const {
  if (lanes_.size() <= 1) return {};
  return fmt::format(" on lane {} ({})", lane, cfg_.lane_name(lane));
}

bool SenderSession::note_packet(size_t lane, const Packet& p) {
  LaneState& l = lanes_[lane];
  const auto now = clock_.now();
  if (l.silence_warned) {
    l.silence_warned = false;
    spdlog::info("Info: sender session {:016x}{}: packets again after {:.1f} s of silence",
                 session_, lane_suffix(lane), duration<double>(now - l.last_packet).count());
  }
  if (!l.heard) {
    l.first_seq = p.header.seq;
    if (lanes_.size() > 1) {
      spdlog::info("Info: sender session {:016x}: first packet{}", session_, lane_suffix(lane));
    }
  }
  l.heard = true;
  l.last_packet = now;
  if (!l.seq.record(p.header.seq)) {
    ++counters_.duplicates;
    return false;
  }
  return true;
}

void SenderSession::on_heartbeat(size_t lane, const common::Heartbeat& hb) {
  LaneState& l = lanes_[lane];
  if (hb.interval_ms > 0) l.heartbeat_interval = milliseconds(hb.interval_ms);
  l.sender_lane = hb.lane;
  sender_lanes_ = std::max<size_t>(sender_lanes_, hb.lanes);
  if (hb.flags & common::kHeartbeatSleeping) l.sleep_heard = clock_.now();
  if ((hb.flags & common::kHeartbeatFinal) && !l.final) {
    l.final = true;
    // Whatever is still receiving gets a short grace for reordered packets, then fails.
    l.final_deadline = clock_.now() + seconds(1);
  }
}

void SenderSession::on_sender_info(const common::SenderInfo& si) {
  if (si.sender_id != 0 && (!identified_ || si.sender_id != sender_id_)) {
    spdlog::info("Info: sender session {:016x} comes from sender {:016x}", session_, si.sender_id);
  }
  identified_ = true;
  sender_id_ = si.sender_id;
  lane_hosts_ = si.host;
}

bool SenderSession::sender_lane_to_this_host(int sender_lane) const {
  if (sender_lane < 0 || static_cast<size_t>(sender_lane) >= lane_hosts_.size()) return false;
  const uint8_t host = lane_hosts_[static_cast<size_t>(sender_lane)];
  return std::any_of(lanes_.begin(), lanes_.end(), [&](const LaneState& l) {
    return l.sender_lane >= 0 && static_cast<size_t>(l.sender_lane) < lane_hosts_.size() &&
           lane_hosts_[static_cast<size_t>(l.sender_lane)] == host;
  });
}

int SenderSession::lane_of_sender(int sender_lane) const {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i].sender_lane == sender_lane) return static_cast<int>(i);
  }
  return -1;
}

bool SenderSession::all_lanes_named() const {
  return std::all_of(lanes_.begin(), lanes_.end(),
                     [](const LaneState& l) { return l.sender_lane >= 0; });
}

uint64_t SenderSession::received() const {
  uint64_t n = 0;
  for (const LaneState& l : lanes_) n += l.seq.received();
  return n;
}

uint64_t SenderSession::lost() const {
  uint64_t n = 0;
  for (const LaneState& l : lanes_) n += l.seq.lost();
  return n;
}

void SenderSession::report_loss(common::Clock::time_point now, uint64_t rebuilt) {
  // A loss line at once, then at most every 10 s: at a steady loss rate one a second is noise.
  const uint64_t lost = this->lost();
  if (lost <= lost_logged_ ||
      now - last_loss_log_ < (lost_logged_ == 0 ? seconds(0) : seconds(10))) {
    return;
  }
  spdlog::warn("Warn: {} packet(s) lost on the link so far in session {:016x} (sequence gaps){}",
               lost, session_, rebuilt > 0 ? fmt::format("; {} rebuilt by FEC", rebuilt) : "");
  lost_logged_ = lost;
  last_loss_log_ = now;
}

void SenderSession::poll(common::Clock::time_point now) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    LaneState& l = lanes_[i];
    if (!l.heard || l.final || l.silence_warned || now - l.last_packet < 3 * l.heartbeat_interval) {
      continue;
    }
    l.silence_warned = true;
    spdlog::warn(
        "Warn: no packet from sender session {:016x}{} for {:.1f} s (3 heartbeat "
        "intervals): the sender or the link is down",
        session_, lane_suffix(i), duration<double>(now - l.last_packet).count());
  }
}

bool SenderSession::quiet(common::Clock::time_point now) const {
  return std::all_of(lanes_.begin(), lanes_.end(), [&](const LaneState& l) {
    if (l.final) return true;
    const auto last = l.heard ? l.last_packet : start_;
    return now - last >= 3 * l.heartbeat_interval;
  });
}

nanoseconds SenderSession::silence_limit() const {
  return duration_cast<nanoseconds>(duration<double>(cfg_.file_timeout_s));
}

bool SenderSession::done(size_t lane, common::Clock::time_point now) const {
  const LaneState& l = lanes_[lane];
  if (l.final) return true;
  if (!l.heard) {
    size_t heard = 0;
    for (const LaneState& o : lanes_) heard += o.heard ? 1 : 0;
    if (heard >= sender_lanes_) return true;  // a lane the sender does not drive
  }
  return now - (l.heard ? l.last_packet : start_) >= silence_limit();
}

bool SenderSession::finished(bool idle) const {
  if (!idle) return false;
  const auto now = clock_.now();
  bool silent = false;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (!done(i, now)) return false;
    silent = silent || !lanes_[i].final;
  }
  if (silent && !silence_logged_) {
    silence_logged_ = true;
    bool any_final = false;
    for (const LaneState& l : lanes_) any_final = any_final || l.final;
    spdlog::warn(
        "Warn: sender session {:016x} silent for {:.1f} s without its final heartbeat{} "
        "(lost?); taking it as finished",
        session_, cfg_.file_timeout_s,
        lanes_.size() > 1 && any_final ? " on some of its lanes" : "");
  }
  return true;
}

}  // namespace ddft::receiver
