#include "receiver/assembly/file_lanes.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddft::receiver {

void FileLanes::open(File& f, size_t lane, bool striped) const {
  f.lane = lane;
  f.striped = striped;
  f.lanes_seen = uint64_t{1} << lane;
  const size_t lanes = count();
  f.open_lanes = !striped ? f.lanes_seen : lanes >= 64 ? ~uint64_t{0} : (uint64_t{1} << lanes) - 1;
}

bool FileLanes::announced_again(File& f, size_t lane, bool striped) const {
  const uint64_t bit = uint64_t{1} << lane;
  if (!striped || (f.lanes_seen & bit) != 0) return false;  // a repeat
  f.lanes_seen |= bit;
  return true;
}

// A file still receiving when a lane it is open on announces a later one has lost its end (or
// data FEC could not rebuild) there. Once no lane holds it open, it gets a short grace for
// reordered packets.
void FileLanes::close(File& o, size_t lane, uint32_t next_id, common::Clock::time_point now) const {
  const uint64_t bit = uint64_t{1} << lane;
  if (!common::file_id_before(o.id, next_id) || o.state != FileState::kReceiving ||
      (o.open_lanes & bit) == 0) {
    return;
  }
  o.open_lanes &= ~bit;
  if (o.open_lanes == 0 && !o.superseded) {
    o.superseded = true;
    o.superseded_at = now;
  }
}

// The last copy's end closes its lane for the file: a striped file's data may still come down
// the lanes that have not sent theirs.
bool FileLanes::close_on_end(File& f, const common::End& e, size_t lane) const {
  const uint64_t bit = uint64_t{1} << lane;
  const bool closes = e.copy + 1u >= std::max<uint8_t>(1, e.copies) && (f.open_lanes & bit);
  if (closes) f.open_lanes &= ~bit;
  return closes;
}

bool FileLanes::final_due(const File& f, common::Clock::time_point now) const {
  if (gate_ == nullptr) return false;
  const uint64_t lanes = f.open_lanes != 0 ? f.open_lanes : uint64_t{1} << f.lane;
  for (size_t i = 0; i < gate_->lanes(); ++i) {
    if ((lanes >> i & 1) != 0 && !gate_->gone(i, now)) return false;
  }
  return true;
}

common::Clock::time_point FileLanes::sleep_heard(const File& f) const {
  common::Clock::time_point latest{};
  if (gate_ == nullptr) return latest;
  const uint64_t lanes = f.open_lanes != 0 ? f.open_lanes : uint64_t{1} << f.lane;
  for (size_t i = 0; i < gate_->lanes(); ++i) {
    if ((lanes >> i & 1) != 0) latest = std::max(latest, gate_->sleep_heard(i));
  }
  return latest;
}

// A striped file needs every lane of the sender.
std::optional<std::string> FileLanes::striped_refusal() const {
  if (gate_ == nullptr || gate_->sender_lanes() <= gate_->lanes()) return std::nullopt;
  return fmt::format(
      "striped over the sender's {} lanes, of which this receiver drains {}: a file cannot be "
      "striped across receiver hosts (give dd_file_send --stripe-mb 0)",
      gate_->sender_lanes(), gate_->lanes());
}

std::string FileLanes::note(const File& f) const {
  if (gate_ == nullptr || gate_->lanes() <= 1) return {};
  if (f.striped) return " (striped over every lane)";
  return fmt::format(" (lane {}, {})", f.lane, cfg_.lane_name(f.lane));
}

}  // namespace ddft::receiver
