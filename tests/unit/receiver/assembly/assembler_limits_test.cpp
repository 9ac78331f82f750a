// What a sender may ask of the assembler: garbage and hostile names, offsets and sizes are
// refused, sizes and paths beyond the limits too, a flood of announces stays within the bound
// of files in flight, and the receive filters drop files without a record.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using common::Header;
using ddft::testing::FakeSender;
using ddft::testing::JsonHas;
using ddft::testing::LogCapture;
using ddft::testing::read_file;
using ::testing::Contains;
using ::testing::HasSubstr;

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
  const std::vector<std::string> hostile = {
      "/etc/evil", "../evil",    "a/../../evil",     "escape/evil", std::string("nul\0x", 5),
      "ctl\x01x",  ".ddft/evil", ".ddft/failed/evil"};
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
  Datagram b(common::data_datagram_size(10));
  Header h;
  h.session_id = 26;
  h.seq = 100;
  b.resize(common::encode_data_in_place(h, {1, 123}, 10, b));
  feed(b);
  EXPECT_EQ(asm_->counters().bad_data, 1u);
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

TEST_P(AssemblerTest, FilesOverTheSizeLimitAreRefused) {
  cfg_.max_file_size = 1000;
  build();
  FakeSender tx(74);
  feed(tx.file(1, "small.bin", std::string(1000, 's')));
  feed(tx.file(2, "big.bin", std::string(1001, 'b')));
  settle();
  EXPECT_TRUE(fs::exists(base_ / "out/small.bin"));
  EXPECT_FALSE(fs::exists(base_ / "out/big.bin"));
  ASSERT_EQ(records().size(), 1u);
  EXPECT_THAT(read_file(records()[0]),
              JsonHas("reason", HasSubstr("announced size 1,001 bytes is over --max-file-size "
                                          "1,000")));
}

TEST_P(AssemblerTest, PathsBeyondTheLimitsAreRefusedWithTheirReason) {
  cfg_.path_limits = {40, 3};
  out_ = nullptr;
  build();
  out_->set_path_limits(cfg_.path_limits);
  FakeSender tx(76);
  feed(tx.file(1, "a/b/ok.txt", "ok"));
  feed(tx.file(2, "a/b/c/deep.txt", "deep"));
  feed(tx.file(3, std::string(41, 'n'), "long"));
  feed(tx.file(4, ".ddft-session-state", "x"));
  settle();
  EXPECT_EQ(read_file(base_ / "out/a/b/ok.txt"), "ok");
  const std::vector<std::string> all = ddft::testing::failed_record_texts(base_ / "out");
  EXPECT_THAT(all, Contains(JsonHas("reason", HasSubstr("path deeper than --max-path-depth 3"))));
  EXPECT_THAT(all, Contains(JsonHas("reason", HasSubstr("path of 41 bytes is longer than "
                                                        "--max-path-length 40"))));
  EXPECT_THAT(all, Contains(JsonHas("reason", HasSubstr("a name the receiver keeps for its own "
                                                        "files"))));
  EXPECT_EQ(asm_->counters().files_refused, 3u);
}

// Each announce is handled to its end (its file made, the evicted one recorded) before the next:
// every announce beyond the bound fails the oldest file.
TEST_P(AssemblerTest, AFloodOfAnnouncesStaysWithinTheFilesInFlightBound) {
  cfg_.max_files_in_flight = 4;
  build();
  LogCapture log;
  FakeSender tx(75);
  for (uint32_t id = 1; id <= 300; ++id) {
    feed(tx.announce(id, fmt::format("flood/{}.bin", id), 1'000'000));
    // Never more temporary files than twice the bound, whatever the flood.
    if (id % 50 == 0) {
      size_t parts = 0;
      for (const auto& e : fs::directory_iterator(base_ / "out/flood")) {
        parts += is_temp_name(e.path().filename().string());
      }
      EXPECT_LE(parts, 2 * cfg_.max_files_in_flight);
    }
    settle();
  }
  settle();
  EXPECT_GE(asm_->counters().files_evicted, 290u);
  EXPECT_NE(log.text().find("more than 4 files in flight (--max-files-in-flight)"),
            std::string::npos);
  // Failure records are rate-limited so the flood cannot fill the failed folder.
  EXPECT_LE(records().size(), 120u);
  EXPECT_GT(asm_->counters().records_suppressed + records().size(), 0u);
}

// The same flood at wire speed, faster than the file-system pool makes and records files: failed
// files whose records are still being written have a bound of their own, so the temporary files
// stay within twice the bound, and every announce beyond the bound either fails the oldest file
// or is refused; none is lost.
TEST_P(AssemblerTest, AFastFloodOfAnnouncesStaysBoundedAndEveryFileIsCounted) {
  cfg_.max_files_in_flight = 4;
  build();
  FakeSender tx(76);
  size_t most_parts = 0;
  for (uint32_t id = 1; id <= 300; ++id) {
    feed(tx.announce(id, fmt::format("flood/{}.bin", id), 1'000'000));
    asm_->poll();  // reaps what is done, never waits
    if (id % 10 == 0 && fs::exists(base_ / "out/flood")) {
      size_t parts = 0;
      for (const auto& e : fs::directory_iterator(base_ / "out/flood")) {
        parts += is_temp_name(e.path().filename().string());
      }
      most_parts = std::max(most_parts, parts);
    }
  }
  settle();
  EXPECT_LE(most_parts, 2 * cfg_.max_files_in_flight);
  const auto& c = asm_->counters();
  EXPECT_EQ(c.files_evicted + c.files_refused, 300u - cfg_.max_files_in_flight);
  EXPECT_EQ(asm_->files_in_flight(), cfg_.max_files_in_flight);
  EXPECT_LE(records().size(), 120u);
}

// A slow disk: files finishing their sync (--write-mode rwd) do not count against the bound, so
// a sender's next files are never refused or made to fail for them.
TEST_P(AssemblerTest, FilesFinishingTheirWritesDoNotCostLaterFilesTheirPlace) {
  cfg_.max_files_in_flight = 2;
  cfg_.write_mode = WriteMode::kDataSync;
  build();
  FakeSender tx(77);
  std::vector<std::string> contents;
  for (uint32_t id = 1; id <= 6; ++id) {
    contents.push_back(pattern(3000, 770 + id));
    feed(tx.file(id, fmt::format("s{}.bin", id), contents.back()));  // no poll: syncs stay open
  }
  settle();
  for (uint32_t id = 1; id <= 6; ++id) {
    EXPECT_TRUE(read_file(base_ / fmt::format("out/s{}.bin", id)) == contents[id - 1]) << id;
  }
  EXPECT_EQ(asm_->counters().files_passed, 6u);
  EXPECT_EQ(asm_->counters().files_evicted, 0u);
  EXPECT_TRUE(records().empty());
}

TEST_P(AssemblerTest, ReceiveFiltersDropFilesWithoutARecord) {
  cfg_.filter = common::PathFilter({"*.txt", "keep/*"}, {"draft*", "keep/tmp/*"});
  build();
  LogCapture log;
  FakeSender tx(77);
  feed(tx.file(1, "a.txt", "delivered"));
  feed(tx.file(2, "b.bin", "no include matches"));
  feed(tx.file(3, "sub/draft.txt", "excluded by its base name"));
  feed(tx.file(4, "keep/x.bin", "included by its path"));
  feed(tx.file(5, "keep/tmp/y.txt", "excluded by its path"));
  auto again = tx.announce(2, "b.bin", 18);
  feed(again);  // a repeated announce of a filtered file is not logged twice
  // A hostile name is refused and recorded as such, whatever the filters say.
  feed(tx.file(6, "../evil.bin", "refused"));
  settle();
  asm_->log_summary();
  EXPECT_EQ(read_file(base_ / "out/a.txt"), "delivered");
  EXPECT_EQ(read_file(base_ / "out/keep/x.bin"), "included by its path");
  EXPECT_FALSE(fs::exists(base_ / "out/b.bin"));
  EXPECT_FALSE(fs::exists(base_ / "out/sub"));  // not even its folder
  EXPECT_FALSE(fs::exists(base_ / "out/keep/tmp"));
  EXPECT_EQ(asm_->counters().files_passed, 2u);
  EXPECT_EQ(asm_->counters().files_filtered, 3u);
  EXPECT_EQ(asm_->counters().files_failed, 0u);
  EXPECT_EQ(asm_->counters().files_refused, 1u);
  // Their data packets are dropped and counted as the filter's, not as of unknown files (only
  // the refused file's one is).
  EXPECT_EQ(asm_->counters().filtered_packets, 3u);
  EXPECT_EQ(asm_->counters().unknown_file, 1u);
  ASSERT_EQ(records().size(), 1u);  // the hostile one's only: filtering is not a failure
  EXPECT_THAT(read_file(records()[0]), JsonHas("name", HasSubstr("evil.bin")));
  const std::string text = log.text();
  EXPECT_NE(text.find("Info: filtered \"b.bin\": matches no --include\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Info: filtered \"sub/draft.txt\": matches --exclude 'draft*'\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Info: filtered \"keep/tmp/y.txt\": matches --exclude 'keep/tmp/*'\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("filtered \"b.bin\"", text.find("filtered \"b.bin\"") + 1), std::string::npos)
      << text;
  EXPECT_NE(text.find("2 file(s) passed, 0 failed, 1 refused, 3 filtered;"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace ddft::receiver
