// --compress end to end over loopback: text crosses as zstd frames in fewer datagrams, random
// data as it is; with a key, FEC, repeats and lanes; a lost piece costs its block and is named;
// a compressed bomb fails its file with one line and nothing else.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "common/protocol.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

// A log-like text file of `size` bytes from `seed`: compresses about 5x, like real exports.
void write_log_text(const fs::path& p, size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s;
  s.reserve(size + 200);
  static const char* kLevels[] = {"INFO ", "DEBUG", "WARN ", "ERROR"};
  uint64_t t = 1'790'000'000'000;
  while (s.size() < size) {
    t += rng() % 250'000;
    s += std::to_string(t) + " " + kLevels[rng() % 4] + " [rtu-" + std::to_string(rng() % 64) +
         "] polled " + std::to_string(rng() % 5000) + " points in " + std::to_string(rng() % 900) +
         " ms, breaker " + std::to_string(rng() % 300) + (rng() % 2 ? " OPEN\n" : " CLOSED\n");
  }
  s.resize(size);
  std::ofstream(p, std::ios::binary) << s;
}

int zcount(const std::string& text, const std::regex& re) {
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// The datagrams the sender's summary line says it sent.
long long datagrams_sent(const std::string& tx) {
  std::smatch m;
  if (!std::regex_search(tx, m, std::regex(R"(bytes, (\d+) datagrams)"))) return -1;
  return std::stoll(m[1]);
}

class CompressEndToEnd : public ReceiverFixture {
 protected:
  CompressEndToEnd() : ReceiverFixture("zip") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
  }
  void start(std::vector<std::string> extra = {}, bool once = true) {
    if (once) extra.insert(extra.begin(), "--once");
    fs::remove(rx_log_path());
    start_receiver_process(small_receiver_argv(port_, out_, extra), rx_log_path());
  }
  int send(const std::vector<std::string>& args, bool dest = true) {
    std::vector<std::string> argv = {DDFT_SEND_BIN};
    if (dest) argv.insert(argv.end(), {"--dest", listen()});
    argv.insert(argv.end(), args.begin(), args.end());
    fs::remove(tx_log_path());
    return run(argv, tx_log_path());
  }
  int finish() { return receiver_->wait(seconds(60)); }
  fs::path key_file(uint64_t seed) {
    const fs::path p = base_ / "link.key";
    write_pattern(p, 32, seed);
    fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
    return p;
  }
  fs::path src_, out_;
};

TEST_F(CompressEndToEnd, TextCrossesInFewerDatagramsAndRandomDataAsItIs) {
  write_log_text(src_ / "app.log", 3 * 1024 * 1024 + 77, 1);
  write_pattern(src_ / "random.bin", 2 * 1024 * 1024, 2);
  write_log_text(src_ / "tiny.log", 100, 3);
  write_pattern(src_ / "empty", 0, 4);
  const std::vector<std::string> names = {"app.log", "random.bin", "tiny.log", "empty"};
  long long plain = 0;
  for (const char* mode : {"off", "zstd", "auto"}) {
    SCOPED_TRACE(mode);
    fs::remove_all(out_);
    fs::create_directories(out_);
    start();
    ASSERT_EQ(send({src_.string() + "/", "--compress", mode}), 0) << tx_log();
    ASSERT_EQ(finish(), 0) << rx_log();
    for (const auto& n : names) EXPECT_TRUE(same_content(src_ / n, out_ / n)) << n;
    EXPECT_EQ(zcount(rx_log(), std::regex("B2B Passed")), 4) << rx_log();
    const long long sent = datagrams_sent(tx_log());
    if (std::string(mode) == "off") {
      plain = sent;
      EXPECT_EQ(tx_log().find("compression:"), std::string::npos) << tx_log();
      continue;
    }
    // app.log's 4 blocks are frames; random.bin's 3 go raw, and so does tiny.log's 100 bytes
    // (a frame's own header and checksum would not save 1/32 of them).
    EXPECT_NE(tx_log().find("Info: compression: 4 of 8 block(s) compressed"), std::string::npos)
        << tx_log();
    // The text's 3 MiB compress well: the session takes well under 70% of the datagrams.
    EXPECT_LT(sent * 10, plain * 7) << tx_log();
  }
}

TEST_F(CompressEndToEnd, WorksSealedWithFecRepeatsAndTwoLanes) {
  const fs::path key = key_file(11);
  write_log_text(src_ / "big.log", 12 * 1024 * 1024, 12);  // striped over both lanes
  write_log_text(src_ / "a.log", 700'000, 13);
  write_pattern(src_ / "b.bin", 900'000, 14);
  const uint16_t second = free_udp_port();
  start({"--listen", loopback(second), "--key-file", key.string()});
  // Data packet 40 of each lane is lost: its piece comes again in the second copy.
  ASSERT_EQ(send({"--dest", listen(), "--dest", loopback(second), src_.string() + "/", "--compress",
                  "auto", "--key-file", key.string(), "--fec", "8:2", "--repeat", "2",
                  "--stripe-mb", "4", "--test-drop-data", "40"},
                 false),
            0)
      << tx_log();
  ASSERT_EQ(finish(), 0) << rx_log();
  for (const char* n : {"big.log", "a.log", "b.bin"}) {
    EXPECT_TRUE(same_content(src_ / n, out_ / n)) << n;
  }
  EXPECT_EQ(zcount(rx_log(), std::regex("B2B Passed")), 3) << rx_log();
  EXPECT_NE(tx_log().find("block(s) compressed"), std::string::npos) << tx_log();
}

TEST_F(CompressEndToEnd, ALostPieceCostsItsBlockAndTheRecordNamesItsBytes) {
  write_log_text(src_ / "holed.log", 3 * 1024 * 1024, 21);
  start();
  // The second data packet of the session: a piece of the file's first block (its frame is
  // well over two pieces).
  ASSERT_EQ(send({(src_ / "holed.log").string(), "--compress", "zstd", "--test-drop-data", "1"}), 0)
      << tx_log();
  EXPECT_EQ(finish(), 1) << rx_log();
  EXPECT_FALSE(fs::exists(out_ / "holed.log"));
  // The whole first block (117 chunks of 8904 bytes) is missing, nothing else.
  EXPECT_NE(rx_log().find("missing bytes 0-1041768"), std::string::npos) << rx_log();
  ASSERT_EQ(failed_records(out_).size(), 1u);
}

// A forged session: an announce of a 1 MiB file, then a frame of 4 MiB of zeros that claims to
// be that file's block, and another whose header leaves the size out.
std::vector<Datagram> bomb_session(bool declare_size) {
  FakeSender tx(declare_size ? 0xB0B0 : 0xB0B1, 8904);
  std::vector<Datagram> out = {tx.announce(1, "bomb.bin", 1 << 20)};
  const std::string zeros(4 << 20, '\0');
  std::string frame(ZSTD_compressBound(zeros.size()), '\0');
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, declare_size ? 1 : 0);
  frame.resize(ZSTD_compress2(c, frame.data(), frame.size(), zeros.data(), zeros.size()));
  ZSTD_freeCCtx(c);
  for (auto& d : tx.zframe(1, 0, 1 << 20, frame)) out.push_back(std::move(d));
  return out;
}

TEST_F(CompressEndToEnd, ACompressedBombFailsItsFileWithOneLine) {
  start({}, /*once=*/false);
  for (bool declared : {true, false}) {
    for (const auto& d : bomb_session(declared)) send_raw(d);
    const char* why = declared ? "claims to hold 4194304 bytes: refused unexpanded"
                               : "expands past its size: refused";
    EXPECT_TRUE(eventually([&] { return rx_log().find(why) != std::string::npos; }, seconds(10)))
        << rx_log();
  }
  receiver_->signal(SIGTERM);
  receiver_->wait(seconds(20));
  const std::string log = rx_log();
  EXPECT_EQ(zcount(log, std::regex(R"(Error: bomb\.bin FAILED: the compressed block at offset 0 )"
                                   R"(\(1048576 bytes\))")),
            2)
      << log;
  EXPECT_FALSE(fs::exists(out_ / "bomb.bin"));
  EXPECT_EQ(failed_records(out_).size(), 2u);
}

}  // namespace
}  // namespace ddft::testing
