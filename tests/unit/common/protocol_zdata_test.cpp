// kZData: the compressed piece of a block (--compress), its layout and its bounds.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/protocol.hpp"

namespace ddft::common {
namespace {

Header zheader() {
  Header h;
  h.session_id = 0x1122334455667788ull;
  h.seq = 0x0102030405060708ull;
  return h;
}

ZDataHeader zfields() {
  ZDataHeader z;
  z.file_id = 7;
  z.copy = 1;
  z.offset = 3 * 8904;
  z.raw_len = 117 * 8904;
  z.frame_len = 1000;
  z.frame_off = 0;
  return z;
}

// Encodes a piece of `len` bytes 'p' with the fields `z`.
std::vector<uint8_t> zdatagram(const ZDataHeader& z, size_t len) {
  std::vector<uint8_t> buf(kHeaderSize + kZDataHeaderSize + len);
  std::memset(zdata_bytes_of(buf.data()), 'p', len);
  buf.resize(encode_zdata_in_place(zheader(), z, len, buf));
  return buf;
}

TEST(ProtocolGolden, ZData) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x08, 0x1F, 0x00,                          // 4 version 1, type 8, payload_len 31
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags, fec_pos
  };
  std::vector<uint8_t> buf(256, 0xEE);  // reserved bytes must be written, not left as found
  ZDataHeader z = zfields();
  z.frame_off = 997;
  std::memcpy(zdata_bytes_of(buf.data()), "xyz", 3);
  buf.resize(encode_zdata_in_place(zheader(), z, 3, buf));
  ASSERT_EQ(buf.size(), kHeaderSize + kZDataHeaderSize + 3);
  for (size_t i = 0; i < 28; ++i) EXPECT_EQ(int{buf[i]}, int{want[i]}) << "byte " << i;
  const std::vector<uint8_t> payload = {
      0x07, 0x00, 0x00, 0x00,                          // +0 file_id 7
      0x01, 0x01, 0x00, 0x00,                          // +4 copy 1, codec zstd, reserved
      0x58, 0x68, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // +8 offset 26712 (3 x 8904)
      0x68, 0xE5, 0x0F, 0x00,                          // +16 raw_len 1041768 (117 x 8904)
      0xE8, 0x03, 0x00, 0x00,                          // +20 frame_len 1000
      0xE5, 0x03, 0x00, 0x00,                          // +24 frame_off 997
      'x',  'y',  'z',                                 // +28 the piece
  };
  for (size_t i = 0; i < payload.size(); ++i) {
    EXPECT_EQ(int{buf[kHeaderSize + i]}, int{payload[i]}) << "payload byte " << i;
  }
  Packet p;
  ASSERT_EQ(decode_packet(buf, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.type, PacketType::kZData);
  ZDataHeader got;
  std::span<const uint8_t> piece;
  ASSERT_EQ(decode_zdata(p.payload, &got, &piece), DecodeStatus::kOk);
  EXPECT_EQ(got.file_id, 7u);
  EXPECT_EQ(got.copy, 1);
  EXPECT_EQ(got.codec, kCodecZstd);
  EXPECT_EQ(got.offset, 26712u);
  EXPECT_EQ(got.raw_len, 1041768u);
  EXPECT_EQ(got.frame_len, 1000u);
  EXPECT_EQ(got.frame_off, 997u);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(piece.data()), piece.size()), "xyz");
}

TEST(Protocol, ZDataRefusesPiecesOutOfBounds) {
  const auto status = [](const ZDataHeader& z, size_t len) {
    const std::vector<uint8_t> d = zdatagram(z, len);
    Packet p;
    EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kOk);
    ZDataHeader got;
    std::span<const uint8_t> piece;
    return decode_zdata(p.payload, &got, &piece);
  };
  EXPECT_EQ(status(zfields(), 100), DecodeStatus::kOk);
  ZDataHeader z = zfields();
  z.codec = 2;  // no such codec
  EXPECT_EQ(status(z, 100), DecodeStatus::kBadPayload);
  z = zfields();
  z.raw_len = 0;
  EXPECT_EQ(status(z, 100), DecodeStatus::kBadPayload);
  z = zfields();
  z.raw_len = static_cast<uint32_t>(kMaxZBlockSize + 1);  // more than a receiver sets aside
  EXPECT_EQ(status(z, 100), DecodeStatus::kBadPayload);
  z = zfields();
  z.raw_len = 999;  // a frame longer than its block is never sent
  EXPECT_EQ(status(z, 100), DecodeStatus::kBadPayload);
  z = zfields();
  z.frame_len = 0;
  EXPECT_EQ(status(z, 1), DecodeStatus::kBadPayload);
  z = zfields();
  z.frame_off = 1000;  // at the frame's end
  EXPECT_EQ(status(z, 1), DecodeStatus::kBadPayload);
  z = zfields();
  z.frame_off = 950;  // the piece runs past the frame
  EXPECT_EQ(status(z, 51), DecodeStatus::kBadPayload);
  EXPECT_EQ(status(z, 50), DecodeStatus::kOk);
  EXPECT_EQ(status(zfields(), 0), DecodeStatus::kBadPayload);  // no piece at all
}

TEST(Protocol, ZDataEncoderRefusesASmallBuffer) {
  std::vector<uint8_t> buf(kHeaderSize + kZDataHeaderSize + 9);
  EXPECT_EQ(encode_zdata_in_place(zheader(), zfields(), 10, buf), 0u);
  EXPECT_EQ(encode_zdata_in_place(zheader(), zfields(), 9, buf), buf.size());
}

TEST(Protocol, ZDataSizes) {
  // A piece fills what a data packet's chunk fills, less the longer header.
  EXPECT_EQ(zdata_piece_size(8904), 8904u - 12u);
  EXPECT_EQ(kHeaderSize + kZDataHeaderSize + zdata_piece_size(8904), data_datagram_size(8904));
  // A block goes compressed only when its frame saves at least 1/32 of it.
  EXPECT_EQ(zdata_frame_limit(32 * 1000), 31 * 1000 - 1);
}

}  // namespace
}  // namespace ddft::common
