// DFTS sleeps longer than the receiver's --file-timeout, end to end over loopback with the real
// binaries: a file sent with -fsinterval/-fsdelay sleeps of 3 s arrives whole at a receiver that
// times a silent file out after 1 s, because the heartbeats sent in each sleep say the sender
// sleeps; a sender killed in its sleep still fails its file, named with the reason, soon after.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;
using ::testing::HasSubstr;

class DftsSleep : public ReceiverFixture {
 protected:
  DftsSleep() : ReceiverFixture("sleep") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
    write_pattern(src_ / "slept.bin", 3 << 20, 12);
    // A file silent for 1 s fails, and a lane silent for 1 s is gone.
    start_receiver_process(small_receiver_argv(port_, out_, {"--once", "--file-timeout", "1"}),
                           rx_log_path());
  }
  // The sender of slept.bin: a forced sleep of `sleep_ms` after every MiB, and a heartbeat every
  // 200 ms (in a sleep, once the link has been quiet that long): well inside --file-timeout.
  std::unique_ptr<Process> start_sender(int sleep_ms) {
    return std::make_unique<Process>(
        std::vector<std::string>{DDFT_SEND_BIN, (src_ / "slept.bin").string(), "--dest",
                                 loopback(port_), "-fsinterval", "1", "-fsdelay",
                                 std::to_string(sleep_ms), "--heartbeat-ms", "200"},
        tx_log_path());
  }
  fs::path src_, out_;
};

TEST_F(DftsSleep, SleepsLongerThanTheFileTimeoutFailNoFile) {
  const auto t0 = steady_clock::now();
  auto sender = start_sender(3000);
  EXPECT_EQ(sender->wait(seconds(40)), 0) << tx_log();
  EXPECT_GE(steady_clock::now() - t0, seconds(6)) << "at least two sleeps of 3 s in the file";
  EXPECT_EQ(receiver_->wait(seconds(20)), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "slept.bin", out_ / "slept.bin")) << rx_log();
  EXPECT_TRUE(failed_records(out_).empty()) << rx_log();
}

TEST_F(DftsSleep, ASenderKilledInItsSleepFailsItsFileNamedWithTheReason) {
  auto sender = start_sender(8000);
  ASSERT_TRUE(log_shows(rx_log_path(), "Info: slept.bin, Size:", seconds(10))) << rx_log();
  // The first MiB goes in milliseconds; the sender then sleeps 8 s. 3 s in, past --file-timeout,
  // the file is still receiving.
  std::this_thread::sleep_for(seconds(3));
  EXPECT_TRUE(failed_records(out_).empty()) << rx_log();
  EXPECT_EQ(rx_log().find("FAILED"), std::string::npos) << rx_log();
  sender->signal(SIGKILL);
  EXPECT_EQ(sender->wait(seconds(10)), 128 + SIGKILL);
  const auto killed = steady_clock::now();
  EXPECT_EQ(receiver_->wait(seconds(20)), 1) << "--once: a file failed\n" << rx_log();
  EXPECT_LT(steady_clock::now() - killed, seconds(10)) << "about --file-timeout after the kill";
  EXPECT_FALSE(fs::exists(out_ / "slept.bin"));
  const auto recs = failed_records(out_);
  ASSERT_EQ(recs.size(), 1u) << rx_log();
  const std::string rec = read_file(recs[0]);
  EXPECT_THAT(rec, JsonHas("name", "slept.bin"));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("no packet for 1.0 s after the sender's last "
                                               "heartbeat saying it was sleeping")));
  EXPECT_NE(rx_log().find("slept.bin FAILED: no packet for 1.0 s after the sender's last "
                          "heartbeat saying it was sleeping"),
            std::string::npos)
      << rx_log();
}

}  // namespace
}  // namespace ddft::testing
