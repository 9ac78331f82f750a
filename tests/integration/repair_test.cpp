// Per-file repair counts end to end: the real sender drops one data packet on purpose
// (--test-drop-data N), FEC (--fec) or a second copy (--repeat 2) makes up for it, and the
// receiver says so after the file's File: line, in its journal's P line and in its metrics;
// with --compress zstd too, where the dropped packet is a piece of a compressed block.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "http_client.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

constexpr size_t kChunkNoFec = 8952 - 48;  // data bytes per packet at the default packet size

// A log-like text file of `size` bytes made from `seed`, which zstd shrinks a few times over.
void write_text(const fs::path& p, size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < size) {
    s += "2026-11-22T10:" + std::to_string(10 + rng() % 50) + ":" +
         std::to_string(10 + rng() % 50) + ",sensor-" + std::to_string(rng() % 400) +
         ",INFO,reading " + std::to_string(rng() % 100000) + " ok\n";
  }
  s.resize(size);
  std::ofstream(p, std::ios::binary) << s;
}

class RepairEndToEnd : public ReceiverFixture {
 protected:
  RepairEndToEnd() : ReceiverFixture("repair") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
    start_receiver_process(small_receiver_argv(port_, out_, {"--metrics", "127.0.0.1:0"}),
                           rx_log_path());
    std::smatch m;
    static const std::regex re(R"(Info: metrics at http://127\.0\.0\.1:([0-9]+)/metrics)");
    const std::string log = rx_log();
    ASSERT_TRUE(std::regex_search(log, m, re)) << log;
    metrics_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  }
  void TearDown() override {
    if (receiver_) {
      receiver_->signal(SIGTERM);
      EXPECT_EQ(receiver_->wait(seconds(30)), 0) << rx_log();
    }
    ReceiverFixture::TearDown();
  }
  int send(std::vector<std::string> args) {
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest", listen()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, tx_log_path());
  }
  // The receive log's line right after the File: line of `name`, once that has come.
  std::string line_after_file(const std::string& name) {
    std::string next;
    eventually(
        [&] {
          std::istringstream in(rx_log());
          std::string line;
          while (std::getline(in, line)) {
            if (line.find("File: " + name + ", ") == std::string::npos) continue;
            return static_cast<bool>(std::getline(in, next));
          }
          return false;
        },
        seconds(20));
    return next;
  }
  // The receiver's journal once it holds `text` (or as it is after 10 s).
  std::string journal_with(const std::string& text) {
    std::string j;
    eventually(
        [&] { return (j = read_file(state_folder(out_) / "outcomes")).find(text) != j.npos; },
        seconds(10));
    return j;
  }
  // The value of `series` once it is `want` (the writer publishes every 250 ms), or the last seen
  // after 10 s (-1: absent).
  double metric(const std::string& series, double want) {
    double v = -1;
    eventually(
        [&] {
          v = metric_value(http_get(metrics_port_, "/metrics").body, series).value_or(-1);
          return v == want;
        },
        seconds(10));
    return v;
  }

  fs::path src_, out_;
  uint16_t metrics_port_ = 0;
};

TEST_F(RepairEndToEnd, FecRebuiltPacketIsCounted) {
  write_pattern(src_ / "fec.bin", 1 << 20, 21);
  ASSERT_EQ(send({(src_ / "fec.bin").string(), "--fec", "16:2", "--test-drop-data", "5"}), 0)
      << tx_log();
  const std::string info = line_after_file("fec.bin");
  EXPECT_NE(info.find("Info: fec.bin: repaired: FEC rebuilt 1 packet(s), repeats filled 0 "
                      "chunk(s)"),
            std::string::npos)
      << rx_log();
  EXPECT_TRUE(same_content(src_ / "fec.bin", out_ / "fec.bin"));
  const std::string journal = journal_with("\"fec.bin\" 1 0\n");
  EXPECT_NE(journal.find("\"fec.bin\" 1 0\n"), std::string::npos) << journal;
  EXPECT_EQ(metric("ddft_receive_fec_rebuilt_packets_used_total", 1), 1);
  EXPECT_EQ(metric("ddft_receive_repeat_filled_chunks_total", 0), 0);
  EXPECT_EQ(metric("ddft_receive_packets_recovered_total", 1), 1);
  EXPECT_TRUE(failed_records(out_).empty());
}

TEST_F(RepairEndToEnd, ChunkARepeatFilledIsCounted) {
  write_pattern(src_ / "twice.bin", 1 << 20, 22);
  ASSERT_EQ(send({(src_ / "twice.bin").string(), "--repeat", "2", "--test-drop-data", "5"}), 0)
      << tx_log();
  const std::string info = line_after_file("twice.bin");
  EXPECT_NE(info.find("Info: twice.bin: repaired: FEC rebuilt 0 packet(s), repeats filled 1 "
                      "chunk(s)"),
            std::string::npos)
      << rx_log();
  // The line naming the copy that completed it comes before the File: line, as it always has.
  const std::string log = rx_log();
  const size_t copy_line = log.find("Info: twice.bin: complete after copy 2 of 2 (--repeat)");
  EXPECT_NE(copy_line, std::string::npos) << log;
  EXPECT_LT(copy_line, log.find("File: twice.bin, ")) << log;
  EXPECT_TRUE(same_content(src_ / "twice.bin", out_ / "twice.bin"));
  const std::string journal = journal_with("\"twice.bin\" 0 1\n");
  EXPECT_NE(journal.find("\"twice.bin\" 0 1\n"), std::string::npos) << journal;
  // The non-zero one first: once it shows, the other is of the same snapshot.
  EXPECT_EQ(metric("ddft_receive_repeat_filled_chunks_total", 1), 1);
  EXPECT_EQ(metric("ddft_receive_fec_rebuilt_packets_used_total", 0), 0);
}

// --compress zstd: the dropped packet is a piece of the file's one compressed block. FEC rebuilds
// it (one packet); without FEC the second copy completes the block, which fills all its chunks.
TEST_F(RepairEndToEnd, CompressedBlocksCountTheirRepairs) {
  const size_t size = 600'000;  // one block (a reader block is 1 MiB), of 68 chunks without FEC
  write_text(src_ / "fec.csv", size, 23);
  ASSERT_EQ(send({(src_ / "fec.csv").string(), "--compress", "zstd", "--fec", "16:2",
                  "--test-drop-data", "3"}),
            0)
      << tx_log();
  EXPECT_NE(line_after_file("fec.csv").find("Info: fec.csv: repaired: FEC rebuilt 1 packet(s), "
                                            "repeats filled 0 chunk(s)"),
            std::string::npos)
      << rx_log() << tx_log();
  EXPECT_TRUE(same_content(src_ / "fec.csv", out_ / "fec.csv"));
  std::string journal = journal_with("\"fec.csv\" 1 0\n");
  EXPECT_NE(journal.find("\"fec.csv\" 1 0\n"), std::string::npos) << journal;

  write_text(src_ / "twice.csv", size, 24);
  ASSERT_EQ(send({(src_ / "twice.csv").string(), "--compress", "zstd", "--repeat", "2",
                  "--test-drop-data", "3"}),
            0)
      << tx_log();
  const uint64_t chunks = (size + kChunkNoFec - 1) / kChunkNoFec;
  const std::string filled = "repeats filled " + std::to_string(chunks) + " chunk(s)";
  EXPECT_NE(line_after_file("twice.csv")
                .find("Info: twice.csv: repaired: FEC rebuilt 0 "
                      "packet(s), " +
                      filled),
            std::string::npos)
      << rx_log() << tx_log();
  EXPECT_TRUE(same_content(src_ / "twice.csv", out_ / "twice.csv"));
  const std::string p_end = "\"twice.csv\" 0 " + std::to_string(chunks) + "\n";
  journal = journal_with(p_end);
  EXPECT_NE(journal.find(p_end), std::string::npos) << journal;
  // Summed over both sessions.
  EXPECT_EQ(metric("ddft_receive_fec_rebuilt_packets_used_total", 1), 1);
  EXPECT_EQ(metric("ddft_receive_repeat_filled_chunks_total", static_cast<double>(chunks)),
            static_cast<double>(chunks));
  EXPECT_TRUE(failed_records(out_).empty());
}

}  // namespace
}  // namespace ddft::testing
