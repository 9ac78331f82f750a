// The assembler delivers each file whole and verified: empty and tiny files, repeated control
// packets and duplicates, data out of order, O_DIRECT writes, and the report of each file
// delivered. The Engines instantiation here runs every assembler_*_test.cpp on each write engine.
#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/host_probe.hpp"
#include "support/log_capture.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::EngineParam;
namespace fs = std::filesystem;
using ddft::testing::FakeSender;
using ddft::testing::LogCapture;
using ddft::testing::read_file;

TEST_P(AssemblerTest, DeliversAFileWholeAndVerified) {
  FakeSender tx(11);
  const std::string content = pattern(300'000, 1);  // spans several 64 KiB write blocks
  feed(tx.file(1, "dir/a.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/dir/a.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  EXPECT_TRUE(records().empty());
  EXPECT_EQ(asm_->lost(0), 0u);
}

TEST_P(AssemblerTest, EmptyAndTinyFiles) {
  FakeSender tx(12);
  feed(tx.file(1, "empty", ""));
  feed(tx.file(2, "one", "x"));
  feed(tx.file(3, "exact", pattern(3000, 2)));  // exactly 3 chunks
  feed(tx.file(4, "plus1", pattern(3001, 3)));  // 3 chunks and 1 byte
  settle();
  EXPECT_TRUE(fs::exists(base_ / "out/empty"));
  EXPECT_EQ(fs::file_size(base_ / "out/empty"), 0u);
  EXPECT_EQ(read_file(base_ / "out/one"), "x");
  EXPECT_EQ(read_file(base_ / "out/exact"), pattern(3000, 2));
  EXPECT_EQ(read_file(base_ / "out/plus1"), pattern(3001, 3));
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
  EXPECT_TRUE(read_file(base_ / "out/dup.bin") == content);
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
  EXPECT_TRUE(read_file(base_ / "out/shuffled.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
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
  EXPECT_TRUE(read_file(base_ / "out/late.bin") == content);
}

TEST_P(AssemblerTest, ProgressLinesEveryReportInterval) {
  // report_mb = 1: a 2.5 MiB file gives Rcvd lines at 1 and 2 MiB (checked end to end for the
  // text); here the file must still pass with many blocks cycling through a small pool.
  FakeSender tx(27, 8000);
  const std::string content = pattern(2'621'440, 12);
  feed(tx.file(1, "big.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/big.bin") == content);
}

TEST_P(AssemblerTest, DirectIoWritesAlignedBlocksAndTheTail) {
  if (const std::string why = ddft::testing::direct_io_missing(cfg_.output); !why.empty()) {
    GTEST_SKIP() << why;
  }
  ASSERT_TRUE(out_->enable_direct_io()) << "the file system takes O_DIRECT, the receiver does not";
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
  EXPECT_TRUE(read_file(base_ / "out/direct.bin") == content);
  EXPECT_TRUE(read_file(base_ / "out/direct2.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 2u);
}

TEST_P(AssemblerTest, DirectIoWithABlockSizeThatIsNotAMultipleOf4K) {
  // 65 KiB blocks: block offsets and addresses are not 4 KiB-aligned, so those writes must go
  // through the buffered descriptor (O_DIRECT would fail with EINVAL on 4K-sector disks).
  cfg_.write_block_kb = 65;
  build();
  if (const std::string why = ddft::testing::direct_io_missing(cfg_.output); !why.empty()) {
    GTEST_SKIP() << why;
  }
  ASSERT_TRUE(out_->enable_direct_io()) << "the file system takes O_DIRECT, the receiver does not";
  FakeSender tx(38, 1000);
  const std::string content = pattern(5 * 66560 + 777, 18);
  feed(tx.file(1, "odd.bin", content));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/odd.bin") == content);
  EXPECT_EQ(asm_->counters().files_passed, 1u);
}

TEST_P(AssemblerTest, EachDeliveredFileIsReportedWithItsFinalPathAndKey) {
  cfg_.on_collision = CollisionPolicy::kRename;
  build();
  std::vector<DeliveredFile> got;
  asm_->set_on_delivered([&](const DeliveredFile& d) { got.push_back(d); });
  LogCapture log;
  FakeSender tx(0x0f3c9a7d12e45b60);
  feed(tx.file(1, "d/x.txt", "first"));
  settle();
  feed(tx.file(2, "d/x.txt", "second"));  // same name: the first is kept as d/x.1.txt
  settle();
  const std::string none = "not verified";
  feed(tx.announce(3, "n.bin", none.size(), common::VerifyType::kNone));
  feed(tx.data(3, none));
  feed(tx.end(3, none, common::VerifyType::kNone));
  feed(tx.announce(4, "failed.bin", 1));  // a file that fails verification is not reported
  feed(tx.data(4, "x"));
  feed(tx.end(4, "y"));
  settle();
  ASSERT_EQ(got.size(), 3u);
  const std::string root = base_.string() + "/out/";
  EXPECT_EQ(got[0].final_path, root + "d/x.txt");
  EXPECT_EQ(got[0].file.path, "d/x.txt");
  EXPECT_EQ(got[0].file.size, 5u);
  EXPECT_EQ(got[0].file.session, 0x0f3c9a7d12e45b60u);
  EXPECT_EQ(got[0].displaced_to, "");
  EXPECT_EQ(got[1].final_path, root + "d/x.txt");
  EXPECT_EQ(got[1].displaced_to, root + "d/x.1.txt");
  EXPECT_EQ(read_file(got[1].displaced_to), "first");
  EXPECT_EQ(got[2].key, "none");
  // The key is the File: line's.
  const std::string text = log.text();
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(got[i].key.size(), 10u);
    EXPECT_EQ(got[i].key.substr(0, 2), "0x");
    EXPECT_NE(text.find("Key: " + got[i].key + ", B2B Passed"), std::string::npos) << text;
  }
  EXPECT_NE(got[0].key, got[1].key);
}

INSTANTIATE_TEST_SUITE_P(Engines, AssemblerTest,
                         ::testing::Values(EngineParam{common::IoEngine::kPwrite, 1, "pwrite"},
                                           EngineParam{common::IoEngine::kUring, 1, "uring"},
                                           EngineParam{common::IoEngine::kUring, 3, "uring3"}),
                         ddft::testing::engine_name);

}  // namespace
}  // namespace ddft::receiver
