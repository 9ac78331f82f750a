// The assembler's repair counts (receiver/delivery/file_repairs.hpp): what FEC and later copies
// filled in, per file, in the line after File:, the journal's P line, the counters and the failure
// record.
#include <fmt/format.h>
#include <zstd.h>

#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "support/packet_builder.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
using ddft::testing::FakeSender;
using ddft::testing::is_type;
using ddft::testing::JsonHas;
using ddft::testing::JsonText;
using ddft::testing::LogCapture;
using ddft::testing::read_file;
using ddft::testing::with_fec;
using ::testing::AllOf;

// The line logged right after the first line of `text` that starts with `prefix` ("" if none).
std::string line_after(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::getline(in, line) ? line : std::string();
  }
  return {};
}

// A log-like text of `n` bytes that zstd shrinks (several pieces of 988 bytes still).
std::string text_of(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < n) {
    s += fmt::format("2026-11-22 10:{:02}:{:02} INFO reading {} value={}\n", rng() % 60, rng() % 60,
                     rng() % 5000, rng() % 100000);
  }
  s.resize(n);
  return s;
}

std::vector<uint8_t> zstd_frame(const std::string& raw) {
  std::vector<uint8_t> out(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// One data packet lost and rebuilt: counted once (its late original is a duplicate), shown after
// the File: line, in the journal's P line and in the counters; a file with no repair shows none.
TEST_P(AssemblerTest, RepairCountsAFecRebuiltPacket) {
  LogCapture log;
  use_journal();
  FakeSender tx(61, 1000);
  const std::string content = pattern(30'000, 61);
  const std::string plain = pattern(3'000, 62);
  uint64_t seq = 0;
  std::vector<Datagram> file = tx.file(1, "rebuilt.bin", content);
  const std::vector<Datagram> other = tx.file(2, "plain.bin", plain);
  file.insert(file.end(), other.begin(), other.end());
  auto wire = with_fec(file, {8, 2, 1}, &seq);
  ASSERT_TRUE(is_type(wire[3], common::PacketType::kData));
  const Datagram late = wire[3];
  for (size_t i = 0; i < wire.size(); ++i) {
    if (i != 3) feed(wire[i]);
  }
  feed(late);
  settle();
  ASSERT_EQ(read_file(base_ / "out/rebuilt.bin"), content);
  ASSERT_EQ(read_file(base_ / "out/plain.bin"), plain);
  EXPECT_EQ(asm_->fec().rebuilt, 1u);
  EXPECT_EQ(line_after(log.text(), "File: rebuilt.bin, "),
            "Info: rebuilt.bin: repaired: FEC rebuilt 1 packet(s), repeats filled 0 chunk(s)")
      << log.text();
  EXPECT_EQ(log.text().find("plain.bin: repaired"), std::string::npos) << log.text();
  EXPECT_EQ(asm_->counters().fec_rebuilt_used, 1u);
  EXPECT_EQ(asm_->counters().repeat_filled, 0u);
  const auto p = passed_line("rebuilt.bin");
  ASSERT_TRUE(p && p->repairs) << "no P line with repairs";
  EXPECT_EQ(p->repairs->fec_rebuilt, 1u);
  EXPECT_EQ(p->repairs->repeat_filled, 0u);
  const auto q = passed_line("plain.bin");
  ASSERT_TRUE(q && q->repairs);
  EXPECT_FALSE(q->repairs->any());
}

// A data packet rebuilt before its file's announce (its group's parity came first) goes to no
// file; once the announce is rebuilt, the window is offered again, and that packet still counts
// as rebuilt (the others of the window, received, do not).
TEST_P(AssemblerTest, RepairCountsARebuiltPacketOfferedAgainAfterItsAnnounce) {
  LogCapture log;
  FakeSender tx(66, 1000);
  const std::string content = pattern(10'000, 66);
  uint64_t seq = 0;
  // Windows of 8 in 2 groups of 4 (1 parity each): the announce is place 0 (group 0), the first
  // data packet place 1 (group 1); both lost.
  auto wire = with_fec(tx.file(1, "late.bin", content), {4, 1, 2}, &seq);
  ASSERT_TRUE(is_type(wire[0], common::PacketType::kAnnounce));
  ASSERT_TRUE(is_type(wire[8], common::PacketType::kParity));
  ASSERT_TRUE(is_type(wire[9], common::PacketType::kParity));
  for (size_t i = 2; i < 8; ++i) feed(wire[i]);
  feed(wire[9]);  // group 1's parity first: the data packet is rebuilt, for no file yet
  EXPECT_EQ(asm_->fec().rebuilt, 1u);
  feed(wire[8]);  // group 0's: the announce, then the window again
  for (size_t i = 10; i < wire.size(); ++i) feed(wire[i]);
  settle();
  ASSERT_EQ(read_file(base_ / "out/late.bin"), content) << log.text();
  EXPECT_EQ(asm_->fec().rebuilt, 2u);
  EXPECT_EQ(line_after(log.text(), "File: late.bin, "),
            "Info: late.bin: repaired: FEC rebuilt 1 packet(s), repeats filled 0 chunk(s)")
      << log.text();
}

// --repeat 2 with three chunks lost from the first copy: the second fills them. The "complete
// after copy" line stays before the File: line, the repair line follows it.
TEST_P(AssemblerTest, RepairCountsTheChunksARepeatFilled) {
  LogCapture log;
  use_journal();
  FakeSender tx(63, 1000);
  const std::string content = pattern(30'000, 63);
  feed(tx.announce(1, "twice.bin", content.size()));
  auto copy0 = tx.data(1, content, 0);
  copy0.erase(copy0.begin() + 10, copy0.begin() + 13);
  feed(copy0);
  feed(tx.end(1, content, common::VerifyType::kB2B, 0, 2));
  clock_.advance(std::chrono::seconds(1));
  asm_->poll();
  feed(tx.announce(1, "twice.bin", content.size()));
  feed(tx.data(1, content, 1));
  feed(tx.end(1, content, common::VerifyType::kB2B, 1, 2));
  settle();
  ASSERT_EQ(read_file(base_ / "out/twice.bin"), content);
  EXPECT_EQ(line_after(log.text(), "Info: twice.bin: complete after copy 2 of 2 (--repeat)")
                .rfind("File: twice.bin, ", 0),
            0u)
      << log.text();
  EXPECT_EQ(line_after(log.text(), "File: twice.bin, "),
            "Info: twice.bin: repaired: FEC rebuilt 0 packet(s), repeats filled 3 chunk(s)")
      << log.text();
  EXPECT_EQ(asm_->counters().repeat_filled, 3u);
  EXPECT_EQ(asm_->counters().fec_rebuilt_used, 0u);
  const auto p = passed_line("twice.bin");
  ASSERT_TRUE(p && p->repairs);
  EXPECT_EQ(p->repairs->fec_rebuilt, 0u);
  EXPECT_EQ(p->repairs->repeat_filled, 3u);
}

// A file that fails after repairs: its record says what was repaired before it failed.
TEST_P(AssemblerTest, RepairCountsGoInTheFailureRecord) {
  LogCapture log;
  FakeSender tx(64, 1000);
  const std::string content = pattern(100'000, 64);
  uint64_t seq = 0;
  // Copy 0 under FEC 16:2: data packet 3 (window 0) is rebuilt; places 0-2 of window 1 (three
  // of one group) are beyond repair. Copy 1 (no FEC) fills those but for its own hole at 15000.
  std::vector<Datagram> copy0 = {tx.announce(1, "partly.bin", content.size())};
  const auto data0 = tx.data(1, content, 0);
  copy0.insert(copy0.end(), data0.begin(), data0.end());
  copy0.push_back(tx.end(1, content, common::VerifyType::kB2B, 0, 2));
  auto wire = with_fec(copy0, {16, 2, 1}, &seq);
  const size_t w1 = 16 + 2;
  for (size_t i = 0; i < wire.size(); ++i) {
    if (i != 4 && i != w1 && i != w1 + 1 && i != w1 + 2) feed(wire[i]);
  }
  clock_.advance(std::chrono::seconds(1));
  asm_->poll();
  *tx.seq() = seq;
  feed(tx.announce(1, "partly.bin", content.size()));
  auto data1 = tx.data(1, content, 1);
  data1.erase(data1.begin() + 15);
  feed(data1);
  feed(tx.end(1, content, common::VerifyType::kB2B, 1, 2));
  settle();
  clock_.advance(std::chrono::seconds(1));
  asm_->poll();
  settle();
  const auto recs = records_naming("partly.bin");
  ASSERT_EQ(recs.size(), 1u) << log.text();
  EXPECT_THAT(recs[0], JsonHas("missing_ranges", JsonText("[[15000, 16000]]")));
  EXPECT_THAT(recs[0], AllOf(JsonHas("fec_rebuilt", 1), JsonHas("repeat_filled", 2)));
  EXPECT_EQ(log.text().find("repaired:"), std::string::npos) << "only for files delivered";
  EXPECT_EQ(asm_->counters().fec_rebuilt_used, 1u);
  EXPECT_EQ(asm_->counters().repeat_filled, 2u);
}

// Compressed blocks (kZData): a rebuilt piece counts as one rebuilt packet once its block is
// whole; a block a later copy's piece completes counts every chunk it filled.
TEST_P(AssemblerTest, RepairCountsOfCompressedBlocks) {
  LogCapture log;
  use_journal();
  FakeSender tx(65, 1000);
  const std::string text = text_of(60'000, 65);  // one block of 60 chunks
  const std::vector<uint8_t> frame = zstd_frame(text);
  ASSERT_GT(frame.size(), 4 * common::zdata_piece_size(1000)) << "too few pieces to drop one";
  ASSERT_LT(frame.size(), text.size() / 2);

  // Under FEC 8:2: piece 2 lost, rebuilt.
  std::vector<Datagram> file = {tx.announce(1, "fec.log", text.size())};
  const auto pieces = tx.zdata(1, text, text.size());
  file.insert(file.end(), pieces.begin(), pieces.end());
  file.push_back(tx.end(1, text));
  uint64_t seq = 0;
  const auto wire = with_fec(file, {8, 2, 1}, &seq);
  ASSERT_TRUE(is_type(wire[3], common::PacketType::kZData));
  for (size_t i = 0; i < wire.size(); ++i) {
    if (i != 3) feed(wire[i]);
  }
  settle();
  ASSERT_EQ(read_file(base_ / "out/fec.log"), text) << log.text();
  EXPECT_EQ(line_after(log.text(), "File: fec.log, "),
            "Info: fec.log: repaired: FEC rebuilt 1 packet(s), repeats filled 0 chunk(s)")
      << log.text();

  // --repeat 2: piece 2 lost from copy 0; copy 1's piece 2 completes the block.
  *tx.seq() = seq;
  feed(tx.announce(2, "twice.log", text.size()));
  auto copy0 = tx.zdata(2, text, text.size(), 0);
  copy0.erase(copy0.begin() + 2);
  feed(copy0);
  feed(tx.end(2, text, common::VerifyType::kB2B, 0, 2));
  clock_.advance(std::chrono::seconds(1));
  asm_->poll();
  feed(tx.announce(2, "twice.log", text.size()));
  feed(tx.zdata(2, text, text.size(), 1));
  feed(tx.end(2, text, common::VerifyType::kB2B, 1, 2));
  settle();
  ASSERT_EQ(read_file(base_ / "out/twice.log"), text) << log.text();
  EXPECT_EQ(line_after(log.text(), "File: twice.log, "),
            "Info: twice.log: repaired: FEC rebuilt 0 packet(s), repeats filled 60 chunk(s)")
      << log.text();
  EXPECT_EQ(asm_->counters().fec_rebuilt_used, 1u);
  EXPECT_EQ(asm_->counters().repeat_filled, 60u);
  const auto p = passed_line("twice.log");
  ASSERT_TRUE(p && p->repairs);
  EXPECT_EQ(p->repairs->repeat_filled, 60u);
}

}  // namespace
}  // namespace ddft::receiver
