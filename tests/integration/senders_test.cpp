// Several senders into one receiver, end to end over loopback: the real dd_file_send, started two
// or three at once, into the real dd_file_receive. Each sender is its own session beside the
// others (one with an id from its --state-dir, one without), plain or sealed with one key; a
// sender killed and started again mid-file fails only its own file; a sender beyond
// --max-senders is refused, named in the log and counted.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
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

class Senders : public ReceiverFixture, public ::testing::WithParamInterface<bool> {
 protected:
  Senders() : ReceiverFixture("senders") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    out_ = make_dir("out");
    if (sealed()) {
      key_ = base_ / "link.key";
      write_pattern(key_, 32, 99);
      fs::permissions(key_, fs::perms::owner_read | fs::perms::owner_write);
    }
  }
  bool sealed() const { return GetParam(); }
  // --key-file when the test is sealed.
  std::vector<std::string> key_args() const {
    if (!sealed()) return {};
    return {"--key-file", key_.string()};
  }

  // The receiver with small buffers and its metrics on a port of its choice; `extra` appended.
  void start_receiver(std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--metrics", "127.0.0.1:0"});
    for (const std::string& a : key_args()) extra.push_back(a);
    start_receiver_process(small_receiver_argv(port_, out_, extra), rx_log_path());
  }
  // A sender of `args`, logging to base_/`name`.log.
  std::unique_ptr<Process> start_sender(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest", listen()};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const std::string& a : key_args()) argv.push_back(a);
    return std::make_unique<Process>(argv, base_ / (name + ".log"));
  }
  std::string log_of(const std::string& name) const { return read_file(base_ / (name + ".log")); }

  // `n` files of `size` bytes in a new folder base_/name, their contents from `seed` on.
  fs::path make_files(const std::string& name, int n, uint64_t size, uint64_t seed) {
    const fs::path dir = make_dir(name);
    for (int i = 0; i < n; ++i) {
      write_pattern(dir / (name + "_" + std::to_string(100 + i)), size, seed + i);
    }
    return dir;
  }
  // Every file of folder `src` arrived under out/`src`'s name/, byte for byte.
  void expect_delivered(const fs::path& src) {
    int n = 0;
    for (const auto& e : fs::recursive_directory_iterator(src)) {
      if (!e.is_regular_file()) continue;
      const fs::path got = out_ / src.filename() / fs::relative(e.path(), src);
      EXPECT_TRUE(same_content(e.path(), got)) << got;
      ++n;
    }
    EXPECT_GT(n, 0) << src;
  }
  // The value of metric `series` on the receiver's metrics port, -1 when absent.
  double metric(const std::string& series) {
    std::smatch m;
    const std::string log = rx_log();
    if (!std::regex_search(log, m, std::regex(R"(metrics at http://127\.0\.0\.1:([0-9]+)/)"))) {
      return -1;
    }
    const auto port = static_cast<uint16_t>(std::stoi(m[1]));
    return metric_value(http_get(port, "/metrics").body, series).value_or(-1);
  }
  // Stops the receiver (SIGTERM) once the log shows `summaries` session summary lines.
  void stop_receiver_after(size_t summaries) {
    const auto count = [&] {
      const std::string log = rx_log();
      size_t n = 0;
      for (size_t at = log.find("Info: session "); at != std::string::npos;
           at = log.find("Info: session ", at + 1)) {
        ++n;
      }
      return n;
    };
    EXPECT_TRUE(eventually([&] { return count() >= summaries; }, seconds(30))) << rx_log();
    receiver_->signal(SIGTERM);
    EXPECT_EQ(receiver_->wait(seconds(30)), 0) << rx_log();
  }

  fs::path out_;
  fs::path key_;
};

// Two senders at once, one with an id (--state-dir) and one without, files of the same ids
// interleaved on one port: every file of both delivered, nothing failed, a summary each. The one
// without an id starts first: with a key, a session without one is taken only while it is the
// newest (docs/senders.md).
TEST_P(Senders, TwoSendersAtOnceHaveEveryFileDelivered) {
  const fs::path a = make_files("a", 12, 400'000, 10);
  const fs::path b = make_files("b", 12, 300'000, 50);
  start_receiver();
  auto tx_b = start_sender("b", {"--rate", "2", b.string()});
  ASSERT_TRUE(log_shows(rx_log_path(), "b/b_100, Size:", seconds(20))) << rx_log();
  auto tx_a = start_sender("a", {"--rate", "2", "--state-dir", (base_ / "state_a").string(),
                                 "--sender-id", "a11ce", a.string()});
  EXPECT_EQ(tx_a->wait(seconds(60)), 0) << log_of("a");
  EXPECT_EQ(tx_b->wait(seconds(60)), 0) << log_of("b");
  stop_receiver_after(2);
  expect_delivered(a);
  expect_delivered(b);
  const std::string log = rx_log();
  EXPECT_EQ(log.find("FAILED"), std::string::npos) << log;
  EXPECT_NE(log.find("(sender 00000000000a11ce): 12 file(s) passed, 0 failed"), std::string::npos)
      << log;
  EXPECT_NE(log.find(": 12 file(s) passed, 0 failed"), log.rfind(": 12 file(s) passed, 0 failed"))
      << "a summary for each sender:\n"
      << log;
  EXPECT_FALSE(std::regex_search(log, std::regex(" [1-9][0-9]* from other sessions"))) << log;
}

// Sender A killed mid-file and started again (its id kept in --state-dir) while sender B's file
// is on its way: A's file in flight fails, saying A restarted; B's arrives whole, as does what A
// sends after its restart.
TEST_P(Senders, ASenderStartedAgainMidFileFailsOnlyItsOwnFile) {
  const fs::path a = make_dir("a");
  const fs::path a2 = make_dir("a2");
  const fs::path b = make_dir("b");
  write_pattern(a / "big_a.bin", 40 << 20, 1);
  write_pattern(a2 / "after.bin", 200'000, 2);
  write_pattern(b / "big_b.bin", 40 << 20, 3);
  start_receiver();
  const std::string state = (base_ / "state_a").string();
  auto tx_b = start_sender("b", {"--rate", "10", b.string()});
  ASSERT_TRUE(log_shows(rx_log_path(), "b/big_b.bin, Size:", seconds(20))) << rx_log();
  auto tx_a =
      start_sender("a", {"--rate", "10", "--state-dir", state, "--sender-id", "a", a.string()});
  ASSERT_TRUE(log_shows(rx_log_path(), "a/big_a.bin, Size:", seconds(20))) << rx_log();
  std::this_thread::sleep_for(seconds(1));
  tx_a->signal(SIGKILL);
  tx_a->wait(seconds(10));
  auto again = start_sender("a2", {"--state-dir", state, a2.string()});
  EXPECT_EQ(again->wait(seconds(60)), 0) << log_of("a2");
  EXPECT_EQ(tx_b->wait(seconds(60)), 0) << log_of("b");
  stop_receiver_after(2);
  EXPECT_TRUE(same_content(b / "big_b.bin", out_ / "b/big_b.bin"));
  EXPECT_TRUE(same_content(a2 / "after.bin", out_ / "a2/after.bin"));
  EXPECT_FALSE(fs::exists(out_ / "a/big_a.bin"));
  const std::string log = rx_log();
  const std::regex failed(
      R"(Error: a/big_a\.bin FAILED: sender restarted \(new session [0-9a-f]{16} of sender )"
      R"(000000000000000a\))");
  EXPECT_TRUE(std::regex_search(log, failed)) << log;
  size_t failures = 0;
  for (size_t at = log.find(" FAILED: "); at != std::string::npos;
       at = log.find(" FAILED: ", at + 1)) {
    ++failures;
  }
  EXPECT_EQ(failures, 1u) << "only A's file in flight fails:\n" << log;
}

// --max-senders 2 with two senders sending: a third is refused, named in the log (once, though
// its every packet is dropped) and counted; the two go on unharmed.
TEST_P(Senders, AThirdSenderBeyondMaxSendersIsRefusedAndNamed) {
  const fs::path a = make_dir("a");
  const fs::path b = make_dir("b");
  const fs::path c = make_files("c", 3, 100'000, 70);
  write_pattern(a / "slow_a.bin", 24 << 20, 1);
  write_pattern(b / "slow_b.bin", 24 << 20, 2);
  start_receiver({"--max-senders", "2"});
  auto tx_a =
      start_sender("a", {"--rate", "6", "--state-dir", (base_ / "state_a").string(), a.string()});
  auto tx_b = start_sender("b", {"--rate", "6", b.string()});
  ASSERT_TRUE(log_shows(rx_log_path(), "a/slow_a.bin, Size:", seconds(20))) << rx_log();
  ASSERT_TRUE(log_shows(rx_log_path(), "b/slow_b.bin, Size:", seconds(20))) << rx_log();
  auto tx_c = start_sender(
      "c", {"--state-dir", (base_ / "state_c").string(), "--sender-id", "c0ffee", c.string()});
  EXPECT_EQ(tx_c->wait(seconds(60)), 0) << log_of("c");
  EXPECT_TRUE(log_shows(rx_log_path(), "Warn: sender 0000000000c0ffee (session ", seconds(10)))
      << rx_log();
  EXPECT_EQ(tx_a->wait(seconds(60)), 0) << log_of("a");
  EXPECT_EQ(tx_b->wait(seconds(60)), 0) << log_of("b");
  EXPECT_TRUE(
      eventually([&] { return metric("ddft_receive_senders_refused_total") == 1; }, seconds(10)))
      << rx_log();
  stop_receiver_after(2);
  EXPECT_TRUE(same_content(a / "slow_a.bin", out_ / "a/slow_a.bin"));
  EXPECT_TRUE(same_content(b / "slow_b.bin", out_ / "b/slow_b.bin"));
  EXPECT_FALSE(fs::exists(out_ / "c")) << "the third sender's files were refused";
  const std::string log = rx_log();
  const std::string refused = "refused: --max-senders 2 reached (2 live, none quiet)";
  EXPECT_NE(log.find(refused), std::string::npos) << log;
  EXPECT_EQ(log.find(refused), log.rfind(refused)) << "at most once a minute:\n" << log;
  EXPECT_EQ(log.find("FAILED"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Link, Senders, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "Sealed" : "Plain";
                         });

}  // namespace
}  // namespace ddft::testing
