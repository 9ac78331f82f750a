// The receive core, driven with datagrams built here, a fake clock and a real temp folder.
#include "receiver/assembler.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/hash.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using common::Header;
using Datagram = std::vector<uint8_t>;

// Builds the datagrams a sender would send for one session.
class FakeSender {
 public:
  explicit FakeSender(uint64_t session, size_t chunk = 1000) : session_(session), chunk_(chunk) {}

  Datagram announce(uint32_t id, const std::string& path, uint64_t size,
                    common::VerifyType v = common::VerifyType::kB2B) {
    common::Announce a;
    a.file_id = id;
    a.verify = v;
    a.size = size;
    a.mtime_ns = 1'600'000'000'000'000'000;
    a.mode = 0640;
    a.chunk_size = static_cast<uint32_t>(chunk_);
    a.path = path;
    Datagram b(common::kHeaderSize + common::kAnnounceFixedSize + path.size());
    b.resize(common::encode_announce(next(), a, b));
    return b;
  }
  // Every data packet of `content`.
  std::vector<Datagram> data(uint32_t id, const std::string& content) {
    std::vector<Datagram> out;
    for (size_t off = 0; off < content.size(); off += chunk_) {
      const size_t len = std::min(chunk_, content.size() - off);
      Datagram b(common::kHeaderSize + common::kDataHeaderSize + len);
      std::memcpy(b.data() + common::kHeaderSize + common::kDataHeaderSize, content.data() + off,
                  len);
      b.resize(common::encode_data_in_place(next(), {id, off}, len, b));
      out.push_back(std::move(b));
    }
    return out;
  }
  Datagram end(uint32_t id, const std::string& content,
               common::VerifyType v = common::VerifyType::kB2B) {
    const auto d = common::hash_buffer(
        v, {reinterpret_cast<const uint8_t*>(content.data()), content.size()});
    common::End e;
    e.file_id = id;
    e.verify = v;
    e.size = content.size();
    e.key_len = d.size;
    e.key = d.bytes;
    Datagram b(256);
    b.resize(common::encode_end(next(), e, b));
    return b;
  }
  Datagram abort(uint32_t id, const std::string& reason) {
    Datagram b(1024);
    b.resize(common::encode_abort(next(), common::Abort{id, reason}, b));
    return b;
  }
  Datagram heartbeat(bool final) {
    common::Heartbeat hb{final ? common::kHeartbeatFinal : 0u, 1000, seq_, 1};
    Datagram b(256);
    b.resize(common::encode_heartbeat(next(), hb, b));
    return b;
  }
  // A whole file: announce, data, end.
  std::vector<Datagram> file(uint32_t id, const std::string& path, const std::string& content) {
    std::vector<Datagram> out{announce(id, path, content.size())};
    for (auto& d : data(id, content)) out.push_back(std::move(d));
    out.push_back(end(id, content));
    return out;
  }

 private:
  Header next() {
    Header h;
    h.session_id = session_;
    h.seq = seq_++;
    return h;
  }
  uint64_t session_;
  size_t chunk_;
  uint64_t seq_ = 0;
};

std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Each test runs on every engine the receiver can use: pwrite, io_uring from the writer thread,
// and io_uring spread over three IO threads (--writers 3), where completions arrive out of order.
struct EngineParam {
  common::IoEngine engine;
  unsigned threads;
  const char* name;
};

class AssemblerTest : public ::testing::TestWithParam<EngineParam> {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("ddft_as_" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(base_ / "out");
    fs::create_directories(base_ / "outside");
    cfg_.output = (base_ / "out").string();
    cfg_.failed_dir = (base_ / "out/.failed").string();
    cfg_.write_block_kb = 64;
    cfg_.write_buffers = 8;
    cfg_.queue_depth = 4;
    cfg_.file_timeout_s = 5;
    cfg_.report_mb = 1;
    build();
  }
  void TearDown() override {
    asm_.reset();
    fs::remove_all(base_);
  }
  void build() {
    asm_.reset();
    writer_.reset();
    out_ = std::make_unique<OutputDir>(cfg_.output, cfg_.failed_dir, cfg_.on_collision);
    mem_ = common::AlignedBuffer(cfg_.write_buffers * cfg_.write_block_kb * 1024);
    try {
      common::BlockIoOptions io;
      io.engine = GetParam().engine;
      io.threads = GetParam().threads;
      io.queue_depth = cfg_.queue_depth;
      io.fixed = mem_.span();
      writer_ = common::make_block_io(io, nullptr);
    } catch (const std::exception& e) {
      GTEST_SKIP() << "io_uring unavailable: " << e.what();
    }
    asm_ = std::make_unique<Assembler>(cfg_, *out_, *writer_, mem_, clock_);
  }
  void feed(const Datagram& d) { asm_->on_datagram(d, d.size()); }
  void feed(const std::vector<Datagram>& ds) {
    for (const auto& d : ds) feed(d);
  }
  void settle() {
    for (int i = 0; i < 1000 && asm_->io_pending(); ++i) asm_->poll(true);
    asm_->poll(false);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<fs::path> records() {
    std::vector<fs::path> out;
    if (!fs::exists(base_ / "out/.failed")) return out;
    for (const auto& e : fs::directory_iterator(base_ / "out/.failed")) {
      if (e.path().extension() == ".json") out.push_back(e.path());
    }
    return out;
  }

  fs::path base_;
  ReceiverConfig cfg_;
  common::FakeClock clock_;
  std::unique_ptr<OutputDir> out_;
  common::AlignedBuffer mem_;
  std::unique_ptr<common::BlockIo> writer_;
  std::unique_ptr<Assembler> asm_;
};

TEST_P(AssemblerTest, DeliversAFileWholeAndVerified) {
  FakeSender tx(11);
  const std::string content = pattern(300'000, 1);  // spans several 64 KiB write blocks
  feed(tx.file(1, "dir/a.bin", content));
  settle();
  EXPECT_TRUE(read(base_ / "out/dir/a.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  EXPECT_TRUE(records().empty());
  EXPECT_EQ(asm_->seq().lost(), 0u);
}

TEST_P(AssemblerTest, EmptyAndTinyFiles) {
  FakeSender tx(12);
  feed(tx.file(1, "empty", ""));
  feed(tx.file(2, "one", "x"));
  feed(tx.file(3, "exact", pattern(3000, 2)));   // exactly 3 chunks
  feed(tx.file(4, "plus1", pattern(3001, 3)));   // 3 chunks and 1 byte
  settle();
  EXPECT_TRUE(fs::exists(base_ / "out/empty"));
  EXPECT_EQ(fs::file_size(base_ / "out/empty"), 0u);
  EXPECT_EQ(read(base_ / "out/one"), "x");
  EXPECT_EQ(read(base_ / "out/exact"), pattern(3000, 2));
  EXPECT_EQ(read(base_ / "out/plus1"), pattern(3001, 3));
  EXPECT_EQ(asm_->counters().files_passed, 4u);
}

TEST_P(AssemblerTest, RepeatedControlPacketsAndDuplicatesDeliverOnce) {
  FakeSender tx(13);
  const std::string content = pattern(5000, 4);
  auto ann = tx.announce(1, "dup.bin", content.size());
  auto data = tx.data(1, content);
  auto end = tx.end(1, content);
  feed(ann);
  feed(ann);
  feed(data);
  feed(data[2]);  // a duplicated datagram, same seq
  feed(end);
  feed(end);
  feed(ann);  // a late repeat of the announce must not start the file again
  settle();
  EXPECT_TRUE(read(base_ / "out/dup.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  EXPECT_FALSE(fs::exists(base_ / "out/dup.1.bin"));
  EXPECT_GE(asm_->counters().duplicates, 1u);
}

TEST_P(AssemblerTest, ReorderedDataStillVerifiesEvenPastTheWritePool) {
  // 8 write blocks of 64 KiB, a 1 MiB file delivered in random order: blocks cannot be hashed
  // in order and the pool runs out, so the file is verified by reading it back.
  FakeSender tx(14);
  const std::string content = pattern(1 << 20, 5);
  auto data = tx.data(1, content);
  std::shuffle(data.begin(), data.end(), std::mt19937(7));
  feed(tx.announce(1, "shuffled.bin", content.size()));
  feed(data);
  feed(tx.end(1, content));
  settle();
  EXPECT_TRUE(read(base_ / "out/shuffled.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
}

TEST_P(AssemblerTest, LostDataPacketFailsWithTheMissingRange) {
  FakeSender tx(15);
  const std::string content = pattern(10'000, 6);
  auto data = tx.data(1, content);
  data.erase(data.begin() + 4);  // bytes 4000..5000 never arrive
  feed(tx.announce(1, "lost.bin", content.size()));
  feed(data);
  feed(tx.end(1, content));
  settle();
  clock_.advance(std::chrono::seconds(1));  // past the grace for reordered data
  asm_->poll();
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/lost.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const std::string json = read(recs[0]);
  EXPECT_NE(json.find("\"missing_ranges\": [[4000, 5000]]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"bytes_received\": 9000"), std::string::npos) << json;
  EXPECT_NE(json.find("incomplete"), std::string::npos) << json;
  EXPECT_EQ(asm_->seq().lost(), 1u);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
}

TEST_P(AssemblerTest, ReorderedTailWithinGraceIsNotAFailure) {
  FakeSender tx(16);
  const std::string content = pattern(10'000, 7);
  auto data = tx.data(1, content);
  auto last = data.back();
  data.pop_back();
  feed(tx.announce(1, "late.bin", content.size()));
  feed(data);
  feed(tx.end(1, content));  // the end overtakes the last data packet
  asm_->poll();
  feed(last);
  settle();
  EXPECT_TRUE(read(base_ / "out/late.bin") == content);
}

TEST_P(AssemblerTest, HashMismatchFailsAndNeverAppears) {
  FakeSender tx(17);
  const std::string content = pattern(7000, 8);
  feed(tx.announce(1, "bad.bin", content.size()));
  feed(tx.data(1, content));
  feed(tx.end(1, pattern(7000, 9)));  // key of other data
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/bad.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NE(read(recs[0]).find("verification failed"), std::string::npos);
}

TEST_P(AssemblerTest, SenderGoneTimesOut) {
  FakeSender tx(18);
  const std::string content = pattern(50'000, 10);
  auto data = tx.data(1, content);
  data.resize(20);  // the sender dies after 20 packets
  feed(tx.announce(1, "dead.bin", content.size()));
  feed(data);
  settle();
  clock_.advance(std::chrono::seconds(4));
  asm_->poll();
  EXPECT_TRUE(records().empty());  // not yet: the timeout is 5 s
  clock_.advance(std::chrono::seconds(2));
  asm_->poll();
  settle();
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const std::string json = read(recs[0]);
  EXPECT_NE(json.find("no packet for"), std::string::npos) << json;
  EXPECT_NE(json.find("[[20000, 50000]]"), std::string::npos) << json;
  EXPECT_FALSE(fs::exists(base_ / "out/dead.bin"));
}

TEST_P(AssemblerTest, AbortFromSenderFailsTheFile) {
  FakeSender tx(19);
  feed(tx.announce(1, "gone.bin", 5000));
  feed(tx.abort(1, "file shrank while it was being read"));
  settle();
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NE(read(recs[0]).find("sender aborted the file: file shrank"), std::string::npos);
}

TEST_P(AssemblerTest, NewSessionFailsTheOldOnesFilesAndIgnoresItsStragglers) {
  FakeSender a(21);
  FakeSender b(22);
  const std::string content = pattern(5000, 11);
  auto a_data = a.data(1, content);
  feed(a.announce(1, "a.bin", content.size()));
  feed(a_data[0]);
  feed(b.heartbeat(false));  // the sender restarted
  feed(a_data[1]);           // a straggler of the old session
  feed(b.file(1, "b.bin", content));
  settle();
  EXPECT_TRUE(read(base_ / "out/b.bin") == content);
  EXPECT_FALSE(fs::exists(base_ / "out/a.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NE(read(recs[0]).find("sender restarted"), std::string::npos);
  EXPECT_GE(asm_->counters().other_session, 1u);
}

TEST_P(AssemblerTest, DataWithoutASessionOpenerIsDropped) {
  FakeSender tx(23);
  feed(tx.data(1, "hello"));
  settle();
  EXPECT_EQ(asm_->counters().other_session, 1u);
  EXPECT_EQ(asm_->counters().files_passed, 0u);
}

TEST_P(AssemblerTest, GarbageIsCountedNeverCrashes) {
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    Datagram d(rng() % 200);
    for (auto& c : d) c = static_cast<uint8_t>(rng());
    if (d.size() >= 4 && i % 2) std::memcpy(d.data(), "DDFT", 4);
    feed(d);
  }
  // A valid datagram cut short, and one reported as truncated by the socket.
  FakeSender tx(24);
  auto ann = tx.announce(1, "x", 10);
  asm_->on_datagram({ann.data(), ann.size() - 3}, ann.size() - 3);
  asm_->on_datagram(ann, ann.size() + 100);
  settle();
  uint64_t rejected = 0;
  for (auto r : asm_->counters().rejected) rejected += r;
  EXPECT_EQ(rejected, 2002u);
  EXPECT_EQ(asm_->counters().truncated, 1u);
}

TEST_P(AssemblerTest, HostilePathsAreRefusedAndNothingLeavesTheFolder) {
  FakeSender tx(25);
  fs::create_directory_symlink(base_ / "outside", base_ / "out/escape");
  const std::vector<std::string> hostile = {"/etc/evil", "../evil", "a/../../evil",
                                            "escape/evil", std::string("nul\0x", 5), "ctl\x01x",
                                            ".failed/evil"};
  uint32_t id = 1;
  for (const auto& p : hostile) feed(tx.file(id++, p, "evil"));
  settle();
  EXPECT_EQ(asm_->counters().files_refused, hostile.size());
  EXPECT_EQ(asm_->counters().files_passed, 0u);
  EXPECT_TRUE(fs::is_empty(base_ / "outside"));
  EXPECT_FALSE(fs::exists(base_ / "evil"));
  EXPECT_FALSE(fs::exists("/etc/evil"));
}

TEST_P(AssemblerTest, BadDataOffsetsAreDropped) {
  FakeSender tx(26, 1000);
  feed(tx.announce(1, "f.bin", 2500));
  // A data packet at an offset that is not a chunk boundary, built by hand.
  Datagram b(common::kHeaderSize + common::kDataHeaderSize + 10);
  Header h;
  h.session_id = 26;
  h.seq = 100;
  b.resize(common::encode_data_in_place(h, {1, 123}, 10, b));
  feed(b);
  EXPECT_EQ(asm_->counters().bad_data, 1u);
}

TEST_P(AssemblerTest, ProgressLinesEveryReportInterval) {
  // report_mb = 1: a 2.5 MiB file gives Rcvd lines at 1 and 2 MiB (checked end to end for the
  // text); here the file must still pass with many blocks cycling through a small pool.
  FakeSender tx(27, 8000);
  const std::string content = pattern(2'621'440, 12);
  feed(tx.file(1, "big.bin", content));
  settle();
  EXPECT_TRUE(read(base_ / "out/big.bin") == content);
}

TEST_P(AssemblerTest, FinalHeartbeatFinishesTheSession) {
  FakeSender tx(28);
  feed(tx.file(1, "a", "abc"));
  feed(tx.heartbeat(true));
  settle();
  EXPECT_TRUE(asm_->session_finished());
}

TEST_P(AssemblerTest, LostFinalHeartbeatStillEndsTheSessionAfterSilence) {
  FakeSender tx(37);
  feed(tx.file(1, "a", "abc"));  // no final heartbeat: all its copies were lost
  settle();
  EXPECT_FALSE(asm_->session_finished());
  clock_.advance(std::chrono::seconds(4));
  EXPECT_FALSE(asm_->session_finished());  // file timeout is 5 s
  clock_.advance(std::chrono::seconds(2));
  EXPECT_TRUE(asm_->session_finished());
}

TEST_P(AssemblerTest, StopFailsFilesInFlight) {
  FakeSender tx(29);
  const std::string content = pattern(20'000, 13);
  auto data = tx.data(1, content);
  data.resize(5);
  feed(tx.announce(1, "inflight.bin", content.size()));
  feed(data);
  asm_->fail_all("receiver stopped");
  EXPECT_FALSE(fs::exists(base_ / "out/inflight.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_NE(read(recs[0]).find("receiver stopped"), std::string::npos);
}

TEST_P(AssemblerTest, RestartedSenderReusingIdsLosesNothing) {
  // Session A's file 1 has a write in flight when session B starts and sends its own file 1.
  FakeSender a(31, 1000);
  FakeSender b(32, 1000);
  const std::string old_content = pattern(70'000, 14);  // more than one 64 KiB write block
  const std::string new_content = pattern(3'000, 15);
  auto a_data = a.data(1, old_content);
  a_data.resize(66);
  feed(a.announce(1, "a.bin", old_content.size()));
  feed(a_data);
  feed(b.file(1, "b.bin", new_content));
  settle();
  EXPECT_TRUE(read(base_ / "out/b.bin") == new_content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const std::string rec = read(recs[0]);
  EXPECT_NE(rec.find("\"session\": \"000000000000001f\""), std::string::npos) << rec;
  EXPECT_NE(rec.find("sender restarted"), std::string::npos) << rec;
}

TEST_P(AssemblerTest, FailedFileKeepsEverythingThatArrived) {
  FakeSender tx(33, 1000);
  const std::string content = pattern(200'000, 16);
  auto data = tx.data(1, content);
  data.erase(data.begin());  // bytes 0..1000 never arrive, so no block can be hashed in order
  feed(tx.announce(1, "kept.bin", content.size()));
  feed(data);
  feed(tx.end(1, content));
  settle();
  clock_.advance(std::chrono::seconds(1));
  asm_->poll();
  settle();
  fs::path kept;
  for (const auto& e : fs::directory_iterator(base_ / "out/.failed")) {
    if (e.path().extension() != ".json") kept = e.path();
  }
  ASSERT_FALSE(kept.empty());
  const std::string got = read(kept);
  ASSERT_EQ(got.size(), content.size());
  EXPECT_EQ(got.substr(0, 1000), std::string(1000, '\0'));
  EXPECT_TRUE(got.substr(1000) == content.substr(1000));  // all received bytes are in it
}

TEST_P(AssemblerTest, HostileSizesAreRefusedNotAllocated) {
  FakeSender tx(34, 464);
  // A size near 2^64 must not wrap to "zero chunks" and pass as an empty file.
  feed(tx.announce(1, "huge", UINT64_MAX, common::VerifyType::kNone));
  // 2^50 bytes in the smallest chunks would need a 300 GB bitmap.
  feed(tx.announce(2, "big", uint64_t{1} << 50, common::VerifyType::kNone));
  settle();
  EXPECT_EQ(asm_->counters().files_refused, 2u);
  EXPECT_EQ(asm_->counters().files_passed, 0u);
  EXPECT_FALSE(fs::exists(base_ / "out/huge"));
  for (const auto& e : fs::recursive_directory_iterator(base_ / "out")) {
    EXPECT_FALSE(is_temp_name(e.path().filename().string())) << e.path();
  }
}

TEST_P(AssemblerTest, AFileCannotPushAFolderAside) {
  fs::create_directories(base_ / "out/tree");
  std::ofstream(base_ / "out/tree/inside.txt") << "keep";
  FakeSender tx(35, 1000);
  feed(tx.file(1, ".failed", "x"));
  feed(tx.file(2, "tree", "y"));
  settle();
  EXPECT_TRUE(fs::is_directory(base_ / "out/.failed"));
  EXPECT_TRUE(fs::is_directory(base_ / "out/tree"));
  EXPECT_FALSE(fs::exists(base_ / "out/.failed.1"));
  EXPECT_FALSE(fs::exists(base_ / "out/tree.1"));
  EXPECT_EQ(read(base_ / "out/tree/inside.txt"), "keep");
  EXPECT_EQ(asm_->counters().files_failed, 2u);
  EXPECT_EQ(records().size(), 2u);
}

TEST_P(AssemblerTest, DirectIoWritesAlignedBlocksAndTheTail) {
  if (!out_->enable_direct_io()) GTEST_SKIP() << "this file system refuses O_DIRECT";
  FakeSender tx(36, 1000);
  // Whole 64 KiB blocks go through O_DIRECT, the unaligned tail through the page cache.
  const std::string content = pattern(3 * 65536 + 4096 + 123, 17);
  feed(tx.file(1, "direct.bin", content));
  // A reordered file too: evicted partial blocks are unaligned pieces.
  auto data = tx.data(2, content);
  std::shuffle(data.begin(), data.end(), std::mt19937(3));
  feed(tx.announce(2, "direct2.bin", content.size()));
  feed(data);
  feed(tx.end(2, content));
  settle();
  EXPECT_TRUE(read(base_ / "out/direct.bin") == content);
  EXPECT_TRUE(read(base_ / "out/direct2.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 2u);
}

TEST_P(AssemblerTest, DirectIoWithABlockSizeThatIsNotAMultipleOf4K) {
  // 65 KiB blocks: block offsets and addresses are not 4 KiB-aligned, so those writes must go
  // through the buffered descriptor (O_DIRECT would fail with EINVAL on 4K-sector disks).
  cfg_.write_block_kb = 65;
  build();
  if (!out_->enable_direct_io()) GTEST_SKIP() << "this file system refuses O_DIRECT";
  FakeSender tx(38, 1000);
  const std::string content = pattern(5 * 66560 + 777, 18);
  feed(tx.file(1, "odd.bin", content));
  settle();
  EXPECT_TRUE(read(base_ / "out/odd.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
}

TEST(SeqCounter, HighestSequenceNumberDoesNotHang) {
  SeqCounter c;
  c.record(5);
  c.record(UINT64_MAX);  // used to loop forever
  EXPECT_EQ(c.received(), 2u);
  EXPECT_FALSE(c.record(UINT64_MAX));
}

TEST(SeqCounter, CountsGapsAndDuplicates) {
  SeqCounter c;
  for (uint64_t s : {5, 6, 7, 9, 10, 10, 8, 15}) c.record(s);
  EXPECT_EQ(c.lost(), 4u);  // 11..14
  EXPECT_EQ(c.received(), 7u);
  EXPECT_FALSE(c.record(9));
}

TEST(IntervalStat, FormatsLikeDfts) {
  IntervalStat s;
  EXPECT_EQ(s.format(), "0.00/1");  // the peak is never shown as 0
  s.add(2'190'000);
  s.add(2'190'000);
  EXPECT_EQ(s.format(), "2.19/3");
  s.add(880'000'000);
  EXPECT_EQ(s.format().substr(s.format().find('/')), "/880");
}

INSTANTIATE_TEST_SUITE_P(Engines, AssemblerTest,
                         ::testing::Values(EngineParam{common::IoEngine::kPwrite, 1, "pwrite"},
                                           EngineParam{common::IoEngine::kUring, 1, "uring"},
                                           EngineParam{common::IoEngine::kUring, 3, "uring3"}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace ddft::receiver
