// The ground the file table and its parts stand on, for their unit tests: a real output folder
// and failure records, an FsPool, a FakeClock, the counters, and a gate of two lanes fed by a
// FakeSender each (each lane says which of the sender's lanes it carries), all of session
// kSession.
// - TablePartsTest adds what the table's parts (admission, listed files, sender history) share,
//   without the table: the known ids and the files in flight, which a test puts in by hand.
// - FileTableFixture adds the table itself, on the pwrite engine, told of the gate.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/block_io.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/file_table.hpp"
#include "receiver/assembly/known_files.hpp"
#include "receiver/link/sender_session.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {

inline std::string lane_content(size_t n, int salt) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 7 + salt);
  return s;
}

class TableGround : public ::testing::Test {
 protected:
  static constexpr uint64_t kSession = 0x5151;

  // Two lanes on loopback, blocks of 4 KiB, buffered writes, files silent for 30 s time out.
  static ReceiverConfig two_lanes(const std::filesystem::path& out) {
    ReceiverConfig cfg;
    cfg.output = out.string();
    cfg.listens = {{"127.0.0.1", 5000}, {"127.0.0.1", 5001}};
    cfg.write_block_kb = 4;
    cfg.file_timeout_s = 30;
    cfg.write_mode = WriteMode::kBuffered;
    return cfg;
  }
  void SetUp() override {
    gate_ = std::make_unique<SenderSession>(cfg_, clock_, counters_, kSession, 2);
    feed_gate(0, lane_[0].heartbeat(false, 1000, 0, 2));
    feed_gate(1, lane_[1].heartbeat(false, 1000, 1, 2));
  }
  // What the assembler does with a packet of `lane` before the table sees it: the gate notes it
  // (and takes heartbeats and sender info). Returns the packet, whose payload points into the
  // last datagram fed.
  common::Packet feed_gate(size_t lane, const std::vector<uint8_t>& d) {
    datagram_ = d;
    common::Packet p;
    EXPECT_EQ(common::decode_packet(datagram_, &p), common::DecodeStatus::kOk);
    EXPECT_TRUE(gate_->note_packet(lane, p));
    if (p.header.type == common::PacketType::kHeartbeat) {
      common::Heartbeat hb;
      EXPECT_EQ(common::decode_heartbeat(p.payload, &hb), common::DecodeStatus::kOk);
      gate_->on_heartbeat(lane, hb);
    } else if (p.header.type == common::PacketType::kSenderInfo) {
      common::SenderInfo si;
      EXPECT_EQ(common::decode_sender_info(p.payload, &si), common::DecodeStatus::kOk);
      gate_->on_sender_info(si);
    }
    return p;
  }
  // The text of each failure record written.
  std::vector<std::string> record_texts() const { return testing::failed_record_texts(base_); }

  testing::FakeSender lane_[2] = {testing::FakeSender{kSession}, testing::FakeSender{kSession}};
  testing::ScratchDir scratch_{"table"};
  std::filesystem::path base_ = scratch_.path();
  ReceiverConfig cfg_ = two_lanes(base_);
  OutputDir out_{base_.string(), testing::failed_folder(base_).string(), CollisionPolicy::kRename};
  FsPool pool_{2, "ttab"};
  common::FakeClock clock_;
  AssemblerCounters counters_;
  FailureRecords records_{out_, pool_, clock_, false, counters_};
  std::unique_ptr<SenderSession> gate_;  // the session's, made by SetUp()
  std::vector<uint8_t> datagram_;
};

class TablePartsTest : public TableGround {
 protected:
  void SetUp() override {
    TableGround::SetUp();
    known_.start_session(kSession);
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
  // The text of each failure record written, once the pool's work is done.
  std::vector<std::string> records() {
    settle();
    return record_texts();
  }

  SessionFiles session_files_;
  KnownFiles known_{std::chrono::hours(1)};
  FilesInFlight files_;
};

class FileTableFixture : public TableGround {
 protected:
  void SetUp() override {
    TableGround::SetUp();
    common::BlockIoOptions o;
    o.engine = common::IoEngine::kPwrite;
    o.queue_depth = 4;
    io_ = common::make_block_io(o, nullptr);
    engine_ = std::make_unique<WriteEngine>(*io_, mem_, 4096);
    make_table();
  }
  void TearDown() override { table_.reset(); }
  // A new table (after a change to cfg_), of session kSession, told of the gate.
  void make_table() {
    table_.reset();
    table_ = std::make_unique<FileTable>(cfg_, out_, pool_, clock_, *engine_, records_, counters_);
    table_->start_session(kSession, gate_.get());
  }
  // What the assembler does with a packet of `lane`: the gate notes it, the table handles it.
  void feed(size_t lane, const std::vector<uint8_t>& d) { handle(feed_gate(lane, d), lane); }
  // The table's handler for the packet's type.
  void handle(const common::Packet& p, size_t lane) {
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
      case common::PacketType::kAbort:
        table_->handle_abort(p);
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
      case common::PacketType::kSenderInfo:
      case common::PacketType::kHeartbeat:
        break;  // the gate's
      default:
        FAIL() << "unexpected type";
    }
  }
  void feed_all(size_t lane, const std::vector<std::vector<uint8_t>>& ds) {
    for (const std::vector<uint8_t>& d : ds) feed(lane, d);
  }
  // Runs the table's I/O until nothing is pending and no file is in flight.
  void settle() {
    for (int i = 0; i < 1000 && (table_->io_pending() || !table_->empty()); ++i) table_->pump(true);
  }
  // Time goes on by `s` seconds and the table checks its files.
  void later(double s) {
    clock_.advance(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s)));
    table_->tick(clock_.now());
  }
  std::vector<std::string> records() const { return record_texts(); }
  // The text of the one failure record written; "" and a test failure when there is not one.
  std::string record() const {
    const std::vector<std::string> all = records();
    if (all.size() == 1) return all[0];
    ADD_FAILURE() << all.size() << " failure records where one was expected";
    return "";
  }

  std::unique_ptr<common::BlockIo> io_;
  common::AlignedBuffer mem_{8 * 4096};  // eight blocks of 4 KiB
  std::unique_ptr<WriteEngine> engine_;
  std::unique_ptr<FileTable> table_;
};

}  // namespace ddft::receiver
