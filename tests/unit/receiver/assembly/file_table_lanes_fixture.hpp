// The file table with two lanes: the gate that tracks each lane's liveness, a real output folder,
// the pwrite engine, a FakeClock. Packets are built per lane by a FakeSender each (one session,
// a sequence numbering per lane). Shared by the file table's lane and history tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/block_io.hpp"
#include "receiver/assembly/file_table.hpp"
#include "receiver/link/session_gate.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {

inline std::string lane_content(size_t n, int salt) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + salt);
  return s;
}

class FileTableLanesTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSession = 0x5151;

  void SetUp() override {
    cfg_.output = base_.string();
    cfg_.write_block_kb = 4;
    cfg_.file_timeout_s = 30;
    cfg_.write_mode = WriteMode::kBuffered;
    cfg_.listens = {{"127.0.0.1", 5000}, {"127.0.0.1", 5001}};
    out_ = std::make_unique<OutputDir>(base_.string(), (base_ / ".failed").string(),
                                       CollisionPolicy::kRename);
    common::BlockIoOptions o;
    o.engine = common::IoEngine::kPwrite;
    o.queue_depth = 4;
    io_ = common::make_block_io(o, nullptr);
    engine_ = std::make_unique<WriteEngine>(*io_, mem_, 4096);
    records_ = std::make_unique<FailureRecords>(*out_, pool_, clock_, false, counters_);
    gate_ = std::make_unique<SessionGate>(cfg_, *out_, pool_, clock_, counters_, 2);
    table_ =
        std::make_unique<FileTable>(cfg_, *out_, pool_, clock_, *engine_, *records_, counters_);
    table_->set_gate(gate_.get());
    gate_->start(kSession);
    table_->start_session(kSession);
    // Each lane says which of the sender's lanes it carries.
    feed(0, lane_[0].heartbeat(false, 1000, 0, 2));
    feed(1, lane_[1].heartbeat(false, 1000, 1, 2));
  }
  void TearDown() override {
    table_.reset();
    gate_.reset();
  }
  // What the assembler does with a packet of `lane`: the gate notes it, the table handles it.
  void feed(size_t lane, const std::vector<uint8_t>& d) {
    common::Packet p;
    ASSERT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
    ASSERT_TRUE(gate_->note_packet(lane, p));
    switch (p.header.type) {
      case common::PacketType::kAnnounce:
        table_->handle_announce(p, lane);
        break;
      case common::PacketType::kData:
        table_->handle_data(p);
        break;
      case common::PacketType::kEnd:
        table_->handle_end(p, lane);
        break;
      case common::PacketType::kFileList:
        table_->handle_file_list(p, lane);
        break;
      case common::PacketType::kHistory:
        table_->handle_history(p);
        break;
      case common::PacketType::kResend:
        table_->handle_resend(p);
        break;
      case common::PacketType::kSenderInfo: {
        common::SenderInfo si;
        ASSERT_EQ(common::decode_sender_info(p.payload, &si), common::DecodeStatus::kOk);
        gate_->on_sender_info(si);
        break;
      }
      case common::PacketType::kHeartbeat: {
        common::Heartbeat hb;
        ASSERT_EQ(common::decode_heartbeat(p.payload, &hb), common::DecodeStatus::kOk);
        gate_->on_heartbeat(lane, hb);
        break;
      }
      default:
        FAIL() << "unexpected type";
    }
  }
  void feed_all(size_t lane, const std::vector<std::vector<uint8_t>>& ds) {
    for (const std::vector<uint8_t>& d : ds) feed(lane, d);
  }
  void settle() {
    for (int i = 0; i < 1000 && (table_->io_pending() || !table_->empty()); ++i) table_->pump(true);
  }
  // Time goes on by `s` seconds and the table checks its files.
  void later(double s) {
    clock_.advance(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s)));
    table_->tick(clock_.now());
  }
  // The text of each failure record written.
  std::vector<std::string> records() { return testing::failed_record_texts(base_); }
  // The text of the one failure record written; "" and a test failure when there is not one.
  std::string record() {
    const std::vector<std::string> all = records();
    if (all.size() == 1) return all[0];
    ADD_FAILURE() << all.size() << " failure records where one was expected";
    return "";
  }

  testing::FakeSender lane_[2] = {testing::FakeSender{kSession}, testing::FakeSender{kSession}};
  testing::ScratchDir scratch_{"ftl"};
  std::filesystem::path base_ = scratch_.path();
  ReceiverConfig cfg_;
  std::unique_ptr<OutputDir> out_;
  std::unique_ptr<common::BlockIo> io_;
  common::AlignedBuffer mem_{8 * 4096};
  FsPool pool_{2, "tfl"};
  common::FakeClock clock_;
  AssemblerCounters counters_;
  std::unique_ptr<WriteEngine> engine_;
  std::unique_ptr<FailureRecords> records_;
  std::unique_ptr<SessionGate> gate_;
  std::unique_ptr<FileTable> table_;
};

}  // namespace ddft::receiver
