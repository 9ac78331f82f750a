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

TEST(Protocol, FileIdsWrapToOneAndKeepTheirOrderAcrossTheWrap) {
  EXPECT_EQ(next_file_id(1), 2u);
  EXPECT_EQ(next_file_id(UINT32_MAX), 1u);
  EXPECT_TRUE(file_id_before(1, 2));
  EXPECT_FALSE(file_id_before(2, 1));
  EXPECT_FALSE(file_id_before(7, 7));
  EXPECT_TRUE(file_id_before(UINT32_MAX, 1));
  EXPECT_TRUE(file_id_before(UINT32_MAX - 5, 3));
  EXPECT_FALSE(file_id_before(3, UINT32_MAX - 5));
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
  EXPECT_EQ(hb2.lane, 0);
  EXPECT_EQ(hb2.lanes, 1);

  // A heartbeat of lane 2 of 4 says so; the old reserved word carries it.
  hb.lane = 2;
  hb.lanes = 4;
  n = encode_heartbeat(header(), hb, buf);
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  EXPECT_EQ(load_le16(p.payload.data() + 20), 2);
  EXPECT_EQ(load_le16(p.payload.data() + 22), 4);
  ASSERT_EQ(decode_heartbeat(p.payload, &hb2), DecodeStatus::kOk);
  EXPECT_EQ(hb2.lane, 2);
  EXPECT_EQ(hb2.lanes, 4);

  // Flag bits pass as they are, the sleeping one and those no receiver knows yet: a receiver
  // tests the bits it knows, so one that predates a bit ignores it.
  hb.flags = kHeartbeatSleeping | 0x80000000u;
  n = encode_heartbeat(header(), hb, buf);
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  ASSERT_EQ(decode_heartbeat(p.payload, &hb2), DecodeStatus::kOk);
  EXPECT_EQ(hb2.flags, kHeartbeatSleeping | 0x80000000u);
  EXPECT_EQ(hb2.flags & kHeartbeatFinal, 0u);
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
        << int(bad.k) << ":" << int(bad.m) << " x" << int(bad.interleave) << " count " << bad.count
        << " group " << int(bad.group) << " index " << int(bad.index);
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

// A file-list entry whose path and key live in the test's strings.
FileListEntry list_entry(uint32_t id, std::string_view path, VerifyType v, bool aborted = false) {
  FileListEntry e;
  e.file_id = id;
  e.size = 1000ull * id + 7;
  e.verify = v;
  e.aborted = aborted;
  e.key_len = aborted ? 0 : static_cast<uint8_t>(digest_size(v));
  for (size_t i = 0; i < e.key_len; ++i) e.key[i] = static_cast<uint8_t>(id * 31 + i);
  e.path = path;
  return e;
}

// The payload of a valid two-entry list (B2B, then an aborted SHA256 file), for the malformed
// cases to damage.
std::vector<uint8_t> list_payload() {
  const FileListEntry entries[] = {list_entry(1, "a.bin", VerifyType::kB2B),
                                   list_entry(2, "dir/b.bin", VerifyType::kSha256, true)};
  std::vector<uint8_t> buf(1024);
  size_t taken = 0;
  buf.resize(encode_file_list(header(), 0, entries, buf, &taken));
  EXPECT_EQ(taken, 2u);
  return std::vector<uint8_t>(buf.begin() + kHeaderSize, buf.end());
}

TEST(Protocol, FileListRoundTrip) {
  const FileListEntry entries[] = {
      list_entry(1, "a.bin", VerifyType::kB2B), list_entry(2, "dir/b.bin", VerifyType::kSha256),
      list_entry(3, "c", VerifyType::kNone), list_entry(4, "torn.log", VerifyType::kSha256, true)};
  std::vector<uint8_t> buf(kDefaultPacketSize);
  size_t taken = 0;
  Header h = header(99);
  h.flags = kFlagFec;
  h.fec_pos = 5;
  const size_t n = encode_file_list(h, kListComplete, entries, buf, &taken);
  ASSERT_EQ(taken, 4u);
  // Header, list header, four entries with their keys and paths, nothing else.
  EXPECT_EQ(n, kHeaderSize + kFileListFixedSize + 4 * kFileListEntryFixedSize + 16 + 32 + 0 + 0 +
                   5 + 9 + 1 + 8);
  Packet p;
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.type, PacketType::kFileList);
  EXPECT_EQ(p.header.seq, 99u);
  EXPECT_EQ(p.header.flags, kFlagFec);
  EXPECT_EQ(p.header.fec_pos, 5);
  // The byte layout of the spec: flags, count, reserved, then the first entry.
  const uint8_t* q = p.payload.data();
  EXPECT_EQ(load_le16(q), kListComplete);
  EXPECT_EQ(load_le16(q + 2), 4);
  EXPECT_EQ(load_le32(q + 4), 0u);
  EXPECT_EQ(load_le32(q + 8), 1u);
  EXPECT_EQ(load_le64(q + 12), 1007u);
  EXPECT_EQ(q[20], static_cast<uint8_t>(VerifyType::kB2B));
  EXPECT_EQ(q[21], 0);
  EXPECT_EQ(q[22], 16);
  EXPECT_EQ(load_le16(q + 24), 5);
  EXPECT_EQ(0, std::memcmp(q + 26 + 16, "a.bin", 5));
  FileList list;
  ASSERT_EQ(decode_file_list(p.payload, &list), DecodeStatus::kOk);
  EXPECT_EQ(list.flags, kListComplete);
  ASSERT_EQ(list.entries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const FileListEntry& got = list.entries[i];
    const FileListEntry& want = entries[i];
    EXPECT_EQ(got.file_id, want.file_id) << i;
    EXPECT_EQ(got.size, want.size) << i;
    EXPECT_EQ(got.verify, want.verify) << i;
    EXPECT_EQ(got.aborted, want.aborted) << i;
    EXPECT_EQ(got.key_len, want.key_len) << i;
    EXPECT_EQ(got.key, want.key) << i;
    EXPECT_EQ(got.path, want.path) << i;
    // Views into the datagram, not copies.
    EXPECT_GE(reinterpret_cast<const uint8_t*>(got.path.data()), p.payload.data());
    EXPECT_LE(reinterpret_cast<const uint8_t*>(got.path.data() + got.path.size()),
              p.payload.data() + p.payload.size());
  }
  EXPECT_EQ(list.entries[3].key_len, 0);  // aborted: no digest
  // A decoder given a FileList that held entries replaces them.
  ASSERT_EQ(decode_file_list(list_payload(), &list), DecodeStatus::kOk);
  EXPECT_EQ(list.entries.size(), 2u);
  EXPECT_EQ(list.flags, 0);
}

TEST(Protocol, FileListEntryCarriesItsLane) {
  FileListEntry entries[] = {list_entry(1, "a", VerifyType::kB2B),
                             list_entry(2, "b", VerifyType::kB2B),
                             list_entry(3, "c", VerifyType::kB2B)};
  entries[1].lane = 5;
  entries[2].lane = kLaneAll;
  std::vector<uint8_t> buf(kDefaultPacketSize);
  size_t taken = 0;
  const size_t n = encode_file_list(header(), 0, entries, buf, &taken);
  ASSERT_EQ(taken, 3u);
  Packet p;
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  // Byte 15 of an entry: 0 not said, lane + 1, 0xFF striped.
  EXPECT_EQ(p.payload[kFileListFixedSize + 15], 0);
  FileList list;
  ASSERT_EQ(decode_file_list(p.payload, &list), DecodeStatus::kOk);
  ASSERT_EQ(list.entries.size(), 3u);
  EXPECT_EQ(list.entries[0].lane, kLaneUnsaid);
  EXPECT_EQ(list.entries[1].lane, 5);
  EXPECT_EQ(list.entries[2].lane, kLaneAll);
}

TEST(Protocol, LongFileListSplitsOverDatagrams) {
  // 1000 files with paths of 20 to 219 bytes, SHA-256 keys: far more than one datagram holds.
  std::vector<std::string> paths;
  for (int i = 0; i < 1000; ++i) {
    paths.push_back("d" + std::to_string(i) + "/" +
                    std::string(static_cast<size_t>(i % 200 + 15), 'p'));
  }
  std::vector<FileListEntry> entries;
  for (size_t i = 0; i < paths.size(); ++i) {
    entries.push_back(
        list_entry(static_cast<uint32_t>(i + 1), paths[i], VerifyType::kSha256, i % 97 == 0));
  }
  std::vector<uint8_t> buf(1400);
  std::span<const FileListEntry> rest(entries);
  std::vector<FileListEntry> got;
  std::vector<std::vector<uint8_t>> datagrams;  // owns what `got` points into
  while (!rest.empty()) {
    size_t taken = 0;
    const size_t n = encode_file_list(header(), kListComplete, rest, buf, &taken);
    ASSERT_GT(n, 0u);
    ASSERT_GE(taken, 1u);
    ASSERT_LE(n, buf.size());
    // Full: the next entry would not have fit.
    if (taken < rest.size()) {
      EXPECT_GT(n + kFileListEntryFixedSize + rest[taken].key_len + rest[taken].path.size(),
                buf.size());
    }
    datagrams.emplace_back(buf.begin(), buf.begin() + static_cast<long>(n));
    rest = rest.subspan(taken);
  }
  EXPECT_GT(datagrams.size(), 100u);
  for (const auto& d : datagrams) {
    Packet p;
    ASSERT_EQ(decode_packet(d, &p), DecodeStatus::kOk);
    FileList list;
    ASSERT_EQ(decode_file_list(p.payload, &list), DecodeStatus::kOk);  // each self-contained
    EXPECT_EQ(list.flags, kListComplete);
    got.insert(got.end(), list.entries.begin(), list.entries.end());
  }
  ASSERT_EQ(got.size(), entries.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].file_id, entries[i].file_id);
    EXPECT_EQ(got[i].aborted, entries[i].aborted);
    EXPECT_EQ(got[i].key, entries[i].key);
    EXPECT_EQ(got[i].path, entries[i].path);
  }
}

TEST(Protocol, FileListEncoderRefusesWhatTheDecoderWould) {
  std::vector<uint8_t> buf(2048);
  size_t taken = 7;
  EXPECT_EQ(encode_file_list(header(), 0, {}, buf, &taken), 0u);
  EXPECT_EQ(taken, 0u);
  const std::string long_path(kMaxPathSize + 1, 'x');
  FileListEntry wrong_key = list_entry(1, "a", VerifyType::kB2B);
  wrong_key.key_len = 32;
  FileListEntry aborted_with_key = list_entry(1, "a", VerifyType::kB2B);
  aborted_with_key.aborted = true;
  FileListEntry bad_verify = list_entry(1, "a", VerifyType::kB2B);
  bad_verify.verify = static_cast<VerifyType>(9);
  for (const FileListEntry& bad :
       {list_entry(1, "", VerifyType::kB2B), list_entry(1, long_path, VerifyType::kNone), wrong_key,
        aborted_with_key, bad_verify}) {
    const FileListEntry two[] = {bad, list_entry(2, "b", VerifyType::kB2B)};
    EXPECT_EQ(encode_file_list(header(), 0, two, buf, &taken), 0u);
    EXPECT_EQ(taken, 0u);
    // After a good entry, the bad one ends the datagram.
    const FileListEntry after[] = {list_entry(2, "b", VerifyType::kB2B), bad};
    EXPECT_GT(encode_file_list(header(), 0, after, buf, &taken), 0u);
    EXPECT_EQ(taken, 1u);
  }
  // Too small for the one entry: nothing; for the header alone: nothing.
  const FileListEntry one[] = {list_entry(1, "abc", VerifyType::kSha256)};
  const size_t need = kHeaderSize + kFileListFixedSize + kFileListEntryFixedSize + 32 + 3;
  EXPECT_EQ(encode_file_list(header(), 0, one, std::span(buf).first(need - 1), &taken), 0u);
  EXPECT_EQ(taken, 0u);
  EXPECT_EQ(encode_file_list(header(), 0, one, std::span(buf).first(need), &taken), need);
  EXPECT_EQ(taken, 1u);
  EXPECT_EQ(encode_file_list(header(), 0, one, std::span(buf).first(10), &taken), 0u);
}

TEST(Protocol, RejectsMalformedFileLists) {
  FileList list;
  const std::vector<uint8_t> good = list_payload();
  ASSERT_EQ(decode_file_list(good, &list), DecodeStatus::kOk);
  // Entry 0 starts at 8 (key 16, path 5), entry 1 at 8 + 18 + 16 + 5 = 47 (aborted, path 9).
  constexpr size_t e0 = kFileListFixedSize;
  constexpr size_t e1 = e0 + kFileListEntryFixedSize + 16 + 5;
  ASSERT_EQ(good.size(), e1 + kFileListEntryFixedSize + 9);
  auto damaged = [&](auto&& change) {
    std::vector<uint8_t> b = good;
    change(b);
    return decode_file_list(b, &list);
  };
  // Count 0, and counts that do not match the entries.
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[2], 0); }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[2], 1); }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[2], 3); }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[2], 0xFFFF); }), DecodeStatus::kBadPayload);
  // Trailing bytes after the last entry.
  EXPECT_EQ(damaged([](auto& b) { b.push_back(0); }), DecodeStatus::kBadPayload);
  // Path lengths: 0, too long for the payload, beyond kMaxPathSize.
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[e1 + 16], 0); }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[e1 + 16], 10); }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { store_le16(&b[e0 + 16], 4); }), DecodeStatus::kBadPayload);
  {
    // A path of kMaxPathSize + 1 bytes that does fill the payload.
    std::vector<uint8_t> b(good.begin(), good.begin() + static_cast<long>(e1));
    store_le16(&b[2], 1);
    b.resize(e0 + kFileListEntryFixedSize + 16);
    store_le16(&b[e0 + 16], static_cast<uint16_t>(kMaxPathSize + 1));
    b.resize(b.size() + kMaxPathSize + 1, 'x');
    EXPECT_EQ(decode_file_list(b, &list), DecodeStatus::kBadPayload);
    store_le16(&b[e0 + 16], static_cast<uint16_t>(kMaxPathSize));
    b.pop_back();
    EXPECT_EQ(decode_file_list(b, &list), DecodeStatus::kOk);  // the longest accepted
  }
  // Key lengths that do not match the verify type (and the paths' bytes shift with them).
  EXPECT_EQ(damaged([](auto& b) { b[e0 + 14] = 32; }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { b[e0 + 14] = 0; }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { b[e0 + 12] = static_cast<uint8_t>(VerifyType::kSha256); }),
            DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { b[e0 + 12] = static_cast<uint8_t>(VerifyType::kNone); }),
            DecodeStatus::kBadPayload);
  // An aborted file with a key, and entry 1 (aborted) not aborted without a key.
  EXPECT_EQ(damaged([](auto& b) { b[e0 + 13] = kListAborted; }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { b[e1 + 13] = 0; }), DecodeStatus::kBadPayload);
  // Unknown verification types.
  EXPECT_EQ(damaged([](auto& b) { b[e1 + 12] = 3; }), DecodeStatus::kBadPayload);
  EXPECT_EQ(damaged([](auto& b) { b[e1 + 12] = 0xFF; }), DecodeStatus::kBadPayload);
  // Reserved fields and unknown flag bits are ignored (room to grow).
  EXPECT_EQ(damaged([](auto& b) {
              store_le16(&b[0], 0x8000);
              store_le32(&b[4], 0xFFFFFFFF);
              b[e0 + 15] = 0xFF;
              b[e1 + 13] |= 0x80;
            }),
            DecodeStatus::kOk);
  EXPECT_EQ(list.flags, 0x8000);
  EXPECT_TRUE(list.entries[1].aborted);
  // Every truncation is refused, never read past.
  for (size_t len = 0; len < good.size(); ++len) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(len));
    EXPECT_EQ(decode_file_list(cut, &list), DecodeStatus::kBadPayload) << len;
  }
  // And through decode_packet: type 7 is a known type now, 8 (kZData) and 9 (kSenderInfo) too,
  // type 10 is not.
  std::vector<uint8_t> d(kHeaderSize + good.size());
  std::memcpy(d.data() + kHeaderSize, good.data(), good.size());
  store_le32(d.data(), kMagic);
  d[4] = kProtocolVersion;
  d[5] = 7;
  store_le16(&d[6], static_cast<uint16_t>(good.size()));
  reseal(d);
  Packet p;
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kOk);
  d[5] = static_cast<uint8_t>(kMaxPacketType + 1);
  reseal(d);
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kBadType);
}

TEST(Protocol, RepeatedAnnounceCarriesItsFlag) {
  std::vector<uint8_t> buf(512);
  Header h = header(500);
  h.flags = kFlagRepeat | kFlagFec;
  Announce a;
  a.file_id = 3;
  a.chunk_size = 8904;
  a.size = 50 << 20;
  a.path = "big.iso";
  const size_t n = encode_announce(h, a, buf);
  Packet p;
  ASSERT_EQ(decode_packet({buf.data(), n}, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.flags, kFlagRepeat | kFlagFec);
  EXPECT_EQ(load_le16(&buf[24]), 8 | 1);  // bit 3 of the header's flags
  Announce got;
  ASSERT_EQ(decode_announce(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.path, "big.iso");
}

// Golden bytes: one datagram of each type, encoded from fixed field values and compared with the
// bytes written out below from the diagram in common/protocol.hpp; each literal also decodes
// back to the same fields. A change to the layout must break these tests: that is their point.
// Every literal but the checksum (header bytes 28..31, XXH3 as described in protocol.hpp) was
// written by hand from the diagram.
//
// Every golden header: session_id 0x1122334455667788, seq 0x0102030405060708.
constexpr uint64_t kGoldenSession = 0x1122334455667788ull;
constexpr uint64_t kGoldenSeq = 0x0102030405060708ull;

Header golden_header(uint16_t flags = 0, uint16_t fec_pos = 0) {
  Header h;
  h.session_id = kGoldenSession;
  h.seq = kGoldenSeq;
  h.flags = flags;
  h.fec_pos = fec_pos;
  return h;
}

// Compares byte by byte, so that a failure names the offset that moved.
void expect_bytes(std::span<const uint8_t> got, std::span<const uint8_t> want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(int{got[i]}, int{want[i]}) << "byte " << i;
  }
}

// Decodes a golden datagram and checks the fixed header fields.
Packet decode_golden(std::span<const uint8_t> d, PacketType type, uint16_t flags = 0,
                     uint16_t fec_pos = 0) {
  Packet p;
  EXPECT_EQ(decode_packet(d, &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.version, kProtocolVersion);
  EXPECT_EQ(p.header.type, type);
  EXPECT_EQ(p.header.payload_len, d.size() - kHeaderSize);
  EXPECT_EQ(p.header.session_id, kGoldenSession);
  EXPECT_EQ(p.header.seq, kGoldenSeq);
  EXPECT_EQ(p.header.flags, flags);
  EXPECT_EQ(p.header.fec_pos, fec_pos);
  return p;
}

TEST(ProtocolGolden, Announce) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x01, 0x25, 0x00,                          // 4 version 1, type 1, payload_len 37
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x08, 0x00, 0x00, 0x00,                          // 24 flags kFlagRepeat, fec_pos 0
      0x6C, 0x78, 0xE6, 0xA3,                          // 28 checksum
      0x0D, 0x0C, 0x0B, 0x0A,                          // +0 file_id 0x0A0B0C0D
      0x02, 0x03, 0x05, 0x00,                          // +4 verify SHA256, pause_s 3, path_len 5
      0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,  // +8 size 0x100000002
      0x1E, 0x1D, 0x1C, 0x1B, 0x1A, 0x19, 0x18, 0x17,  // +16 mtime_ns 0x1718191A1B1C1D1E
      0xA4, 0x01, 0x00, 0x00,                          // +24 mode 0644
      0xC8, 0x22, 0x00, 0x00,                          // +28 chunk_size 8904
      'a',  '/',  'b',  '.',  'c',                     // +32 path
  };
  Announce a;
  a.file_id = 0x0A0B0C0D;
  a.verify = VerifyType::kSha256;
  a.pause_s = 3;
  a.size = 0x100000002ull;
  a.mtime_ns = 0x1718191A1B1C1D1Ell;
  a.mode = 0644;
  a.chunk_size = 8904;
  a.path = "a/b.c";
  std::vector<uint8_t> buf(256);
  buf.resize(encode_announce(golden_header(kFlagRepeat), a, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kAnnounce, kFlagRepeat);
  Announce got;
  ASSERT_EQ(decode_announce(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.file_id, a.file_id);
  EXPECT_EQ(got.verify, a.verify);
  EXPECT_EQ(got.pause_s, a.pause_s);
  EXPECT_EQ(got.size, a.size);
  EXPECT_EQ(got.mtime_ns, a.mtime_ns);
  EXPECT_EQ(got.mode, a.mode);
  EXPECT_EQ(got.chunk_size, a.chunk_size);
  EXPECT_EQ(got.path, a.path);
}

TEST(ProtocolGolden, SenderInfo) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x09, 0x0F, 0x00,                          // 4 version 1, type 9, payload_len 15
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags 0, fec_pos 0
      0x2B, 0xF5, 0x7A, 0x14,                          // 28 checksum
      0x0F, 0x0E, 0x0D, 0x0C, 0x0B, 0x0A, 0x09, 0x08,  // +0 sender_id 0x08090A0B0C0D0E0F
      0x03, 0x00, 0x00, 0x00,                          // +8 lanes 3, reserved
      0x00, 0x00, 0x02,                                // +12 hosts: lanes 0 and 1 on one host
  };
  std::vector<uint8_t> buf(256, 0xEE);
  buf.resize(encode_sender_info(golden_header(), {0x08090A0B0C0D0E0Full, {0, 0, 2}, {}}, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kSenderInfo);
  SenderInfo got;
  ASSERT_EQ(decode_sender_info(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.sender_id, 0x08090A0B0C0D0E0Full);
  EXPECT_EQ(got.host, (std::vector<uint8_t>{0, 0, 2}));
}

TEST(Protocol, SenderInfoBoundsAndLaterFieldsIgnored) {
  std::vector<uint8_t> buf(256);
  const auto payload = [&](const SenderInfo& si) {
    buf.resize(256);
    buf.resize(encode_sender_info(header(), si, buf));
    return std::span<const uint8_t>(buf).subspan(kHeaderSize);
  };
  SenderInfo got;
  // Bytes after the hosts (a later version's fields) are ignored.
  const std::span<const uint8_t> two = payload({7, {0, 1}, {}});
  std::vector<uint8_t> longer(two.begin(), two.end());
  longer.insert(longer.end(), {1, 2, 3, 4});
  ASSERT_EQ(decode_sender_info(longer, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.host, (std::vector<uint8_t>{0, 1}));
  // Cut short, no lanes, a host after its lane, a host that is not its own host's first lane.
  EXPECT_EQ(decode_sender_info(std::span(longer).first(13), &got), DecodeStatus::kBadPayload);
  EXPECT_EQ(decode_sender_info(std::span(longer).first(11), &got), DecodeStatus::kBadPayload);
  std::vector<uint8_t> bad = longer;
  bad[8] = 0;
  EXPECT_EQ(decode_sender_info(bad, &got), DecodeStatus::kBadPayload);
  bad = longer;
  bad[12] = 1;
  EXPECT_EQ(decode_sender_info(bad, &got), DecodeStatus::kBadPayload);
  std::vector<uint8_t> out(256);
  EXPECT_EQ(encode_sender_info(header(), {7, {0, 2, 1}, {}}, out), 0u);
  EXPECT_EQ(encode_sender_info(header(), {7, {}, {}}, out), 0u);
  EXPECT_EQ(encode_sender_info(header(), {7, std::vector<uint8_t>(kMaxLanes + 1, 0), {}}, out), 0u);
}

TEST(ProtocolGolden, Data) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x02, 0x13, 0x00,                          // 4 version 1, type 2, payload_len 19
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x01, 0x00, 0x03, 0x02,                          // 24 flags kFlagFec, fec_pos 0x0203
      0xBA, 0x03, 0x60, 0xCD,                          // 28 checksum
      0x07, 0x00, 0x00, 0x00,                          // +0 file_id 7
      0x01, 0x00, 0x00, 0x00,                          // +4 copy 1, reserved
      0x58, 0x68, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // +8 offset 26712 (3 x 8904)
      'x',  'y',  'z',                                 // +16 data
  };
  std::vector<uint8_t> buf(256, 0xEE);  // reserved bytes must be written, not left as found
  std::memcpy(buf.data() + (want.size() - 3), "xyz", 3);
  DataHeader d;
  d.file_id = 7;
  d.copy = 1;
  d.offset = 26712;
  buf.resize(encode_data_in_place(golden_header(kFlagFec, 0x0203), d, 3, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kData, kFlagFec, 0x0203);
  DataHeader got;
  std::span<const uint8_t> data;
  ASSERT_EQ(decode_data(p.payload, &got, &data), DecodeStatus::kOk);
  EXPECT_EQ(got.file_id, 7u);
  EXPECT_EQ(got.copy, 1);
  EXPECT_EQ(got.offset, 26712u);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), "xyz");
}

TEST(ProtocolGolden, End) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x03, 0x20, 0x00,                          // 4 version 1, type 3, payload_len 32
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags 0, fec_pos 0
      0x8E, 0xDB, 0x5A, 0x18,                          // 28 checksum
      0x09, 0x00, 0x00, 0x00,                          // +0 file_id 9
      0x01, 0x10, 0x01, 0x02,                          // +4 verify B2B, key_len 16, copy 1 of 2
      0x39, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // +8 size 12345
      0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,  // +16 key
      0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F,
  };
  End e;
  e.file_id = 9;
  e.verify = VerifyType::kB2B;
  e.size = 12345;
  e.key_len = 16;
  e.copy = 1;
  e.copies = 2;
  for (uint8_t i = 0; i < 16; ++i) e.key[i] = static_cast<uint8_t>(0x10 + i);
  std::vector<uint8_t> buf(256);
  buf.resize(encode_end(golden_header(), e, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kEnd);
  End got;
  ASSERT_EQ(decode_end(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.file_id, 9u);
  EXPECT_EQ(got.verify, VerifyType::kB2B);
  EXPECT_EQ(got.size, 12345u);
  EXPECT_EQ(got.key_len, 16);
  EXPECT_EQ(got.copy, 1);
  EXPECT_EQ(got.copies, 2);
  EXPECT_EQ(got.key, e.key);
}

TEST(ProtocolGolden, Abort) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x04, 0x12, 0x00,                          // 4 version 1, type 4, payload_len 18
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags 0, fec_pos 0
      0x04, 0xB0, 0xDC, 0xA5,                          // 28 checksum
      0x04, 0x00, 0x00, 0x00,                          // +0 file_id 4
      0x0A, 0x00, 0x00, 0x00,                          // +4 reason_len 10, reserved
      'r',  'e',  'a',  'd',  ' ',  'e',  'r',  'r',  'o', 'r',  // +8 reason
  };
  std::vector<uint8_t> buf(256);
  buf.resize(encode_abort(golden_header(), Abort{4, "read error"}, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kAbort);
  Abort got;
  ASSERT_EQ(decode_abort(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.file_id, 4u);
  EXPECT_EQ(got.reason, "read error");
}

TEST(ProtocolGolden, Heartbeat) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x05, 0x18, 0x00,                          // 4 version 1, type 5, payload_len 24
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags 0, fec_pos 0
      0xAC, 0xC5, 0x8B, 0xDA,                          // 28 checksum
      0x01, 0x00, 0x00, 0x00,                          // +0 flags kHeartbeatFinal
      0xE8, 0x03, 0x00, 0x00,                          // +4 interval_ms 1000
      0x4D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // +8 packets_sent 77
      0x04, 0x00, 0x00, 0x00,                          // +16 files_announced 4
      0x00, 0x00, 0x00, 0x00,                          // +20 reserved
  };
  std::vector<uint8_t> buf(256);
  buf.resize(encode_heartbeat(golden_header(), Heartbeat{kHeartbeatFinal, 1000, 77, 4}, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kHeartbeat);
  Heartbeat got;
  ASSERT_EQ(decode_heartbeat(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.flags, kHeartbeatFinal);
  EXPECT_EQ(got.interval_ms, 1000u);
  EXPECT_EQ(got.packets_sent, 77u);
  EXPECT_EQ(got.files_announced, 4u);
}

TEST(ProtocolGolden, Parity) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x06, 0x14, 0x00,                          // 4 version 1, type 6, payload_len 20
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags 0, fec_pos 0
      0x55, 0x8C, 0xB6, 0x1E,                          // 28 checksum
      0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // +0 window_seq 256
      0x28, 0x00, 0x20, 0x04,                          // +8 count 40, k 32, m 4
      0x02, 0x01, 0x03, 0x00,                          // +12 interleave 2, group 1, index 3, rsvd
      0xDE, 0xAD, 0xBE, 0xEF,                          // +16 shard
  };
  const uint8_t shard[] = {0xDE, 0xAD, 0xBE, 0xEF};
  std::vector<uint8_t> buf(256);
  buf.resize(encode_parity(golden_header(), Parity{256, 40, 32, 4, 2, 1, 3}, shard, buf));
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kParity);
  Parity got;
  std::span<const uint8_t> got_shard;
  ASSERT_EQ(decode_parity(p.payload, &got, &got_shard), DecodeStatus::kOk);
  EXPECT_EQ(got.window_seq, 256u);
  EXPECT_EQ(got.count, 40);
  EXPECT_EQ(got.k, 32);
  EXPECT_EQ(got.m, 4);
  EXPECT_EQ(got.interleave, 2);
  EXPECT_EQ(got.group, 1);
  EXPECT_EQ(got.index, 3);
  EXPECT_TRUE(std::equal(got_shard.begin(), got_shard.end(), std::begin(shard), std::end(shard)));
}

TEST(ProtocolGolden, FileList) {
  const std::vector<uint8_t> want = {
      'D',  'D',  'F',  'T',                           // 0 magic
      0x01, 0x07, 0x42, 0x00,                          // 4 version 1, type 7, payload_len 66
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // 8 session_id
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // 16 seq
      0x00, 0x00, 0x00, 0x00,                          // 24 flags 0, fec_pos 0
      0xCF, 0x57, 0x0A, 0x1C,                          // 28 checksum
      0x01, 0x00, 0x02, 0x00,                          // +0 flags kListComplete, count 2
      0x00, 0x00, 0x00, 0x00,                          // +4 reserved
      0x01, 0x00, 0x00, 0x00,                          // +8 entry 0: file_id 1
      0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //    size 100
      0x01, 0x00, 0x10, 0x00,                          //    B2B, not aborted, key_len 16, rsvd
      0x03, 0x00,                                      //    path_len 3
      0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,  //    key
      0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF,  //
      'o',  'n',  'e',                                 //    path
      0x02, 0x00, 0x00, 0x00,                          // +45 entry 1: file_id 2
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //    size 0
      0x01, 0x01, 0x00, 0x00,                          //    B2B, kListAborted, key_len 0, rsvd
      0x03, 0x00,                                      //    path_len 3
      't',  'w',  'o',                                 //    path
  };
  FileListEntry one;
  one.file_id = 1;
  one.size = 100;
  one.verify = VerifyType::kB2B;
  one.key_len = 16;
  for (uint8_t i = 0; i < 16; ++i) one.key[i] = static_cast<uint8_t>(0xA0 + i);
  one.path = "one";
  FileListEntry two;
  two.file_id = 2;
  two.size = 0;
  two.verify = VerifyType::kB2B;
  two.aborted = true;
  two.path = "two";
  const FileListEntry entries[] = {one, two};
  std::vector<uint8_t> buf(256);
  size_t taken = 0;
  buf.resize(encode_file_list(golden_header(), kListComplete, entries, buf, &taken));
  EXPECT_EQ(taken, 2u);
  expect_bytes(buf, want);

  const Packet p = decode_golden(want, PacketType::kFileList);
  FileList got;
  ASSERT_EQ(decode_file_list(p.payload, &got), DecodeStatus::kOk);
  EXPECT_EQ(got.flags, kListComplete);
  ASSERT_EQ(got.entries.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got.entries[i].file_id, entries[i].file_id) << i;
    EXPECT_EQ(got.entries[i].size, entries[i].size) << i;
    EXPECT_EQ(got.entries[i].verify, entries[i].verify) << i;
    EXPECT_EQ(got.entries[i].aborted, entries[i].aborted) << i;
    EXPECT_EQ(got.entries[i].key_len, entries[i].key_len) << i;
    EXPECT_EQ(got.entries[i].key, entries[i].key) << i;
    EXPECT_EQ(got.entries[i].path, entries[i].path) << i;
  }
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
