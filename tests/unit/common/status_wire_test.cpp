// The sender's status at the end of a kSenderInfo: every field round-trips, channels are cut to
// the room, later fields inside status_len are skipped, and a block that lies is refused.
#include "common/status_wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/le_bytes.hpp"

namespace ddft::common {
namespace {

SenderStatus full_status() {
  SenderStatus s;
  s.seq = 7;
  s.interval_s = 10;
  s.hot_folder = true;
  s.oldest_wait_s = 612;
  s.queued_files = 12;
  s.queued_bytes = 3'000'000'000;
  s.read_failures = 2;
  s.files_refused = 5;
  s.retention_bytes = 1 << 20;
  s.retention_limit = 1 << 30;
  s.watch_free = 10;
  s.watch_size = 1000;
  s.retention_free = 500;
  s.retention_size = 1000;
  s.lanes_up = 0b101;
  s.rate_limit = 262'144'000;
  s.version = "0.3.0";
  s.channels = {{"urgent", 1, 100, 3}, {"bulk", 11, 2'999'999'900, 612}};
  return s;
}

TEST(StatusWire, RoundTripsEveryField) {
  const SenderStatus s = full_status();
  std::vector<uint8_t> buf(1024);
  const size_t n = encode_sender_status(s, buf);
  ASSERT_EQ(n, kStatusFixedSize + 5 + 2 * kStatusChannelFixedSize + 6 + 4);
  SenderStatus back;
  ASSERT_EQ(decode_sender_status(std::span(buf).first(n), &back), DecodeStatus::kOk);
  EXPECT_EQ(back, s);
}

TEST(StatusWire, CutsChannelsToTheRoomAndSaysSo) {
  SenderStatus s = full_status();
  std::vector<uint8_t> buf(kStatusFixedSize + 5 + kStatusChannelFixedSize + 6);
  const size_t n = encode_sender_status(s, buf);
  ASSERT_EQ(n, buf.size());
  SenderStatus back;
  ASSERT_EQ(decode_sender_status(buf, &back), DecodeStatus::kOk);
  ASSERT_EQ(back.channels.size(), 1u);
  EXPECT_EQ(back.channels[0].name, "urgent");
  EXPECT_TRUE(back.channels_cut);
  // Not even the fixed part and the version: nothing.
  std::vector<uint8_t> small(kStatusFixedSize + 4);
  EXPECT_EQ(encode_sender_status(s, small), 0u);
  s.version = std::string(kMaxStatusVersion + 1, 'v');
  EXPECT_EQ(encode_sender_status(s, buf), 0u);
}

TEST(StatusWire, SkipsLaterFieldsInsideItsLength) {
  const SenderStatus s = full_status();
  std::vector<uint8_t> buf(1024);
  const size_t n = encode_sender_status(s, buf);
  // A later format's fields after the channels, counted in status_len, then bytes after it.
  store_le16(buf.data(), static_cast<uint16_t>(n + 9));
  SenderStatus back;
  ASSERT_EQ(decode_sender_status(std::span(buf).first(n + 20), &back), DecodeStatus::kOk);
  EXPECT_EQ(back, s);
}

TEST(StatusWire, RefusesABlockThatLies) {
  const SenderStatus s = full_status();
  std::vector<uint8_t> buf(1024);
  const size_t n = encode_sender_status(s, buf);
  SenderStatus back;
  EXPECT_EQ(decode_sender_status(std::span(buf).first(kStatusFixedSize - 1), &back),
            DecodeStatus::kBadPayload);
  // Longer than the bytes there.
  EXPECT_EQ(decode_sender_status(std::span(buf).first(n - 1), &back), DecodeStatus::kBadPayload);
  // A channel that runs past status_len.
  std::vector<uint8_t> cut(buf.begin(), buf.begin() + static_cast<long>(n));
  store_le16(cut.data(), static_cast<uint16_t>(n - 2));
  EXPECT_EQ(decode_sender_status(cut, &back), DecodeStatus::kBadPayload);
  // A channel's name of length 0.
  std::vector<uint8_t> empty_name(buf.begin(), buf.begin() + static_cast<long>(n));
  empty_name[kStatusFixedSize + 5] = 0;
  EXPECT_EQ(decode_sender_status(empty_name, &back), DecodeStatus::kBadPayload);
}

TEST(StatusWire, RidesAfterTheHostsAndAReaderOfHostsAloneIgnoresIt) {
  std::vector<uint8_t> tail(512);
  tail.resize(encode_sender_status(full_status(), tail));
  SenderInfo si;
  si.sender_id = 0xc0ffee;
  si.host = {0, 0, 2};
  si.tail = tail;
  std::vector<uint8_t> dgram(2048);
  Header h;
  h.session_id = 42;
  const size_t n = encode_sender_info(h, si, dgram);
  ASSERT_GT(n, 0u);
  Packet p;
  ASSERT_EQ(decode_packet(std::span(dgram).first(n), &p), DecodeStatus::kOk);
  SenderInfo back;
  ASSERT_EQ(decode_sender_info(p.payload, &back), DecodeStatus::kOk);
  EXPECT_EQ(back.sender_id, si.sender_id);
  EXPECT_EQ(back.host, si.host);
  ASSERT_EQ(back.tail.size(), tail.size());
  SenderStatus status;
  ASSERT_EQ(decode_sender_status(back.tail, &status), DecodeStatus::kOk);
  EXPECT_EQ(status, full_status());
}

TEST(StatusWire, AlarmsAtTheThresholds) {
  SenderStatus s;
  EXPECT_EQ(status_alarms(s), StatusAlarms{});
  s.queued_files = 1;
  s.oldest_wait_s = kBacklogWarnS - 1;
  EXPECT_FALSE(status_alarms(s).backlog);
  s.oldest_wait_s = kBacklogWarnS;
  EXPECT_TRUE(status_alarms(s).backlog);
  s.watch_size = 1000;
  s.watch_free = 100;
  EXPECT_FALSE(status_alarms(s).watch_low);
  s.watch_free = 99;
  EXPECT_TRUE(status_alarms(s).watch_low);
  s.retention_limit = 100;
  s.retention_bytes = 100;
  EXPECT_FALSE(status_alarms(s).retention_full);
  s.retention_bytes = 101;
  EXPECT_TRUE(status_alarms(s).retention_full);
}

}  // namespace
}  // namespace ddft::common
