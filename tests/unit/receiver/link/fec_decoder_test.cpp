// The receiver's FEC window decoder, fed by the sender's window encoder: what it rebuilds, what
// it gives up, and the bounds it keeps.
#include "receiver/link/fec_decoder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "common/fec.hpp"
#include "common/protocol.hpp"
#include "sender/transmit/fec_encoder.hpp"
#include "support/packet_builder.hpp"

namespace ddft {
namespace {
using testing::Datagram;

// A stream of datagrams as the transmitter makes them: sources re-stamped with their window
// place, parity after each full window and at close().
struct Stream {
  std::vector<Datagram> wire;
  std::vector<bool> is_parity;
};

Datagram source(uint64_t seq, uint16_t pos, size_t payload, uint32_t seed) {
  Datagram d(common::data_datagram_size(payload));
  std::mt19937 rng(seed);
  for (size_t i = 0; i < payload; ++i)
    common::data_bytes_of(d.data())[i] = static_cast<uint8_t>(rng());
  common::Header h;
  h.session_id = 99;
  h.seq = seq;
  h.flags = common::kFlagFec;
  h.fec_pos = pos;
  d.resize(common::encode_data_in_place(h, {1, seq * 1000}, payload, d));
  return d;
}

Stream make_stream(const common::FecParams& p, size_t sources, uint32_t seed,
                   uint64_t first_seq = 0) {
  sender::FecEncoder enc(p, 9000);
  Stream s;
  uint64_t seq = first_seq;
  std::mt19937 rng(seed);
  auto close = [&] {
    enc.close([&](const common::Parity& pa, std::span<const uint8_t> shard) {
      s.wire.push_back(testing::parity_datagram(99, seq++, pa, shard));
      s.is_parity.push_back(true);
    });
  };
  for (size_t i = 0; i < sources; ++i) {
    Datagram d = source(seq, enc.next_pos(), 100 + rng() % 900, static_cast<uint32_t>(seed + i));
    const bool full = enc.add(seq++, d);
    s.wire.push_back(std::move(d));
    s.is_parity.push_back(false);
    if (full) close();
  }
  close();
  return s;
}

// Feeds the stream less `lost` through a decoder; returns the sources it ends up with (received
// or rebuilt), by sequence number.
std::map<uint64_t, Datagram> decode(receiver::FecDecoder& dec, const Stream& s,
                                    const std::set<size_t>& lost) {
  std::map<uint64_t, Datagram> got;
  auto deliver = [&](std::span<const uint8_t> d) {
    got[common::peek_seq(d.data())] = Datagram(d.begin(), d.end());
  };
  for (size_t i = 0; i < s.wire.size(); ++i) {
    if (lost.count(i)) continue;
    common::Packet p;
    EXPECT_EQ(common::decode_packet(s.wire[i], &p), common::DecodeStatus::kOk);
    if (s.is_parity[i]) {
      common::Parity pa;
      std::span<const uint8_t> shard;
      EXPECT_EQ(common::decode_parity(p.payload, &pa, &shard), common::DecodeStatus::kOk);
      dec.add_parity(pa, shard, deliver);
    } else {
      EXPECT_TRUE(dec.add_source(p.header, s.wire[i], deliver));
      got[p.header.seq] = s.wire[i];
    }
  }
  return got;
}

TEST(FecWindows, RebuildUpToMPerGroupIncludingAPartialLastWindow) {
  const common::FecParams p{8, 2, 1};
  const Stream s = make_stream(p, 8 * 3 + 5, 1);  // three full windows and one of 5
  ASSERT_EQ(s.wire.size(), 29u + 4u * 2u);
  receiver::FecDecoder dec(9216, 1 << 20);
  // Window 0: places 0 and 7; window 1: one parity and one source; the partial window: 2.
  const std::set<size_t> lost = {0, 7, 10, 11 + 8, 30, 34};
  const auto got = decode(dec, s, lost);
  size_t sources = 0;
  for (size_t i = 0; i < s.wire.size(); ++i) {
    if (s.is_parity[i]) continue;
    ++sources;
    const uint64_t seq = common::peek_seq(s.wire[i].data());
    ASSERT_TRUE(got.count(seq)) << "wire " << i;
    EXPECT_EQ(got.at(seq), s.wire[i]) << "wire " << i;
  }
  EXPECT_EQ(sources, 29u);
  EXPECT_EQ(dec.counters().rebuilt, 5u);
  EXPECT_EQ(dec.open_windows(), 0u);  // every window finished and freed
}

// A sender that changes the geometry with every window (as a hostile one could): each window is
// still rebuilt, and the decoder keeps only a few codecs whatever the number of geometries.
TEST(FecWindows, EverNewGeometriesKeepAFewCodecs) {
  receiver::FecDecoder dec(9216, 1 << 20);
  for (unsigned k = 2; k < 14; ++k) {
    const Stream s = make_stream({k, 2, 1}, k, 40 + k, 100 * k);
    const auto got = decode(dec, s, {0, 1});  // two sources of the window lost
    EXPECT_EQ(got.size(), k) << "k " << k;
    EXPECT_LE(dec.codecs(), 4u);
  }
  EXPECT_EQ(dec.counters().rebuilt, 2u * 12u);
}

TEST(FecWindows, InterleaveSpreadsABurst) {
  const common::FecParams p{4, 2, 6};  // bursts of up to 12
  const Stream s = make_stream(p, 24 * 4, 2);
  receiver::FecDecoder dec(9216, 1 << 20);
  std::set<size_t> lost;
  for (size_t i = 40; i < 52; ++i) lost.insert(i);
  const auto got = decode(dec, s, lost);
  size_t sources = 0;
  for (size_t i = 0; i < s.wire.size(); ++i) sources += !s.is_parity[i];
  EXPECT_EQ(got.size(), sources);
  lost.insert(52);  // one more than the burst it is built for: some group is beyond repair
  receiver::FecDecoder dec2(9216, 1 << 20);
  EXPECT_LT(decode(dec2, s, lost).size(), sources);
}

TEST(FecWindows, RandomLossWithinTheBoundIsAlwaysRebuilt) {
  const common::FecParams p{16, 4, 3};
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    const Stream s = make_stream(p, 16 * 3 * 5 + rng() % 40, static_cast<uint32_t>(round));
    // Lose up to 4 packets of each group at random, parity included.
    std::set<size_t> lost;
    for (size_t i = 0; i < s.wire.size(); ++i) {
      if (rng() % 10 == 0) lost.insert(i);
    }
    receiver::FecDecoder dec(9216, 4 << 20);
    const auto got = decode(dec, s, lost);
    size_t sources = 0;
    for (size_t i = 0; i < s.wire.size(); ++i) sources += !s.is_parity[i];
    // Whatever was not rebuilt was in a group with more than 4 losses: count those groups.
    if (got.size() < sources) {
      EXPECT_GT(dec.counters().groups_lost + dec.open_windows(), 0u);
    }
    for (const auto& [seq, d] : got) {
      common::Packet pk;
      ASSERT_EQ(common::decode_packet(d, &pk), common::DecodeStatus::kOk);  // never garbage
    }
  }
}

TEST(FecWindows, MemoryIsBoundedAndOldWindowsAreGivenUp) {
  const common::FecParams p{8, 2, 1};
  const Stream s = make_stream(p, 8 * 200, 4);
  // Room for ~20 packets: windows whose parity never comes (all parity lost) are given up.
  receiver::FecDecoder dec(1100, 20 * 1100);
  std::set<size_t> lost;
  for (size_t i = 0; i < s.wire.size(); ++i) {
    if (s.is_parity[i]) lost.insert(i);
  }
  decode(dec, s, lost);
  EXPECT_LE(dec.open_windows(), 3u);
  EXPECT_GE(dec.counters().windows_no_parity, 197u);
}

TEST(FecWindows, AStragglerOlderThanEveryOpenWindowPushesNoneOut) {
  receiver::FecDecoder dec(1100, 1 << 20);
  auto none = [](std::span<const uint8_t>) {};
  for (uint64_t w = 0; w < receiver::FecDecoder::kMaxWindows; ++w) {
    const Datagram d = source(1000 + 8 * w, 0, 100, static_cast<uint32_t>(w));
    common::Packet p;
    ASSERT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
    ASSERT_TRUE(dec.add_source(p.header, d, none));
  }
  EXPECT_EQ(dec.open_windows(), receiver::FecDecoder::kMaxWindows);
  const Datagram old = source(3, 3, 100, 99);  // window 0: older than all 64
  common::Packet p;
  ASSERT_EQ(common::decode_packet(old, &p), common::DecodeStatus::kOk);
  EXPECT_TRUE(dec.add_source(p.header, old, none));  // handed on unprotected
  EXPECT_EQ(dec.open_windows(), receiver::FecDecoder::kMaxWindows);
  EXPECT_EQ(dec.counters().windows_no_parity, 0u);  // no newer window was given up for it
  const Datagram next = source(2000, 0, 100, 98);   // a newer window does push the oldest out
  ASSERT_EQ(common::decode_packet(next, &p), common::DecodeStatus::kOk);
  EXPECT_TRUE(dec.add_source(p.header, next, none));
  EXPECT_EQ(dec.counters().windows_no_parity, 1u);
}

TEST(FecWindows, ParityThatContradictsItsWindowIsDropped) {
  const common::FecParams p{8, 2, 1};
  const Stream s = make_stream(p, 8, 5);
  receiver::FecDecoder dec(9216, 1 << 20);
  common::Packet pk;
  ASSERT_EQ(common::decode_packet(s.wire[8], &pk), common::DecodeStatus::kOk);
  common::Parity pa;
  std::span<const uint8_t> shard;
  ASSERT_EQ(common::decode_parity(pk.payload, &pa, &shard), common::DecodeStatus::kOk);
  auto none = [](std::span<const uint8_t>) { FAIL() << "nothing may be rebuilt"; };
  dec.add_parity(pa, shard, none);
  common::Parity other = pa;
  other.k = 7;  // another geometry for the same window
  dec.add_parity(other, shard, none);
  EXPECT_EQ(dec.counters().bad_parity, 1u);
  other = pa;
  other.index = 1;
  dec.add_parity(other, shard.first(shard.size() - 1), none);  // a shard of another length
  EXPECT_EQ(dec.counters().bad_parity, 2u);
}

// A window's sources offered again (after a rebuilt announce) say which ones were rebuilt, so
// that the file that takes them counts its repairs (receiver/delivery/file_repairs.hpp).
TEST(FecWindows, ReplayTellsTheRebuiltSourcesFromTheReceivedOnes) {
  const common::FecParams p{4, 1, 2};  // a window of 8 sources in 2 groups of 4, 1 parity each
  const Stream s = make_stream(p, 8, 6);
  ASSERT_EQ(s.wire.size(), 10u);
  receiver::FecDecoder dec(9216, 1 << 20);
  size_t rebuilt = 0;
  auto count = [&](std::span<const uint8_t>) { ++rebuilt; };
  for (size_t i = 0; i < s.wire.size(); ++i) {
    if (i == 0 || i == 1) continue;  // place 0 (group 0) and place 1 (group 1) lost
    common::Packet pk;
    ASSERT_EQ(common::decode_packet(s.wire[i], &pk), common::DecodeStatus::kOk);
    if (!s.is_parity[i]) {
      EXPECT_TRUE(dec.add_source(pk.header, s.wire[i], count));
      continue;
    }
    common::Parity pa;
    std::span<const uint8_t> shard;
    ASSERT_EQ(common::decode_parity(pk.payload, &pa, &shard), common::DecodeStatus::kOk);
    if (pa.group == 0) dec.add_parity(pa, shard, count);  // group 1's parity is lost too
  }
  ASSERT_EQ(rebuilt, 1u);
  ASSERT_EQ(dec.open_windows(), 1u);  // group 1 still waits
  std::map<uint64_t, bool> offered;
  dec.replay(0, [&](std::span<const uint8_t> d, bool was_rebuilt) {
    offered[common::peek_seq(d.data())] = was_rebuilt;
  });
  ASSERT_EQ(offered.size(), 7u);
  for (const auto& [seq, was_rebuilt] : offered) EXPECT_EQ(was_rebuilt, seq == 0) << seq;
}

}  // namespace
}  // namespace ddft
