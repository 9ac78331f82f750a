// Heartbeats during the DFTS sleeps: the receiver warns when a lane has been silent for 3
// heartbeat intervals, and a deliberate pause (-fsdelay, EOF_DELAY, the sleep algorithm) must not
// look like a dead link. See sender/transmit/transmitter.hpp.
#include <algorithm>

#include "sender/transmit/transmitter.hpp"

namespace ddft::sender {

std::chrono::nanoseconds Transmitter::keepalive_interval() const {
  const auto every = std::chrono::milliseconds(cfg_.heartbeat_ms);
  if (heartbeat_sent_) return every;
  // The receiver does not know this session's interval yet: it counts in its own default.
  return std::min(every, std::chrono::milliseconds(common::kAssumedHeartbeatMs));
}

common::Clock::time_point Transmitter::keep_link_alive(common::Clock::time_point now) {
  const auto every = keepalive_interval();
  // Datagrams numbered before this heartbeat still waiting (the sleep falls inside a batch; the
  // batches are cut so that it does not): it would overtake them. Or this is the keepalive's own
  // send (a full link buffer's wait): not twice.
  if (keeping_alive_ || pending_sent_ < pending_.size()) return now + every;
  const auto due = last_sent_ + every;
  if (now < due) return due;
  const FlagScope keeping(keeping_alive_);
  send_keepalive();
  return clock_.now() + every;
}

void Transmitter::send_keepalive() {
  const std::span<uint8_t> slot(arena_.data() + cfg_.batch * cfg_.packet_size, cfg_.packet_size);
  // A window's sources are numbered without gaps from its first (the receiver places each by
  // seq - fec_pos), so while one is open this heartbeat takes the next place in it. While a
  // window's parity is going out, the window is complete: the heartbeat stays out of it (the
  // parity names its window).
  const bool source = fec_ && !closing_window_;
  const common::Header h = next_header(source);
  common::Heartbeat hb = heartbeat_of(false);
  hb.packets_sent = h.seq;
  const size_t n = common::encode_heartbeat(h, hb, slot.first(source_size_));
  if (n == 0) throw std::runtime_error("control packet does not fit the packet size");
  // FEC takes the datagram before it is sealed, as commit() does.
  const bool full = source && fec_->add(h.seq, slot.first(n));
  send_now(slot, n);
  if (full) {
    const FlagScope closing(closing_window_);
    // The slot is free again once each datagram is sent.
    fec_->close([&](const common::Parity& pa, std::span<const uint8_t> shard) {
      const size_t p = common::encode_parity(next_header(false), pa, shard,
                                             slot.first(source_size_ + common::kFecOverhead));
      if (p == 0) throw std::logic_error("parity datagram does not fit the packet size");
      send_now(slot, p);
    });
  }
  last_heartbeat_ = clock_.now();
  heartbeat_sent_ = true;
}

void Transmitter::send_now(std::span<uint8_t> slot, size_t n) {
  if (sealer_) n = sealer_->seal(slot, n);
  const std::span<const uint8_t> datagram = slot.first(n);
  send_all({&datagram, 1});
  count_sent(1, n);
}

}  // namespace ddft::sender
