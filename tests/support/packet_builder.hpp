// Packet builders the receiver's tests and the fuzz seeds share: a stream re-stamped as a sender
// with --fec sends it (parity from the sender's own encoder), a stream sealed as a sender with
// --key-file seals it, and a look at a datagram's type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/fec.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "support/fake_sender.hpp"

namespace ddft::testing {

// True when the (whole, unsealed or sealed) datagram `d` has type `t` in its header.
bool is_type(const Datagram& d, common::PacketType t);

// The session id in the header of datagram `d` (at least a header long).
uint64_t session_of(const Datagram& d);

// One parity datagram of `session` with sequence number `seq`, as the transmitter sends it.
Datagram parity_datagram(uint64_t session, uint64_t seq, const common::Parity& pa,
                         std::span<const uint8_t> shard);

// Re-stamps `in` (datagrams of one session, unsealed) the way a sender with --fec `p` sends it,
// using the sender's own encoder (sender::FecEncoder, built for sources of up to `max_source`
// bytes): each datagram gets kFlagFec, its place in a window and the next sequence number from
// *seq; the parity datagrams of each window follow it when it is full, and at the end of `in`.
// `session` is the session of the parity datagrams (that of `in`).
std::vector<Datagram> with_fec(const std::vector<Datagram>& in, const common::FecParams& p,
                               uint64_t session, uint64_t* seq, size_t max_source = 9000);
// The same, with the session read from the first datagram of `in` (which must not be empty).
std::vector<Datagram> with_fec(const std::vector<Datagram>& in, const common::FecParams& p,
                               uint64_t* seq);

// Each datagram of `in` sealed by `sealer` (in order: the sealer numbers what it seals).
std::vector<Datagram> seal_all(common::Sealer& sealer, const std::vector<Datagram>& in);

}  // namespace ddft::testing
