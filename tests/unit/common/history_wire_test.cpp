// The sender's history on the wire (kHistory): packed and compressed, split to the payload's
// room, and refused whole when anything in it is out of bounds.
#include "common/history_wire.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/le_bytes.hpp"

namespace ddft::common {
namespace {

HistoryRecord record(uint32_t id, const std::string& path, int lane = kLaneUnsaid) {
  HistoryRecord r;
  r.file = {0x1234567890abcdefull,
            id,
            path,
            16384u + id,
            VerifyType::kB2B,
            "00112233445566778899aabbccddeeff"};
  r.sent_ns = int64_t{1'795'867'200'000'000'000} + id * 10'000'000;
  r.lane = lane;
  return r;
}

TEST(HistoryWire, RoundTripsEveryFieldCompressed) {
  std::vector<HistoryRecord> rs;
  for (uint32_t id = 1; id <= 100; ++id) rs.push_back(record(id, "site/a/f" + std::to_string(id)));
  rs[3].lane = 2;
  rs[4].lane = kLaneAll;
  rs[5].file.verify = VerifyType::kNone;
  rs[5].file.digest.clear();
  rs[6].file.verify = VerifyType::kSha256;
  rs[6].file.digest = std::string(64, 'a');
  size_t taken = 0;
  const std::vector<uint8_t> payload = pack_history(0xfeed, rs, 8000, &taken);
  ASSERT_EQ(taken, rs.size());
  EXPECT_EQ(payload[10], kHistoryZstd);
  size_t raw = 0;
  for (const HistoryRecord& r : rs)
    raw += kHistoryEntryFixedSize + r.file.digest.size() / 2 + r.file.path.size();
  EXPECT_LT(payload.size(), raw / 2) << "similar entries compress well";
  HistoryBundle b;
  ASSERT_EQ(decode_history(payload, &b), DecodeStatus::kOk);
  EXPECT_EQ(b.sender_id, 0xfeedu);
  EXPECT_EQ(b.records, rs);
}

TEST(HistoryWire, SplitsToTheRoomAndTakesWhatFits) {
  std::vector<HistoryRecord> rs;
  // Paths that do not compress: each entry costs about its own size.
  for (uint32_t id = 1; id <= 400; ++id) {
    std::string path = "r/";
    for (int k = 0; k < 40; ++k) path += static_cast<char>('a' + (id * 7919 + k * 104729) % 26);
    rs.push_back(record(id, path));
  }
  size_t done = 0;
  int payloads = 0;
  while (done < rs.size()) {
    size_t taken = 0;
    const std::vector<uint8_t> p = pack_history(1, std::span(rs).subspan(done), 1400, &taken);
    ASSERT_GT(taken, 0u);
    EXPECT_LE(p.size(), 1400u);
    HistoryBundle b;
    ASSERT_EQ(decode_history(p, &b), DecodeStatus::kOk);
    ASSERT_EQ(b.records.size(), taken);
    EXPECT_EQ(b.records.front(), rs[done]);
    done += taken;
    ++payloads;
  }
  EXPECT_GT(payloads, 4);
}

TEST(HistoryWire, AnEntryThatCannotGoIsNotPacked) {
  size_t taken = 9;
  HistoryRecord bad = record(1, "p");
  bad.file.digest = "zz";
  EXPECT_TRUE(pack_history(1, std::vector{bad}, 8000, &taken).empty());
  EXPECT_EQ(taken, 0u);
  EXPECT_TRUE(pack_history(1, std::vector{record(1, "")}, 8000, &taken).empty());
  std::string noise;
  std::mt19937 rng(5);
  for (int k = 0; k < 300; ++k) noise += static_cast<char>('a' + rng() % 26);
  EXPECT_TRUE(pack_history(1, std::vector{record(1, noise)}, 100, &taken).empty())
      << "longer than the room, even compressed";
  // What comes before one that cannot go is packed.
  EXPECT_FALSE(pack_history(1, std::vector{record(1, "ok"), bad}, 8000, &taken).empty());
  EXPECT_EQ(taken, 1u);
}

TEST(HistoryWire, RefusesMalformedPayloads) {
  std::vector<HistoryRecord> rs = {record(1, "a"), record(2, "b")};
  size_t taken = 0;
  const std::vector<uint8_t> good = pack_history(7, rs, 8000, &taken);
  HistoryBundle b;
  ASSERT_EQ(decode_history(good, &b), DecodeStatus::kOk);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_EQ(decode_history(std::span(good).first(cut), &b), DecodeStatus::kBadPayload) << cut;
  }
  auto with = [&](size_t at, uint8_t v) {
    std::vector<uint8_t> d = good;
    d[at] = v;
    return decode_history(d, &b);
  };
  EXPECT_EQ(with(8, 0), DecodeStatus::kBadPayload);   // no entries
  EXPECT_EQ(with(8, 3), DecodeStatus::kBadPayload);   // more than there are
  EXPECT_EQ(with(8, 1), DecodeStatus::kBadPayload);   // fewer than there are
  EXPECT_EQ(with(10, 7), DecodeStatus::kBadPayload);  // an unknown codec
  std::vector<uint8_t> big = good;
  store_le32(big.data() + 12, kMaxHistoryRaw + 1);
  EXPECT_EQ(decode_history(big, &b), DecodeStatus::kBadPayload);
  // Raw entries whose digest does not match their verify.
  std::vector<uint8_t> raw(kHistoryFixedSize + kHistoryEntryFixedSize + 1);
  store_le16(raw.data() + 8, 1);
  raw[10] = kHistoryRaw;
  store_le32(raw.data() + 12, kHistoryEntryFixedSize + 1);
  uint8_t* e = raw.data() + kHistoryFixedSize;
  e[28] = static_cast<uint8_t>(VerifyType::kNone);
  store_le16(e + 32, 1);
  e[kHistoryEntryFixedSize] = 'p';
  ASSERT_EQ(decode_history(raw, &b), DecodeStatus::kOk);
  e[28] = static_cast<uint8_t>(VerifyType::kB2B);
  EXPECT_EQ(decode_history(raw, &b), DecodeStatus::kBadPayload);
  e[28] = 9;
  EXPECT_EQ(decode_history(raw, &b), DecodeStatus::kBadPayload);
}

TEST(HistoryWire, AResendNamesTheFileItIsACopyOf) {
  Resend r;
  r.file_id = 12;
  r.of = {0xabcdef0123456789ull, 7, "", 0, VerifyType::kSha256, std::string(64, 'c')};
  std::vector<uint8_t> buf(200);
  Header h;
  const size_t n = encode_resend(h, r, buf);
  ASSERT_EQ(n, kHeaderSize + kResendFixedSize + 32);
  Packet p;
  ASSERT_EQ(decode_packet(std::span(buf).first(n), &p), DecodeStatus::kOk);
  EXPECT_EQ(p.header.type, PacketType::kResend);
  Resend back;
  ASSERT_EQ(decode_resend(p.payload, &back), DecodeStatus::kOk);
  EXPECT_EQ(back.file_id, 12u);
  EXPECT_EQ(back.of, r.of);
  // A digest that does not fit its verify is refused both ways.
  r.of.digest = "abc";
  EXPECT_EQ(encode_resend(h, r, buf), 0u);
  std::vector<uint8_t> payload(p.payload.begin(), p.payload.end());
  payload[17] = 16;  // key_len of B2B under SHA256
  EXPECT_EQ(decode_resend(payload, &back), DecodeStatus::kBadPayload);
  EXPECT_EQ(decode_resend(std::span(payload).first(kResendFixedSize - 1), &back),
            DecodeStatus::kBadPayload);
}

}  // namespace
}  // namespace ddft::common
