// The senders the receiver follows side by side (SenderSlots) and each one's session
// (SenderSession), with datagrams a FakeSender builds and a FakeClock.
#include "receiver/assembly/sender_slots.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "support/fake_sender.hpp"
#include "support/log_capture.hpp"

namespace ddft::receiver {
namespace {
using std::chrono::seconds;
using testing::FakeSender;
using ::testing::HasSubstr;

common::Packet decoded(const std::vector<uint8_t>& d) {
  common::Packet p;
  EXPECT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
  return p;
}

class SenderSlotsTest : public ::testing::Test {
 protected:
  // Files silent for 5 s time out; two senders at most.
  static ReceiverConfig config() {
    ReceiverConfig cfg;
    cfg.file_timeout_s = 5;
    cfg.max_senders = 2;
    return cfg;
  }
  // Opens a slot for `s` as the assembler does: its first packet.
  SenderSession& start(FakeSender& s) {
    const std::vector<uint8_t> hb = s.heartbeat(false);
    EXPECT_TRUE(slots_.may_open(decoded(hb)));
    SenderSession& ss = *slots_.open(s.session()).session;
    EXPECT_TRUE(ss.note_packet(0, decoded(hb)));
    return ss;
  }

  ReceiverConfig cfg_ = config();
  common::FakeClock clock_;
  AssemblerCounters counters_;
  SenderSlots slots_{cfg_, clock_, counters_};
};

TEST_F(SenderSlotsTest, ASessionCountsItsSequenceAndItsDuplicates) {
  FakeSender a(7);
  SenderSession& ss = start(a);
  const std::vector<uint8_t> again = a.heartbeat(false);
  EXPECT_TRUE(ss.note_packet(0, decoded(again)));
  EXPECT_FALSE(ss.note_packet(0, decoded(again))) << "a duplicate";
  EXPECT_EQ(counters_.duplicates, 1u);
  *a.seq() += 2;
  EXPECT_TRUE(ss.note_packet(0, decoded(a.heartbeat(false))));
  EXPECT_EQ(ss.lost(), 2u);
  EXPECT_EQ(counters_.sessions, 1u);
  slots_.close(7);
  EXPECT_EQ(counters_.lost_in_past_sessions, 2u) << "an ended session's loss is kept";
  EXPECT_FALSE(slots_.may_open(decoded(a.heartbeat(false)))) << "an ended session never comes back";
  EXPECT_EQ(counters_.other_session, 1u);
}

TEST_F(SenderSlotsTest, OnlyAPacketThatStartsASessionOpensOne) {
  FakeSender a(8);
  EXPECT_FALSE(slots_.may_open(decoded(a.data(1, "x")[0])));
  EXPECT_TRUE(slots_.may_open(decoded(a.announce(1, "x.bin", 1))));
  const std::vector<uint8_t> info = a.sender_info(0x42, {0});
  EXPECT_TRUE(slots_.may_open(decoded(info)));
  EXPECT_EQ(counters_.other_session, 1u);
}

TEST_F(SenderSlotsTest, FinalHeartbeatAndSilenceEndTheSession) {
  FakeSender a(3);
  SenderSession& ss = start(a);
  EXPECT_FALSE(ss.finished(true));
  clock_.advance(seconds(6));
  EXPECT_TRUE(ss.finished(true)) << "silent for --file-timeout";
  EXPECT_FALSE(ss.finished(false)) << "never while files are in flight";
  ASSERT_TRUE(ss.note_packet(0, decoded(a.heartbeat(true))));
  ss.on_heartbeat(0, common::Heartbeat{common::kHeartbeatFinal, 1000, 1, 1});
  EXPECT_TRUE(ss.finished(true));
  EXPECT_FALSE(ss.final_due(0, clock_.now()));
  EXPECT_TRUE(ss.final_due(0, clock_.now() + seconds(1)));
}

TEST_F(SenderSlotsTest, AQuietSenderMayGiveWayAndAFullHouseRefusesOncePerMinute) {
  FakeSender a(1);
  FakeSender b(2);
  FakeSender c(3);
  start(a);
  clock_.advance(seconds(2));
  start(b);
  EXPECT_TRUE(slots_.full());
  EXPECT_EQ(slots_.quiet_slot(clock_.now()), nullptr) << "both heard within 3 heartbeats";
  testing::LogCapture log;
  const std::vector<uint8_t> info = c.sender_info(0xc0ffee, {0});
  const common::Packet from_c = decoded(info);
  slots_.refuse(from_c);
  slots_.refuse(from_c);
  clock_.advance(seconds(30));
  slots_.refuse(from_c);
  EXPECT_EQ(log.count("refused: --max-senders 2 reached"), 1u) << log.text();
  EXPECT_THAT(log.text(), HasSubstr("sender 0000000000c0ffee (session 0000000000000003)"));
  clock_.advance(seconds(31));
  slots_.refuse(from_c);
  EXPECT_EQ(log.count("refused: --max-senders 2 reached"), 2u) << "again after a minute";
  EXPECT_EQ(counters_.senders_refused, 1u) << "one sender refused";
  EXPECT_EQ(counters_.other_session, 4u) << "each of its packets dropped";
  // a fell silent first: it is the one to give way.
  SenderSlot* quiet = slots_.quiet_slot(clock_.now());
  ASSERT_NE(quiet, nullptr);
  EXPECT_EQ(quiet->session->session(), 1u);
}

TEST_F(SenderSlotsTest, ASenderIsKnownByItsIdOnceItsSenderInfoCame) {
  FakeSender a(1);
  FakeSender b(2);
  SenderSession& sa = start(a);
  SenderSession& sb = start(b);
  EXPECT_EQ(sa.name(), "sender session 0000000000000001");
  common::SenderInfo si;
  si.sender_id = 0xab;
  sa.on_sender_info(si);
  EXPECT_EQ(sa.name(), "sender 00000000000000ab");
  EXPECT_EQ(slots_.same_sender(2, 0xab), slots_.find(1)) << "b's kSenderInfo names a's sender";
  EXPECT_EQ(slots_.same_sender(1, 0xab), nullptr) << "not itself";
  EXPECT_EQ(slots_.same_sender(2, 0), nullptr) << "no id: no sender to match";
  EXPECT_EQ(sb.name(), "sender session 0000000000000002");
}

}  // namespace
}  // namespace ddft::receiver
