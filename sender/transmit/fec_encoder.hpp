// The sender's side of FEC: parity for each window of source datagrams, built as they are sent.
//
// Every source datagram is added to its group's parity as it is sealed (no copy is kept); when the
// window is full, or the transmitter closes it early (end of a file, a heartbeat, the session's
// end), the parity datagrams of its groups are made: index-major, so that a burst over the parity
// also spreads across the groups.
//
// One per lane, on its transmit thread. It owns its parity buffers (allocated once) and keeps no
// copy of a source. add() throws std::logic_error for a source longer than the packet size allows
// (a bug).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/fec.hpp"
#include "common/protocol.hpp"

namespace ddft::sender {

class FecEncoder {
 public:
  // `max_source`: the longest source datagram (the packet size less kFecOverhead).
  FecEncoder(const common::FecParams& params, size_t max_source);

  // Place in the window of the next source datagram (its header's fec_pos).
  uint16_t next_pos() const { return count_; }
  bool window_open() const { return count_ > 0; }
  // Adds the source datagram sealed with fec_pos == next_pos() and sequence number `seq`.
  // Returns true when the window is now full and close() must be called.
  bool add(uint64_t seq, std::span<const uint8_t> datagram);
  // Emits the window's parity (header fields and shard for each parity datagram) and starts a new
  // window. Does nothing when the window is empty.
  using Emit = std::function<void(const common::Parity&, std::span<const uint8_t> shard)>;
  void close(const Emit& emit);
  // Parity datagrams close() would emit now.
  size_t pending_parity() const;

 private:
  uint8_t* parity(unsigned group, unsigned index) {
    return parity_.data() + (static_cast<size_t>(group) * params_.m + index) * max_source_;
  }

  common::FecParams params_;
  size_t max_source_;
  common::RsCodec codec_;
  common::AlignedBuffer parity_;   // interleave x m shards of max_source bytes
  std::vector<size_t> group_len_;  // longest source of each group in this window
  std::vector<uint8_t*> ptrs_;
  uint64_t window_seq_ = 0;
  uint16_t count_ = 0;
};

}  // namespace ddft::sender
