// The file table driven directly, with one lane: packets built with common/protocol.hpp, a real
// output folder, the pwrite engine, a FakeClock (tests/unit/receiver/assembly/table_fixture.hpp).
#include "receiver/assembly/file_table.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "support/scratch_fs.hpp"
#include "unit/receiver/assembly/table_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using Datagram = std::vector<uint8_t>;
using ddft::testing::JsonHas;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The table alone, with one lane: no gate (TableGround's is left out), one FakeSender, files
// silent for 5 s time out.
class FileTableTest : public FileTableFixture {
 protected:
  void SetUp() override {
    cfg_.file_timeout_s = 5;
    FileTableFixture::SetUp();
    gateless();
  }
  // The session followed with no gate: one lane, never gone.
  void gateless() {
    table_->end_session(kSession);
    table_->start_session(kSession);
  }
  common::Header next() {
    common::Header h;
    h.session_id = kSession;
    h.seq = seq_++;
    return h;
  }
  // A packet the sender sends on its one lane, straight to the table.
  void feed(const Datagram& d) {
    common::Packet p;
    ASSERT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
    handle(p, 0);
  }
  // A whole file as the sender sends it: announce (chunks of 1000 bytes, b2b), data, end.
  void send_file(uint32_t id, const std::string& path, const std::string& content) {
    feed(sender_.announce(id, path, content.size()));
    for (const Datagram& d : sender_.data(id, content)) feed(d);
    feed(sender_.end(id, content));
  }
  ddft::testing::FakeSender sender_{kSession};
  uint64_t seq_ = 0;
};

TEST_F(FileTableTest, AFileLargerThanTheBlockPoolIsDeliveredAndItsLifeEnds) {
  std::string content(40000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 13);
  send_file(1, "a/b.bin", content);
  settle();
  EXPECT_TRUE(table_->empty());
  EXPECT_EQ(counters_.files_passed, 1u);
  EXPECT_EQ(table_->session_files(kSession).passed, 1u);
  EXPECT_EQ(read_file(base_ / "a/b.bin"), content);
}

// Every write block is held by data behind holes: the sender holding the most gives one file's
// up (written out, verified by reading it back), though another sender's file is older.
TEST_F(FileTableTest, WhenBlocksRunOutTheSenderHoldingTheMostGivesWay) {
  constexpr uint64_t kOther = kSession + 1;
  table_->start_session(kOther);
  ddft::testing::FakeSender other{kOther};
  const std::string b = lane_content(12'000, 1);
  const std::string a = lane_content(40'000, 2);
  const auto b_data = other.data(1, b);
  const auto a_data = sender_.data(1, a);
  feed(other.announce(1, "b.bin", b.size()));
  feed(b_data[1]);  // block 0 of b, behind the hole of chunk 0
  later(1);
  feed(sender_.announce(1, "a.bin", a.size()));
  for (size_t i = 1; i < 28; ++i) feed(a_data[i]);  // blocks 0-6 of a: every block taken
  ddft::testing::LogCapture log;
  feed(b_data[5]);  // b needs a block
  EXPECT_THAT(log.text(), HasSubstr("a.bin: data arrived out of order beyond the write buffers"));
  EXPECT_THAT(log.text(), Not(HasSubstr("b.bin: data arrived out of order")));
  for (size_t i = 0; i < b_data.size(); ++i) feed(b_data[i]);
  feed(other.end(1, b));
  for (size_t i = 0; i < a_data.size(); ++i) feed(a_data[i]);
  feed(sender_.end(1, a));
  settle();
  EXPECT_EQ(read_file(base_ / "b.bin"), b);
  EXPECT_EQ(read_file(base_ / "a.bin"), a);
  EXPECT_EQ(counters_.files_passed, 2u);
}

TEST_F(FileTableTest, AHostileNameIsRefusedAndAnAbortFails) {
  send_file(1, "../evil", "xyz");
  settle();
  EXPECT_EQ(counters_.files_refused, 1u);
  EXPECT_EQ(counters_.unknown_file, 1u) << "its data belongs to no file";
  common::Announce a;
  a.file_id = 2;
  a.verify = common::VerifyType::kB2B;
  a.size = 5000;
  a.chunk_size = 1000;
  a.path = "x.bin";
  Datagram b(512);
  b.resize(common::encode_announce(next(), a, b));
  feed(b);
  EXPECT_EQ(table_->size(), 1u);
  Datagram ab(512);
  ab.resize(common::encode_abort(next(), common::Abort{2, "gone"}, ab));
  feed(ab);
  settle();
  EXPECT_TRUE(table_->empty());
  EXPECT_EQ(counters_.files_failed, 1u);
}

TEST_F(FileTableTest, ATimedOutFileFailsAndAListedUnknownFileIsNamed) {
  common::Announce a;
  a.file_id = 3;
  a.verify = common::VerifyType::kB2B;
  a.size = 5000;
  a.chunk_size = 1000;
  a.path = "late.bin";
  Datagram b(512);
  b.resize(common::encode_announce(next(), a, b));
  feed(b);
  clock_.advance(std::chrono::seconds(6));
  table_->tick(clock_.now());
  settle();
  EXPECT_TRUE(table_->empty());
  EXPECT_EQ(counters_.files_failed, 1u);
  common::FileListEntry e;
  e.file_id = 4;
  e.size = 10;
  e.verify = common::VerifyType::kB2B;
  e.path = "never.bin";
  const std::string never = "0123456789";
  const auto key =
      common::hash_buffer(e.verify, {reinterpret_cast<const uint8_t*>(never.data()), never.size()});
  e.key_len = key.size;
  e.key = key.bytes;
  std::vector<common::FileListEntry> entries{e};
  Datagram l(9000);
  size_t taken = 0;
  l.resize(common::encode_file_list(next(), 0, entries, l, &taken));
  feed(l);
  feed(l);  // named once
  settle();
  EXPECT_EQ(counters_.files_unannounced, 1u);
  EXPECT_EQ(counters_.files_failed, 2u);
}

// A flood of announces while the disk is slow (every pool thread held): the evicted files fail
// before the refusals that follow them, so their records come first in the per-minute budget,
// whenever their temporary files are made.
TEST_F(FileTableTest, EvictedFilesTakeTheRecordBudgetBeforeTheRefusalsAfterThem) {
  cfg_.max_files_in_flight = 8;
  make_table();
  gateless();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 2; ++i) pool_.post([released] { released.wait(); }, nullptr);
  const int kFlood = 16 + static_cast<int>(kRecordsPerMinute) + 50;
  for (int i = 1; i <= kFlood; ++i) {
    const std::string path = "flood/" + std::to_string(i);  // a.path only views it
    common::Announce a;
    a.file_id = static_cast<uint32_t>(i);
    a.verify = common::VerifyType::kB2B;
    a.size = 1000;
    a.chunk_size = 1000;
    a.path = path;
    Datagram b(512);
    b.resize(common::encode_announce(next(), a, b));
    feed(b);
  }
  EXPECT_EQ(counters_.files_evicted, 8u) << "files 1-8 gave way to files 9-16";
  release.set_value();
  table_->fail_receiving("test over");
  settle();
  const std::vector<std::string> records = ddft::testing::failed_record_texts(base_);
  for (int i = 1; i <= 8; ++i) {
    EXPECT_THAT(records,
                Contains(AllOf(JsonHas("name", "flood/" + std::to_string(i)),
                               JsonHas("reason", StartsWith("more than 8 files in flight")))))
        << "evicted file " << i << " has a record";
  }
  EXPECT_GT(counters_.records_suppressed, 0u) << "the budget was used up by the refusals";
}

}  // namespace
}  // namespace ddft::receiver
