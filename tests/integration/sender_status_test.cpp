// The sender's status across the diode, end to end over loopback: a hot folder backs up and
// drains, and the receiver's /metrics, its JSON file and its log follow it; a file the sender
// cannot read is named on the high side. The real binaries; only generous time bounds.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "http_client.hpp"
#include "support/files.hpp"
#include "support/json_check.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

// The ddft_sender_* lines of a scrape.
std::string sender_lines(const std::string& body) {
  std::string out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find('\n', at);
    const std::string line = body.substr(at, end == std::string::npos ? end : end - at);
    if (line.starts_with("ddft_sender_")) out += line + "\n";
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}

class SenderStatus : public ReceiverFixture {
 protected:
  SenderStatus() : ReceiverFixture("status") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    out_ = make_dir("out");
    receiver_ = std::make_unique<Process>(
        small_receiver_argv(port_, out_, {"--metrics", "127.0.0.1:0"}), rx_log_path());
    ASSERT_TRUE(
        eventually([&] { return (metrics_ = logged_metrics_port(rx_log())) != 0; }, seconds(20)))
        << rx_log();
    ASSERT_TRUE(log_shows(rx_log_path(), kReceivingLine, seconds(20))) << rx_log();
  }
  void TearDown() override {
    sender_.reset();
    ReceiverFixture::TearDown();
  }
  std::string scrape() const { return http_get(metrics_, "/metrics").body; }
  // The value of ddft_sender_NAME{sender=...} for the one sender, or -1.
  double sender_value(const std::string& body, const std::string& name) const {
    std::smatch m;
    const std::regex re("\\n" + name + "\\{sender=\"[^\"]+\"\\} ([0-9.e+]+)");
    return std::regex_search(body, m, re) ? std::stod(m[1]) : -1;
  }

  fs::path out_;
  uint16_t metrics_ = 0;
  std::unique_ptr<Process> sender_;
};

TEST_F(SenderStatus, AHotFolderBacklogAndItsDrainShowOnTheHighSide) {
  const fs::path watch = make_dir("watch");
  // 24 MiB at 3 MB/s: the folder drains over about 8 s.
  for (int i = 0; i < 24; ++i) write_pattern(watch / ("f" + std::to_string(i)), 1 << 20, i);
  sender_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_SEND_BIN, "--watch", watch.string(), "--dest", listen(),
                               "--rate", "3", "--settle", "0.2"},
      tx_log_path());
  // Backed up: the receiver shows the files waiting on the low side.
  std::string backlog;
  ASSERT_TRUE(eventually(
      [&] {
        backlog = scrape();
        return sender_value(backlog, "ddft_sender_queued_files") > 0;
      },
      seconds(30)))
      << backlog << rx_log() << tx_log();
  std::cout << "backing up:\n" << sender_lines(backlog);
  EXPECT_EQ(sender_value(backlog, "ddft_sender_rate_limit_bytes_per_second"), 3.0 * (1 << 20));
  EXPECT_EQ(sender_value(backlog, "ddft_sender_lanes_up"), 1);
  EXPECT_EQ(sender_value(backlog, "ddft_sender_status_interval_seconds"), 10);
  // Bytes count once the sender has probed a file (its settle time): 0 at first.
  EXPECT_GE(sender_value(backlog, "ddft_sender_queued_bytes"), 0);
  EXPECT_NE(backlog.find("ddft_sender_fs_size_bytes{sender=\"session-"), std::string::npos);
  EXPECT_NE(backlog.find("fs=\"watch\"}"), std::string::npos);
  // Drained: every file delivered, and the status says nothing waits, at once (not after the
  // next interval: the queue emptying is a change that matters).
  std::string drained;
  ASSERT_TRUE(eventually(
      [&] {
        drained = scrape();
        return metric_value(drained, "ddft_receive_files_delivered_total").value_or(0) == 24 &&
               sender_value(drained, "ddft_sender_queued_files") == 0;
      },
      seconds(60)))
      << drained << rx_log() << tx_log();
  std::cout << "drained:\n" << sender_lines(drained);
  EXPECT_EQ(sender_value(drained, "ddft_sender_oldest_waiting_seconds"), 0);
  EXPECT_EQ(sender_value(drained, "ddft_sender_read_failures_total"), 0);
  // The last status, for operators, in a small JSON file beside the receiver's other state.
  const std::string json = read_file(out_ / ".ddft" / "sender-status.json");
  std::string error;
  ASSERT_TRUE(JsonChecker::parse_object(json, &error)) << error << "\n" << json;
  EXPECT_NE(json.find("\"queued_files\": 0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"hot_folder\": true"), std::string::npos) << json;
  sender_->signal(SIGTERM);
  EXPECT_EQ(sender_->wait(seconds(60)), 0) << tx_log();
}

TEST_F(SenderStatus, AFileTheSenderCannotReadIsNamedOnTheHighSide) {
  const fs::path src = make_dir("src");
  write_pattern(src / "a.bin", 100000, 1);
  sender_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_SEND_BIN, "--dest", listen(), "--eof-delay", "4000",
                               (src / "a.bin").string(), (src / "gone.bin").string()},
      tx_log_path());
  ASSERT_TRUE(log_shows(rx_log_path(),
                        "1 file(s) it could not read since its last status (1 since it started)",
                        seconds(20)))
      << rx_log();
  // While the sender's session lasts (its EOF_DELAY): once it ends, its status goes.
  std::string body;
  ASSERT_TRUE(eventually(
      [&] {
        body = scrape();
        return sender_value(body, "ddft_sender_read_failures_total") == 1;
      },
      seconds(20)))
      << body;
  EXPECT_EQ(sender_->wait(seconds(60)), 1) << tx_log();
  EXPECT_TRUE(eventually(
      [&] { return metric_value(scrape(), "ddft_receive_files_delivered_total") == 1.0; },
      seconds(20)));
  // A sender that ended its session is not missing: its status goes, and no line says it is
  // silent.
  ASSERT_TRUE(eventually(
      [&] { return scrape().find("ddft_sender_status_info{") == std::string::npos; }, seconds(30)))
      << scrape();
  EXPECT_EQ(rx_log().find("no status"), std::string::npos) << rx_log();
}

}  // namespace
}  // namespace ddft::testing
