#include "support/packet_builder.hpp"

#include "sender/transmit/fec_encoder.hpp"

namespace ddft::testing {
bool is_type(const Datagram& d, common::PacketType t) {
  return d.size() >= common::kHeaderSize && common::peek_type(d.data()) == static_cast<uint8_t>(t);
}

uint64_t session_of(const Datagram& d) { return common::peek_session_id(d.data()); }

Datagram parity_datagram(uint64_t session, uint64_t seq, const common::Parity& pa,
                         std::span<const uint8_t> shard) {
  common::Header h;
  h.session_id = session;
  h.seq = seq;
  Datagram b(shard.size() + common::kFecOverhead);
  b.resize(common::encode_parity(h, pa, shard, b));
  return b;
}

std::vector<Datagram> with_fec(const std::vector<Datagram>& in, const common::FecParams& p,
                               uint64_t session, uint64_t* seq, size_t max_source) {
  sender::FecEncoder enc(p, max_source);
  std::vector<Datagram> out;
  auto close = [&] {
    enc.close([&](const common::Parity& pa, std::span<const uint8_t> shard) {
      out.push_back(parity_datagram(session, (*seq)++, pa, shard));
    });
  };
  for (Datagram d : in) {
    common::poke_flags(d.data(), common::kFlagFec);
    common::poke_fec_pos(d.data(), enc.next_pos());
    common::poke_seq(d.data(), *seq);
    common::reseal(d);
    const bool full = enc.add((*seq)++, d);
    out.push_back(std::move(d));
    if (full) close();
  }
  close();
  return out;
}

std::vector<Datagram> with_fec(const std::vector<Datagram>& in, const common::FecParams& p,
                               uint64_t* seq) {
  return with_fec(in, p, session_of(in.at(0)), seq);
}

std::vector<Datagram> seal_all(common::Sealer& sealer, const std::vector<Datagram>& in) {
  std::vector<Datagram> out;
  for (Datagram d : in) {
    const size_t n = d.size();
    d.resize(n + common::kSealOverhead);
    d.resize(sealer.seal(d, n));
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace ddft::testing
