// The sender's history on the wire (sender/source/history_feed.hpp): each lane sends every payload
// the feed packs, once, as a source of its FEC window like any control datagram.
#include <spdlog/spdlog.h>

#include "common/history_wire.hpp"
#include "sender/source/history_feed.hpp"
#include "sender/transmit/transmitter.hpp"

namespace ddft::sender {

void Transmitter::send_history_if_due(bool last) {
  if (history_ == nullptr) return;
  uint64_t waiting = 0;
  const std::vector<HistoryFeed::Payload> payloads = history_->take(lane_, &waiting, last);
  if (status_) status_->history_waiting.store(waiting, std::memory_order_relaxed);
  for (const HistoryFeed::Payload& payload : payloads) {
    auto slot = next_slot();
    common::Header h = next_header();
    h.type = common::PacketType::kHistory;
    const size_t n = common::encode_payload(h, *payload, slot.first(source_size_));
    if (n == 0) continue;  // packed for this lane's room: never
    commit(slot, n);
    const size_t wire = n + (sealer_ ? common::kSealOverhead : 0);
    totals_.history_bytes += wire;
    if (status_) status_->history_bytes.fetch_add(wire, std::memory_order_relaxed);
  }
}

}  // namespace ddft::sender
