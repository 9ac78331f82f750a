#include "receiver/assembly/sender_slots.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ddft::receiver {
using namespace std::chrono;
using common::Packet;
using common::PacketType;

namespace {
// Ended sessions remembered, whose packets are refused.
constexpr size_t kEndedKept = 1024;
// Refused sessions remembered (for their log line's rate).
constexpr size_t kRefusedKept = 1024;
constexpr auto kRefusalLogInterval = minutes(1);
}  // namespace

FecCounters SenderSlot::fec_counters() const {
  FecCounters sum;
  for (const auto& f : fec) sum += f->counters();
  return sum;
}

uint64_t SenderSlot::fec_unrepaired_open() const {
  uint64_t n = 0;
  for (const auto& f : fec) n += f->unrepaired_open();
  return n;
}

SenderSlots::SenderSlots(const ReceiverConfig& cfg, common::Clock& clock,
                         AssemblerCounters& counters)
    : cfg_(cfg), clock_(clock), counters_(counters), max_(std::max<size_t>(1, cfg.max_senders)) {}

SenderSlot* SenderSlots::find(uint64_t s) {
  auto it = slots_.find(s);
  return it == slots_.end() ? nullptr : it->second.get();
}

const SenderSlot* SenderSlots::find(uint64_t s) const {
  auto it = slots_.find(s);
  return it == slots_.end() ? nullptr : it->second.get();
}

bool SenderSlots::may_open(const Packet& p) {
  // With FEC any packet of a window may open the session: the announce itself may be lost and
  // rebuilt from the window, which is only possible when its other packets were kept.
  const bool opener = p.header.type == PacketType::kAnnounce ||
                      p.header.type == PacketType::kHeartbeat ||
                      p.header.type == PacketType::kSenderInfo ||
                      p.header.type == PacketType::kParity || (p.header.flags & common::kFlagFec);
  if (opener && ended_.count(p.header.session_id) == 0) return true;
  ++counters_.other_session;
  return false;
}

SenderSlot* SenderSlots::quiet_slot(common::Clock::time_point now) {
  SenderSlot* best = nullptr;
  for (auto& [s, slot] : slots_) {
    if (slot->session->quiet(now) &&
        (best == nullptr || slot->session->started() < best->session->started())) {
      best = slot.get();
    }
  }
  return best;
}

void SenderSlots::refuse(const Packet& p) {
  ++counters_.other_session;
  const uint64_t s = p.header.session_id;
  const auto now = clock_.now();
  auto it = refused_.find(s);
  if (it == refused_.end()) {
    ++counters_.senders_refused;
    if (refused_.size() >= kRefusedKept) refused_.erase(refused_.begin());
    it = refused_.emplace(s, now - kRefusalLogInterval).first;
  }
  if (now - it->second < kRefusalLogInterval) return;
  it->second = now;
  std::string who = fmt::format("sender session {:016x}", s);
  common::SenderInfo si;
  if (p.header.type == PacketType::kSenderInfo &&
      common::decode_sender_info(p.payload, &si) == common::DecodeStatus::kOk &&
      si.sender_id != 0) {
    who = fmt::format("sender {:016x} (session {:016x})", si.sender_id, s);
  }
  spdlog::warn(
      "Warn: {} refused: --max-senders {} reached ({} live, none quiet); its packets are "
      "dropped until a place frees",
      who, max_, slots_.size());
}

SenderSlot& SenderSlots::open(uint64_t s) {
  auto slot = std::make_unique<SenderSlot>();
  slot->session = std::make_unique<SenderSession>(cfg_, clock_, counters_, s, cfg_.lanes());
  for (size_t i = 0; i < cfg_.lanes(); ++i) {
    slot->fec.push_back(
        std::make_unique<FecDecoder>(cfg_.max_packet_size, cfg_.fec_buffer_mb << 20));
  }
  refused_.erase(s);
  SenderSlot& ref = *slot;
  slots_[s] = std::move(slot);
  return ref;
}

SenderSlot* SenderSlots::same_sender(uint64_t s, uint64_t sender_id) {
  if (sender_id == 0) return nullptr;
  for (auto& [other, slot] : slots_) {
    if (other != s && slot->session->identified() && slot->session->sender_id() == sender_id) {
      return slot.get();
    }
  }
  return nullptr;
}

void SenderSlots::close(uint64_t s) {
  auto it = slots_.find(s);
  if (it == slots_.end()) return;
  counters_.lost_in_past_sessions += it->second->session->lost();
  slots_.erase(it);
  if (ended_.insert(s).second) ended_order_.push_back(s);
  if (ended_order_.size() > kEndedKept) {
    ended_.erase(ended_order_.front());
    ended_order_.erase(ended_order_.begin());
  }
}

std::vector<uint64_t> SenderSlots::sessions() const {
  std::vector<uint64_t> out;
  for (const auto& [s, slot] : slots_) out.push_back(s);
  return out;
}

}  // namespace ddft::receiver
