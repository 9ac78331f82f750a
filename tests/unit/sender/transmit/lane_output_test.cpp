// A lane's datagrams on their way out (lane_output.hpp), against a sink that decodes what it is
// given and a fake clock: batches, sequence numbers, FEC parity, a full link buffer, a refusal,
// and the keepalive heartbeat during a sleep.
#include "sender/transmit/lane_output.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace ddft::sender {
namespace {
using namespace std::chrono;

// Each datagram's type and sequence number, and the send() call that carried it. Refuses the
// first `full` calls as a full buffer, then fails every call with `error` once it is set.
class WireLog final : public common::DatagramSink {
 public:
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) override {
    ++calls;
    *sent = 0;
    if (full > 0) {
      --full;
      return std::make_error_code(std::errc::no_buffer_space);
    }
    if (error) return error;
    for (const auto& d : datagrams) {
      common::Packet p;
      EXPECT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
      types.push_back(p.header.type);
      seqs.push_back(p.header.seq);
      call_of.push_back(calls);
      if (p.header.type == common::PacketType::kHeartbeat) {
        common::Heartbeat hb;
        EXPECT_EQ(common::decode_heartbeat(p.payload, &hb), common::DecodeStatus::kOk);
        announced.push_back(hb.files_announced);
        heartbeat_flags.push_back(hb.flags);
      }
    }
    *sent = datagrams.size();
    return {};
  }
  std::vector<common::PacketType> types;
  std::vector<uint64_t> seqs;
  std::vector<size_t> call_of;
  std::vector<uint32_t> announced;        // each heartbeat's files_announced
  std::vector<uint32_t> heartbeat_flags;  // and its flags
  size_t calls = 0;
  int full = 0;
  std::error_code error;
};

class LaneOutputTest : public ::testing::Test {
 protected:
  LaneOutputTest() {
    cfg_.packet_size = 1048;
    cfg_.batch = 4;
    cfg_.control_repeat = 1;
  }
  LaneOutput& out() {
    if (!out_) {
      out_ = std::make_unique<LaneOutput>(cfg_, 77, sink_, clock_, "lane 1 (here): send failed",
                                          totals_, [] {
                                            common::Heartbeat hb;
                                            hb.interval_ms = 1000;
                                            hb.files_announced = 42;
                                            return hb;
                                          });
      out_->start(std::stop_token{}, clock_.now());
    }
    return *out_;
  }
  // A heartbeat encoded as a control datagram, control_repeat times.
  void heartbeat() {
    out().send_control([](const common::Header& h, std::span<uint8_t> buf) {
      common::Heartbeat hb;
      hb.interval_ms = 1000;
      return common::encode_heartbeat(h, hb, buf);
    });
  }

  SenderConfig cfg_;
  common::FakeClock clock_;
  WireLog sink_;
  SendTotals totals_;
  std::unique_ptr<LaneOutput> out_;
};

TEST_F(LaneOutputTest, ABatchGoesOutInOneSendAndEveryDatagramIsNumbered) {
  for (int i = 0; i < 6; ++i) heartbeat();
  EXPECT_EQ(sink_.calls, 1u) << "the fifth datagram needed a slot: the full batch went";
  out().flush();
  EXPECT_EQ(sink_.seqs, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(sink_.call_of, (std::vector<size_t>{1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(totals_.datagrams, 6u);
  EXPECT_GT(totals_.wire_bytes, 0u);
}

TEST_F(LaneOutputTest, AFullFecWindowSendsItsParityRightAfterItsSources) {
  cfg_.fec = {2, 1, 1};
  heartbeat();
  heartbeat();
  heartbeat();
  out().close_window();
  out().flush();
  using T = common::PacketType;
  EXPECT_EQ(sink_.types,
            (std::vector<T>{T::kHeartbeat, T::kHeartbeat, T::kParity, T::kHeartbeat, T::kParity}));
  EXPECT_EQ(sink_.seqs, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
}

TEST_F(LaneOutputTest, AFullLinkBufferIsWaitedOutAndARefusalNamesTheLane) {
  cfg_.buff_full_delay_ms = 300;
  sink_.full = 2;
  heartbeat();
  out().flush();
  EXPECT_EQ(clock_.slept(), milliseconds(600));
  EXPECT_EQ(sink_.types.size(), 1u) << "sent once, nothing dropped";
  sink_.error = std::make_error_code(std::errc::network_unreachable);
  heartbeat();
  try {
    out().flush();
    FAIL() << "no LinkError";
  } catch (const LinkError& e) {
    EXPECT_EQ(e.code(), std::errc::network_unreachable);
    EXPECT_EQ(std::string(e.what()).rfind("lane 1 (here): send failed: ", 0), 0u) << e.what();
  }
}

TEST_F(LaneOutputTest, ASleepKeepsTheLinkAliveWithTheHeartbeatItIsGiven) {
  heartbeat();
  out().flush();
  out().pacer().pause(3);
  ASSERT_GE(sink_.announced.size(), 3u) << "one a second, after the first";
  EXPECT_EQ(sink_.announced.back(), 42u);
  for (size_t i = 1; i < sink_.seqs.size(); ++i) EXPECT_EQ(sink_.seqs[i], sink_.seqs[i - 1] + 1);
  EXPECT_EQ(out().last_heartbeat(), clock_.now() - seconds(1)) << "the last one, a second ago";
  // The keepalive's say the sender sleeps; the one sent before the sleep does not.
  EXPECT_EQ(sink_.heartbeat_flags.front(), 0u);
  for (size_t i = 1; i < sink_.heartbeat_flags.size(); ++i) {
    EXPECT_EQ(sink_.heartbeat_flags[i], common::kHeartbeatSleeping) << "heartbeat " << i;
  }
}

TEST_F(LaneOutputTest, ABatchDiscardedIsNeverSent) {
  heartbeat();
  heartbeat();
  out().discard();
  out().flush();
  EXPECT_EQ(sink_.calls, 0u);
  EXPECT_EQ(totals_.datagrams, 0u);
}

}  // namespace
}  // namespace ddft::sender
