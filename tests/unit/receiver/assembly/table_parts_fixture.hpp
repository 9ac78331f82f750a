// What the file table's parts (admission, listed files, sender history) share, without the table:
// a real output folder and failure records, an FsPool, a FakeClock, the known ids of session
// kSession, files in flight the test puts in by hand, and a gate of two lanes fed by a
// FakeSender each (each lane says which of the sender's lanes it carries).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/known_files.hpp"
#include "receiver/link/session_gate.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {

class TablePartsTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSession = 0x7171;

  static ReceiverConfig two_lanes(const std::filesystem::path& out) {
    ReceiverConfig cfg;
    cfg.output = out.string();
    cfg.listens = {{"127.0.0.1", 5000}, {"127.0.0.1", 5001}};
    return cfg;
  }
  void SetUp() override {
    gate_.start(kSession);
    known_.start_session(kSession);
    feed_gate(0, lane_[0].heartbeat(false, 1000, 0, 2));
    feed_gate(1, lane_[1].heartbeat(false, 1000, 1, 2));
  }
  // What the assembler does with a packet of `lane` before the table sees it: the gate notes it
  // (and takes heartbeats and sender info). Returns the packet.
  common::Packet feed_gate(size_t lane, const std::vector<uint8_t>& d) {
    datagram_ = d;
    common::Packet p;
    EXPECT_EQ(common::decode_packet(datagram_, &p), common::DecodeStatus::kOk);
    EXPECT_TRUE(gate_.note_packet(lane, p));
    if (p.header.type == common::PacketType::kHeartbeat) {
      common::Heartbeat hb;
      EXPECT_EQ(common::decode_heartbeat(p.payload, &hb), common::DecodeStatus::kOk);
      gate_.on_heartbeat(lane, hb);
    } else if (p.header.type == common::PacketType::kSenderInfo) {
      common::SenderInfo si;
      EXPECT_EQ(common::decode_sender_info(p.payload, &si), common::DecodeStatus::kOk);
      gate_.on_sender_info(si);
    }
    return p;
  }
  // A file of the session in flight, in `state`, as its announce on lane 0 made it.
  File& add_file(uint32_t id, const std::string& path, FileState state = FileState::kReceiving) {
    auto f = std::make_unique<File>();
    f->session = kSession;
    f->id = id;
    f->path = path;
    f->size = 1000;
    f->state = state;
    File& ref = *f;
    files_[{kSession, id}] = std::move(f);
    return ref;
  }
  // Runs the pool's work until none is left.
  void settle() {
    for (int i = 0; i < 1000 && pool_.pending() > 0; ++i) {
      pool_.wait(std::chrono::milliseconds(50));
      pool_.reap();
    }
  }
  // Time goes on by `s` seconds.
  void later(double s) {
    clock_.advance(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s)));
  }
  // The text of each failure record written.
  std::vector<std::string> records() {
    settle();
    return testing::failed_record_texts(base_);
  }

  testing::FakeSender lane_[2] = {testing::FakeSender{kSession}, testing::FakeSender{kSession}};
  testing::ScratchDir scratch_{"tpt"};
  std::filesystem::path base_ = scratch_.path();
  ReceiverConfig cfg_ = two_lanes(base_);
  OutputDir out_{base_.string(), (base_ / ".failed").string(), CollisionPolicy::kRename};
  FsPool pool_{1, "tpt"};
  common::FakeClock clock_;
  AssemblerCounters counters_;
  SessionFiles session_files_;
  FailureRecords records_{out_, pool_, clock_, false, counters_};
  KnownFiles known_{std::chrono::hours(1)};
  FilesInFlight files_;
  SessionGate gate_{cfg_, out_, pool_, clock_, counters_, 2};
  std::vector<uint8_t> datagram_;  // the last datagram fed: a packet's payload points into it
};

}  // namespace ddft::receiver
