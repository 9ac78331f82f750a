#include "common/protocol.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ddft::common {
namespace {

Header header(uint64_t seq = 7) {
  Header h;
  h.session_id = 0x0123456789ABCDEFull;
  h.seq = seq;
  return h;
}

std::vector<uint8_t> announce_datagram(std::string_view path = "dir/file.txt") {
  std::vector<uint8_t> buf(kMaxDatagramSize);
  Announce a;
  a.file_id = 42;
  a.verify = VerifyType::kSha256;
  a.pause_s = 3;
  a.size = 104857600;
  a.mtime_ns = 1'700'000'000'123'456'789;
  a.mode = 0640;
  a.chunk_size = 8904;
  a.path = path;
  buf.resize(encode_announce(header(), a, buf));
  return buf;
}

TEST(Protocol, LittleEndianHelpers) {
  uint8_t b[8];
  store_le32(b, 0x11223344);
  EXPECT_EQ(b[0], 0x44);
  EXPECT_EQ(b[3], 0x11);
  EXPECT_EQ(load_le32(b), 0x11223344u);
  store_le64(b, 0x0102030405060708ull);
  EXPECT_EQ(b[0], 0x08);
  EXPECT_EQ(load_le64(b), 0x0102030405060708ull);
  store_le16(b, 0xBEEF);
  EXPECT_EQ(b[0], 0xEF);
  EXPECT_EQ(load_le16(b), 0xBEEF);
}

TEST(Protocol, HeaderLayoutIsFixed) {
  auto d = announce_datagram();
  // Magic "DDFT" in memory order, version, type, payload length.
  EXPECT_EQ(0, std::memcmp(d.data(), "DDFT", 4));
  EXPECT_EQ(d[4], kProtocolVersion);
  EXPECT_EQ(d[5], static_cast<uint8_t>(PacketType::kAnnounce));
  EXPECT_EQ(load_le16(&d[6]), d.size() - kHeaderSize);
  EXPECT_EQ(load_le64(&d[8]), 0x0123456789ABCDEFull);
  EXPECT_EQ(load_le64(&d[16]), 7u);
}

TEST(Protocol, AnnounceRoundTrip) {
  auto d = announce_datagram();
  Packet p;
  ASSERT_EQ(decode_packet(d, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.type, PacketType::kAnnounce);
  EXPECT_EQ(p.header.session_id, 0x0123456789ABCDEFull);
  EXPECT_EQ(p.header.seq, 7u);
  Announce a;
  ASSERT_EQ(decode_announce(p.payload, &a), DecodeStatus::kOk);
  EXPECT_EQ(a.file_id, 42u);
  EXPECT_EQ(a.verify, VerifyType::kSha256);
  EXPECT_EQ(a.pause_s, 3);
  EXPECT_EQ(a.size, 104857600u);
  EXPECT_EQ(a.mtime_ns, 1'700'000'000'123'456'789);
  EXPECT_EQ(a.mode, 0640u);
  EXPECT_EQ(a.chunk_size, 8904u);
  EXPECT_EQ(a.path, "dir/file.txt");
}

TEST(Protocol, DataRoundTripInPlace) {
  std::vector<uint8_t> buf(kDefaultPacketSize);
  const size_t data_len = kDefaultPacketSize - kHeaderSize - kDataHeaderSize;
  for (size_t i = 0; i < data_len; ++i) buf[kHeaderSize + kDataHeaderSize + i] = uint8_t(i * 7);
  const size_t n = encode_data_in_place(header(9), {5, 8904ull * 3}, data_len, buf);
  ASSERT_EQ(n, kDefaultPacketSize);
  Packet p;
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  DataHeader d;
  std::span<const uint8_t> data;
  ASSERT_EQ(decode_data(p.payload, &d, &data), DecodeStatus::kOk);
  EXPECT_EQ(d.file_id, 5u);
  EXPECT_EQ(d.offset, 8904u * 3);
  ASSERT_EQ(data.size(), data_len);
  EXPECT_EQ(data[100], uint8_t(700));
}

TEST(Protocol, EndAbortHeartbeatRoundTrip) {
  std::vector<uint8_t> buf(512);
  End e;
  e.file_id = 3;
  e.verify = VerifyType::kB2B;
  e.size = 12345;
  e.key_len = 16;
  for (int i = 0; i < 16; ++i) e.key[i] = uint8_t(i + 1);
  size_t n = encode_end(header(), e, buf);
  Packet p;
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  End e2;
  ASSERT_EQ(decode_end(p.payload, &e2), DecodeStatus::kOk);
  EXPECT_EQ(e2.size, 12345u);
  EXPECT_EQ(e2.key_len, 16);
  EXPECT_EQ(e2.key[15], 16);

  Abort a{9, "read error"};
  n = encode_abort(header(), a, buf);
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  Abort a2;
  ASSERT_EQ(decode_abort(p.payload, &a2), DecodeStatus::kOk);
  EXPECT_EQ(a2.file_id, 9u);
  EXPECT_EQ(a2.reason, "read error");

  Heartbeat hb{kHeartbeatFinal, 1000, 77, 4};
  n = encode_heartbeat(header(), hb, buf);
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  Heartbeat hb2;
  ASSERT_EQ(decode_heartbeat(p.payload, &hb2), DecodeStatus::kOk);
  EXPECT_EQ(hb2.flags, kHeartbeatFinal);
  EXPECT_EQ(hb2.packets_sent, 77u);
  EXPECT_EQ(hb2.files_announced, 4u);
}

TEST(Protocol, FecFieldsCopiesAndParityRoundTrip) {
  std::vector<uint8_t> buf(2048);
  Header h = header(1000);
  h.flags = kFlagFec;
  h.fec_pos = 513;
  End e;
  e.file_id = 3;
  e.size = 1;
  e.key_len = 16;
  e.copy = 1;
  e.copies = 3;
  size_t n = encode_end(h, e, buf);
  Packet p;
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.flags, kFlagFec);
  EXPECT_EQ(p.header.fec_pos, 513);
  EXPECT_EQ(load_le16(&buf[26]), 513);  // the header's place for it
  End e2;
  ASSERT_EQ(decode_end(p.payload, &e2), DecodeStatus::kOk);
  EXPECT_EQ(e2.copy, 1);
  EXPECT_EQ(e2.copies, 3);
  buf[kHeaderSize + 6] = 3;  // copy 3 of 3 does not exist
  reseal({buf.data(), n});
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  EXPECT_EQ(decode_end(p.payload, &e2), DecodeStatus::kBadPayload);

  const std::vector<uint8_t> shard(700, 0x5A);
  Parity pa{123456789, 40, 32, 4, 2, 1, 3};
  n = encode_parity(header(2000), pa, shard, buf);
  ASSERT_EQ(n, kFecOverhead + 700);
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.type, PacketType::kParity);
  Parity pb;
  std::span<const uint8_t> got;
  ASSERT_EQ(decode_parity(p.payload, &pb, &got), DecodeStatus::kOk);
  EXPECT_EQ(pb.window_seq, 123456789u);
  EXPECT_EQ(pb.count, 40);
  EXPECT_EQ(pb.k, 32);
  EXPECT_EQ(pb.m, 4);
  EXPECT_EQ(pb.interleave, 2);
  EXPECT_EQ(pb.group, 1);
  EXPECT_EQ(pb.index, 3);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), shard.begin(), shard.end()));
  // Geometry that cannot be: each is refused.
  for (Parity bad : {Parity{1, 40, 32, 4, 1, 1, 0}, Parity{1, 65, 32, 4, 2, 0, 0},
                     Parity{1, 4, 32, 4, 2, 0, 4}, Parity{1, 4, 0, 4, 1, 0, 0},
                     Parity{1, 4, 250, 10, 1, 0, 0}, Parity{1, 0, 32, 4, 1, 0, 0}}) {
    n = encode_parity(header(), bad, shard, buf);
    ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
    EXPECT_EQ(decode_parity(p.payload, &pb, &got), DecodeStatus::kBadPayload)
        << int(bad.k) << ":" << int(bad.m) << " x" << int(bad.interleave) << " count "
        << bad.count << " group " << int(bad.group) << " index " << int(bad.index);
  }
}

TEST(Protocol, RejectsTruncation) {
  auto d = announce_datagram();
  Packet p;
  for (size_t len : {size_t{0}, size_t{1}, kHeaderSize - 1}) {
    EXPECT_EQ(decode_packet({d.data(), len}, &p), DecodeStatus::kTooShort) << len;
  }
  for (size_t len = kHeaderSize; len < d.size(); ++len) {
    EXPECT_EQ(decode_packet({d.data(), len}, &p), DecodeStatus::kBadLength) << len;
  }
}

TEST(Protocol, RejectsBadLengthField) {
  auto d = announce_datagram();
  store_le16(&d[6], static_cast<uint16_t>(load_le16(&d[6]) + 1));
  Packet p;
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kBadLength);
}

TEST(Protocol, EverySingleBitFlipIsCaught) {
  const auto good = announce_datagram();
  Packet p;
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      auto d = good;
      d[byte] ^= uint8_t(1u << bit);
      EXPECT_NE(decode_packet(d, &p), DecodeStatus::kOk) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(Protocol, RejectsMagicVersionChecksumType) {
  Packet p;
  auto d = announce_datagram();
  d[0] = 'X';
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kBadMagic);
  d = announce_datagram();
  d[4] = 99;
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kBadVersion);
  d = announce_datagram();
  d[kHeaderSize + 10] ^= 0xFF;
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kBadChecksum);
  d = announce_datagram();
  d[5] = 77;
  reseal(d);
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kBadType);
}

TEST(Protocol, RejectsMalformedPayloads) {
  std::vector<uint8_t> buf(256);
  Announce a;
  EXPECT_EQ(decode_announce({buf.data(), 10}, &a), DecodeStatus::kBadPayload);
  // Path length that disagrees with the payload, and a zero chunk size.
  auto d = announce_datagram();
  Packet p;
  ASSERT_EQ(decode_packet(d, &p), DecodeStatus::kOk);
  std::vector<uint8_t> payload(p.payload.begin(), p.payload.end());
  store_le16(&payload[6], 999);
  EXPECT_EQ(decode_announce(payload, &a), DecodeStatus::kBadPayload);
  payload.assign(p.payload.begin(), p.payload.end());
  store_le32(&payload[28], 0);
  EXPECT_EQ(decode_announce(payload, &a), DecodeStatus::kBadPayload);
  store_le32(&payload[28], kMinChunkSize - 1);  // would make the receiver's bitmap huge
  EXPECT_EQ(decode_announce(payload, &a), DecodeStatus::kBadPayload);
  payload.assign(p.payload.begin(), p.payload.end());
  payload[4] = 9;  // unknown verification type
  EXPECT_EQ(decode_announce(payload, &a), DecodeStatus::kBadPayload);
  // End with a key length that does not match its type.
  End e;
  std::vector<uint8_t> end(kEndFixedSize + 16, 0);
  end[4] = static_cast<uint8_t>(VerifyType::kSha256);
  end[5] = 16;
  EXPECT_EQ(decode_end(end, &e), DecodeStatus::kBadPayload);
  Heartbeat hb;
  EXPECT_EQ(decode_heartbeat({buf.data(), kHeartbeatSize - 1}, &hb), DecodeStatus::kBadPayload);
  DataHeader dh;
  std::span<const uint8_t> data;
  EXPECT_EQ(decode_data({buf.data(), kDataHeaderSize - 1}, &dh, &data), DecodeStatus::kBadPayload);
}

TEST(Protocol, EncodersRefuseSmallBuffers) {
  std::vector<uint8_t> small(40);
  Announce a;
  a.chunk_size = 1;
  a.path = "a-rather-long-name-that-does-not-fit.txt";
  EXPECT_EQ(encode_announce(header(), a, small), 0u);
  EXPECT_EQ(encode_data_in_place(header(), {1, 0}, 100, small), 0u);
}

TEST(Protocol, VerifyTypeNames) {
  VerifyType v;
  EXPECT_TRUE(parse_verify_type("B2B", &v));
  EXPECT_EQ(v, VerifyType::kB2B);
  EXPECT_TRUE(parse_verify_type("sha256", &v));
  EXPECT_EQ(v, VerifyType::kSha256);
  EXPECT_TRUE(parse_verify_type("NONE", &v));
  EXPECT_EQ(v, VerifyType::kNone);
  EXPECT_FALSE(parse_verify_type("md5", &v));
  EXPECT_EQ(verify_type_name(VerifyType::kB2B), "B2B");
  EXPECT_EQ(digest_size(VerifyType::kSha256), 32u);
}

}  // namespace
}  // namespace ddft::common
