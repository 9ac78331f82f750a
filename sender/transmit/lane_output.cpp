#include "sender/transmit/lane_output.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace ddft::sender {
using common::Header;

LaneOutput::LaneOutput(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                       common::Clock& clock, std::string send_failed, SendTotals& totals,
                       HeartbeatOf heartbeat)
    : cfg_(cfg),
      session_id_(session_id),
      sink_(sink),
      clock_(clock),
      send_failed_(std::move(send_failed)),
      totals_(totals),
      heartbeat_(std::move(heartbeat)),
      pacer_(clock, PacingConfig{cfg.rate_mb * 1024.0 * 1024.0, cfg.intra_pkt_interval,
                                 cfg.intra_pkt_delay_ms, cfg.fs_interval_mb, cfg.fs_delay_ms,
                                 cfg.sleep_alg, cfg.eof_delay_ms}),
      source_size_(source_datagram_size(cfg)),
      arena_((cfg.batch + 1) * cfg.packet_size) {
  pending_.reserve(cfg.batch);
  if (cfg.fec.enabled()) fec_ = std::make_unique<FecEncoder>(cfg.fec, source_size_);
  if (cfg.key) {
    // A salt of the lane's own, so a key of its own: every lane numbers its datagrams from 0,
    // and a nonce must never repeat under one key.
    sealer_ = std::make_unique<common::Sealer>(*cfg.key, session_id, common::make_session_salt(),
                                               !cfg.auth_only);
  }
}

void LaneOutput::start(std::stop_token stop, common::Clock::time_point now) {
  pacer_.set_stop(std::move(stop));
  pacer_.set_keepalive([this](common::Clock::time_point t) { return keep_link_alive(t); });
  last_heartbeat_ = now;
  last_sent_ = now;
}

Header LaneOutput::next_header(bool fec_source) {
  Header h;
  h.session_id = session_id_;
  h.seq = seq_++;
  if (fec_ && fec_source) {
    h.flags |= common::kFlagFec;
    h.fec_pos = fec_->next_pos();
  }
  return h;
}

void LaneOutput::commit(std::span<uint8_t> slot, size_t n, bool send) {
  const bool full = fec_ && fec_->add(common::peek_seq(slot.data()), slot.first(n));
  if (send) enqueue(slot, n);
  if (full) close_window();
}

void LaneOutput::enqueue(std::span<uint8_t> slot, size_t n) {
  // Sealed last, after FEC has taken the inner datagram: parity covers what the receiver gets
  // back when it opens the seal.
  if (sealer_) n = sealer_->seal(slot, n);
  pending_.push_back(slot.first(n));
  pending_bytes_ += n;
}

void LaneOutput::send_control(
    const std::function<size_t(const Header&, std::span<uint8_t>)>& encode, uint16_t flags,
    unsigned copies) {
  for (unsigned i = 0; i < (copies == 0 ? cfg_.control_repeat : copies); ++i) {
    auto slot = next_slot();
    Header h = next_header();
    h.flags |= flags;
    const size_t n = encode(h, slot.first(source_size_));
    if (n == 0) throw std::runtime_error("control packet does not fit the packet size");
    commit(slot, n);
  }
}

void LaneOutput::close_window() {
  if (!fec_) return;
  // A keepalive while the parity goes out (a DFTS sleep in a flush below) must not take a place
  // in the window being closed.
  const FlagScope closing(closing_window_);
  fec_->close([&](const common::Parity& pa, std::span<const uint8_t> shard) {
    auto slot = next_slot();
    const size_t n = common::encode_parity(next_header(false), pa, shard,
                                           slot.first(source_size_ + common::kFecOverhead));
    if (n == 0) throw std::logic_error("parity datagram does not fit the packet size");
    enqueue(slot, n);
  });
}

std::span<uint8_t> LaneOutput::next_slot() {
  // The batch also ends where an intra-packet sleep falls, so that flush() sends it in one go
  // and every DFTS sleep comes after the batch's last datagram: nothing encoded waits unsent
  // through a sleep, for a keepalive heartbeat to overtake.
  if (pending_.size() == cfg_.batch || pending_.size() >= pacer_.packets_before_sleep()) flush();
  return {arena_.data() + pending_.size() * cfg_.packet_size, cfg_.packet_size};
}

void LaneOutput::flush() {
  size_t done = 0;
  while (done < pending_.size()) {
    const size_t n = std::min(pending_.size() - done, pacer_.packets_before_sleep());
    const auto part = std::span(pending_).subspan(done, n);
    size_t bytes = 0;
    for (const auto& d : part) bytes += d.size();
    pacer_.before_send(bytes);
    send_all(part);
    done += n;
    pending_sent_ = done;
    pacer_.after_send(n, bytes);
  }
  count_sent(pending_.size(), pending_bytes_);
  pending_.clear();
  pending_bytes_ = 0;
  pending_sent_ = 0;
}

void LaneOutput::discard() {
  pending_.clear();
  pending_bytes_ = 0;
}

void LaneOutput::heartbeat_sent() {
  last_heartbeat_ = clock_.now();
  heartbeat_sent_ = true;
}

void LaneOutput::count_sent(size_t datagrams, size_t bytes) {
  totals_.datagrams += datagrams;
  totals_.wire_bytes += bytes;
  if (status_ && datagrams > 0) {
    status_->datagrams.fetch_add(datagrams, std::memory_order_relaxed);
    status_->wire_bytes.fetch_add(bytes, std::memory_order_relaxed);
    status_->last_send_ns.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
  }
}

void LaneOutput::send_all(std::span<const std::span<const uint8_t>> datagrams) {
  size_t done = 0;
  while (done < datagrams.size()) {
    size_t sent = 0;
    const auto ec = sink_.send(datagrams.subspan(done), &sent);
    done += sent;
    if (sent > 0) last_sent_ = clock_.now();
    if (!ec) continue;
    if (ec == std::errc::no_buffer_space) {
      // BUFF_FULL_DELAY: the link's buffer is full; wait and retry the same datagrams, never
      // drop them. At least once a keepalive interval: what the retry sends is what keeps the
      // receiver hearing from this sender (a heartbeat would overtake these datagrams).
      const auto wait = std::min<std::chrono::nanoseconds>(
          std::chrono::milliseconds(cfg_.buff_full_delay_ms), keepalive_interval());
      clock_.sleep_until(clock_.now() + wait);
      continue;
    }
    throw LinkError(ec, send_failed_);
  }
}

// Heartbeats during the DFTS sleeps: the receiver warns when a lane has been silent for 3
// heartbeat intervals, and a deliberate pause (-fsdelay, EOF_DELAY, the sleep algorithm) must
// not look like a dead link.
std::chrono::nanoseconds LaneOutput::keepalive_interval() const {
  const auto every = std::chrono::milliseconds(cfg_.heartbeat_ms);
  if (heartbeat_sent_) return every;
  // The receiver does not know this session's interval yet: it counts in its own default.
  return std::min(every, std::chrono::milliseconds(common::kAssumedHeartbeatMs));
}

common::Clock::time_point LaneOutput::keep_link_alive(common::Clock::time_point now) {
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

void LaneOutput::send_keepalive() {
  const std::span<uint8_t> slot(arena_.data() + cfg_.batch * cfg_.packet_size, cfg_.packet_size);
  // A window's sources are numbered without gaps from its first (the receiver places each by
  // seq - fec_pos), so while one is open this heartbeat takes the next place in it. While a
  // window's parity is going out, the window is complete: the heartbeat stays out of it (the
  // parity names its window).
  const bool source = fec_ && !closing_window_;
  const Header h = next_header(source);
  common::Heartbeat hb = heartbeat_();
  hb.packets_sent = h.seq;
  // Only a DFTS sleep calls the keepalive: the receiver holds this lane's files open meanwhile.
  hb.flags |= common::kHeartbeatSleeping;
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
  heartbeat_sent();
}

void LaneOutput::send_now(std::span<uint8_t> slot, size_t n) {
  if (sealer_) n = sealer_->seal(slot, n);
  const std::span<const uint8_t> datagram = slot.first(n);
  send_all({&datagram, 1});
  count_sent(1, n);
}

}  // namespace ddft::sender
