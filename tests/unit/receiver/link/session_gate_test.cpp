// The session gate with datagrams built by common/protocol.hpp and a FakeClock.
#include "receiver/link/session_gate.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using Datagram = std::vector<uint8_t>;

Datagram heartbeat(uint64_t session, uint64_t seq, bool final = false, uint16_t flags = 0) {
  common::Header h;
  h.session_id = session;
  h.seq = seq;
  h.flags = flags;
  common::Heartbeat hb{final ? common::kHeartbeatFinal : 0u, 1000, seq, 1};
  Datagram b(256);
  b.resize(common::encode_heartbeat(h, hb, b));
  return b;
}

class SessionGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = std::make_unique<OutputDir>(base_.string(), (base_ / ".failed").string(),
                                       CollisionPolicy::kRename);
    cfg_.file_timeout_s = 5;
    gate_ = std::make_unique<SessionGate>(cfg_, *out_, pool_, clock_, counters_);
  }
  void TearDown() override { gate_.reset(); }
  // Opens `d`; true when the gate lets it through.
  bool admit(Datagram d) {
    std::span<const uint8_t> data(d);
    common::Packet p;
    return gate_->open(&data, d.size(), &p);
  }
  testing::ScratchDir scratch_{"sg"};
  fs::path base_ = scratch_.path();
  std::unique_ptr<OutputDir> out_;
  ReceiverConfig cfg_;
  FsPool pool_{1, "tsg"};
  common::FakeClock clock_;
  AssemblerCounters counters_;
  std::unique_ptr<SessionGate> gate_;
};

TEST_F(SessionGateTest, DamagedAndTruncatedDatagramsAreCountedAndDropped) {
  Datagram d = heartbeat(1, 0);
  d[d.size() - 1] ^= 0xff;
  EXPECT_FALSE(admit(d));
  Datagram ok = heartbeat(1, 1);
  std::span<const uint8_t> data(ok);
  common::Packet p;
  EXPECT_FALSE(gate_->open(&data, ok.size() + 10, &p));
  EXPECT_EQ(counters_.datagrams, 2u);
  EXPECT_EQ(counters_.truncated, 1u);
  EXPECT_EQ(counters_.rejected[static_cast<size_t>(common::DecodeStatus::kBadLength)], 1u);
}

TEST_F(SessionGateTest, WithoutAKeySealedDatagramsAreRefused) {
  Datagram d = heartbeat(1, 0, false, common::kFlagEncrypt);
  EXPECT_FALSE(admit(d));
  EXPECT_EQ(counters_.auth_rejected[static_cast<size_t>(AuthReject::kNoKey)], 1u);
  EXPECT_FALSE(gate_->keyed());
}

}  // namespace
}  // namespace ddft::receiver
