// --metrics end to end: the real binaries over loopback, scraped over HTTP during a transfer
// paced to last a few seconds. Only generous time bounds; the assertions are on the numbers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "http_client.hpp"
#include "support/files.hpp"
#include "support/host_probe.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

double value_or_nan(const std::string& body, const std::string& series) {
  return metric_value(body, series).value_or(std::nan(""));
}

// A TCP listener on 127.0.0.1 (an ephemeral port), to make a port taken.
struct TakenPort {
  TakenPort() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 1) != 0) {
      throw std::runtime_error("cannot listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  ~TakenPort() { ::close(fd); }
  int fd = -1;
  uint16_t port = 0;
};

class MetricsEndToEnd : public ReceiverFixture {
 protected:
  MetricsEndToEnd() : ReceiverFixture("metrics") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
  }
  void TearDown() override {
    sender_.reset();
    ReceiverFixture::TearDown();
  }

  // Starts the receiver with --metrics and `extra`, waits for its `receiving on` line, and
  // returns one scrape of its /metrics (empty when there was none).
  std::string start_and_scrape(const std::vector<std::string>& extra) {
    std::vector<std::string> options = {"--metrics", "127.0.0.1:0"};
    options.insert(options.end(), extra.begin(), extra.end());
    receiver_ = std::make_unique<Process>(small_receiver_argv(port_, out_, options), rx_log_path());
    uint16_t port = 0;
    if (!eventually([&] { return (port = logged_metrics_port(rx_log())) != 0; }, seconds(20)) ||
        !log_shows(rx_log_path(), kReceivingLine, seconds(20))) {
      return "";
    }
    return http_get(port, "/metrics").body;
  }
  // The `receiving on` line of the receiver's log, or "".
  std::string start_line() {
    std::smatch m;
    const std::string log = rx_log();
    static const std::regex re(R"(Info: receiving on [^\n]*)");
    return std::regex_search(log, m, re) ? m.str() : "";
  }

  fs::path src_, out_;
  std::unique_ptr<Process> sender_;
};

// The receiver names the engine that writes, in its `receiving on` line and in a metric. Where
// the host has io_uring (as the test's own ring finds), --io-engine auto must run it, so a
// fallback there fails; elsewhere the fallback and the kernel's reason must both show.
TEST_F(MetricsEndToEnd, TheWriteEngineIsNamedAndAFallbackIsNeverSilent) {
  for (const char* writers : {"1", "2"}) {
    SCOPED_TRACE(std::string("--writers ") + writers);
    const std::string body = start_and_scrape({"--writers", writers});
    ASSERT_FALSE(body.empty()) << rx_log();
    const std::string line = start_line();
    if (io_uring_missing().empty()) {
      EXPECT_TRUE(std::regex_search(line, std::regex("; writer: ([0-9]+ threads x )?io_uring \\(")))
          << line;
      EXPECT_EQ(value_or_nan(body, R"(ddft_receive_write_engine_info{engine="io_uring"})"), 1)
          << body;
      EXPECT_EQ(rx_log().find("io_uring unavailable"), std::string::npos) << rx_log();
    } else {
      std::cout << "this host has no io_uring (" << io_uring_missing() << "): the fallback\n";
      EXPECT_NE(line.find("pread/pwrite (synchronous; io_uring unavailable: "), std::string::npos)
          << line;
      EXPECT_NE(body.find(R"(ddft_receive_write_engine_info{engine="pwrite",fallback=")"),
                std::string::npos)
          << body;
      EXPECT_NE(rx_log().find("Warn: io_uring unavailable ("), std::string::npos) << rx_log();
    }
    receiver_->signal(SIGTERM);
    ASSERT_EQ(receiver_->wait(seconds(60)), 0) << rx_log();
    fs::remove(rx_log_path());
  }
}

// Asked for, pread/pwrite runs on any host and is no fallback.
TEST_F(MetricsEndToEnd, PwriteAskedForIsNamedWithoutAFallback) {
  const std::string body = start_and_scrape({"--io-engine", "pwrite"});
  ASSERT_FALSE(body.empty()) << rx_log();
  EXPECT_TRUE(
      std::regex_search(start_line(), std::regex(R"(; writer: pread/pwrite \(synchronous\)[,;])")))
      << start_line();
  EXPECT_EQ(value_or_nan(body, R"(ddft_receive_write_engine_info{engine="pwrite"})"), 1) << body;
  EXPECT_EQ(body.find("fallback="), std::string::npos) << body;
}

TEST_F(MetricsEndToEnd, ScrapesDuringATransferShowTheCountersMoving) {
  // 48 MiB at 12 MB/s: about 4 s on the wire.
  const uint64_t size = 48ull << 20;
  write_pattern(src_ / "paced.bin", size, 11);
  receiver_ = std::make_unique<Process>(
      small_receiver_argv(port_, out_, {"--metrics", "127.0.0.1:0", "--report-mb", "8"}),
      rx_log_path());
  uint16_t rx_port = 0;
  ASSERT_TRUE(
      eventually([&] { return (rx_port = logged_metrics_port(rx_log())) != 0; }, seconds(20)))
      << rx_log();
  ASSERT_TRUE(log_shows(rx_log_path(), kReceivingLine, seconds(20)));

  // Before any sender: the counters are there at zero, and what has no value yet says so.
  HttpReply idle = http_get(rx_port, "/metrics");
  ASSERT_EQ(idle.status, 200) << idle.head;
  EXPECT_NE(idle.head.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(value_or_nan(idle.body, "ddft_receive_files_delivered_total"), 0) << idle.body;
  EXPECT_EQ(value_or_nan(idle.body, "ddft_receive_packets_received_total"), 0);
  EXPECT_TRUE(std::isnan(value_or_nan(idle.body, "ddft_receive_seconds_since_last_packet")));
  EXPECT_TRUE(std::isnan(value_or_nan(idle.body, "ddft_receive_dr_interval_avg_seconds")));
  EXPECT_EQ(idle.body.find("ddft_receive_session_info{"), std::string::npos);
  EXPECT_NE(idle.body.find("ddft_build_info{program=\"dd_file_receive\",version=\""),
            std::string::npos);
  EXPECT_NE(idle.body.find("ddft_receive_packets_rejected_total{reason=\"bad_checksum\"} 0\n"),
            std::string::npos);
  EXPECT_GT(value_or_nan(idle.body, "ddft_receive_ring_capacity_bytes"), 32 << 20);

  sender_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_SEND_BIN, "--dest", "127.0.0.1:" + std::to_string(port_),
                               "--rate", "12", "--metrics", "127.0.0.1:0",
                               (src_ / "paced.bin").string()},
      base_ / "send.log");
  uint16_t tx_port = 0;
  ASSERT_TRUE(
      eventually([&] { return (tx_port = logged_metrics_port(tx_log())) != 0; }, seconds(20)))
      << tx_log();

  // Two scrapes of each side while the file is on the wire: the byte counters grow between them.
  std::string rx1, rx2, tx1, tx2;
  ASSERT_TRUE(eventually(
      [&] {
        rx1 = http_get(rx_port, "/metrics").body;
        return value_or_nan(rx1, "ddft_receive_packets_received_total") > 0;
      },
      seconds(20)))
      << rx1;
  ASSERT_TRUE(eventually(
      [&] {
        tx1 = http_get(tx_port, "/metrics").body;
        return value_or_nan(tx1, "ddft_send_bytes_total") > 0;
      },
      seconds(20)))
      << tx1;
  std::this_thread::sleep_for(milliseconds(1200));
  rx2 = http_get(rx_port, "/metrics").body;
  tx2 = http_get(tx_port, "/metrics").body;
  ASSERT_FALSE(tx2.empty()) << "the sender finished before its second scrape:\n" << tx_log();
  EXPECT_GT(value_or_nan(rx2, "ddft_receive_packets_received_total"),
            value_or_nan(rx1, "ddft_receive_packets_received_total"));
  EXPECT_GT(value_or_nan(rx2, "ddft_receive_packet_bytes_total"),
            value_or_nan(rx1, "ddft_receive_packet_bytes_total"));
  EXPECT_LT(value_or_nan(rx2, "ddft_receive_seconds_since_last_packet"), 30);
  EXPECT_EQ(value_or_nan(rx2, "ddft_receive_files_in_flight"), 1) << rx2;
  EXPECT_GT(value_or_nan(tx2, "ddft_send_bytes_total"), value_or_nan(tx1, "ddft_send_bytes_total"));
  EXPECT_GT(value_or_nan(tx2, "ddft_send_wire_bytes_total"),
            value_or_nan(tx1, "ddft_send_wire_bytes_total"));
  EXPECT_GT(value_or_nan(tx2, "ddft_send_datagrams_total"),
            value_or_nan(tx1, "ddft_send_datagrams_total"));
  EXPECT_EQ(value_or_nan(tx2, "ddft_send_file_size_bytes"), static_cast<double>(size));
  EXPECT_GT(value_or_nan(tx2, "ddft_send_file_bytes"), 0);
  EXPECT_LE(value_or_nan(tx2, "ddft_send_file_bytes"), static_cast<double>(size));
  EXPECT_EQ(value_or_nan(tx2, "ddft_send_rate_limit_bytes_per_second"), 12.0 * 1024 * 1024);
  // Measured over the last 5 s: above nothing, below the limit with room for the bursts.
  const double rate = value_or_nan(tx2, "ddft_send_rate_bytes_per_second");
  EXPECT_GT(rate, 0) << tx2;
  EXPECT_LT(rate, 2 * 12.0 * 1024 * 1024) << tx2;
  EXPECT_LT(value_or_nan(tx2, "ddft_send_seconds_since_last_datagram"), 30);
  EXPECT_EQ(value_or_nan(tx2, "ddft_send_files_sent_total"), 0);

  // The session both sides name is the one the sender logged.
  std::smatch m;
  const std::string tlog = tx_log();
  ASSERT_TRUE(std::regex_search(tlog, m, std::regex("session ([0-9a-f]{16})"))) << tlog;
  const std::string session = m[1];
  EXPECT_EQ(value_or_nan(tx2, "ddft_send_session_info{session=\"" + session + "\"}"), 1) << tx2;
  EXPECT_EQ(value_or_nan(rx2, "ddft_receive_session_info{session=\"" + session + "\"}"), 1) << rx2;

  ASSERT_EQ(sender_->wait(seconds(120)), 0) << tx_log();

  // At the end: the file delivered, every byte counted, and the ring was used.
  std::string rx3;
  ASSERT_TRUE(eventually(
      [&] {
        rx3 = http_get(rx_port, "/metrics").body;
        return value_or_nan(rx3, "ddft_receive_files_delivered_total") == 1;
      },
      seconds(30)))
      << rx3 << rx_log();
  EXPECT_EQ(value_or_nan(rx3, "ddft_receive_bytes_delivered_total"), static_cast<double>(size));
  EXPECT_EQ(value_or_nan(rx3, "ddft_receive_files_failed_total"), 0);
  EXPECT_EQ(value_or_nan(rx3, "ddft_receive_files_in_flight"), 0);
  EXPECT_GT(value_or_nan(rx3, "ddft_receive_ring_high_water_bytes"), 0);
  EXPECT_GT(value_or_nan(rx3, "ddft_receive_ring_high_water_ratio"), 0);
  EXPECT_LE(value_or_nan(rx3, "ddft_receive_ring_high_water_ratio"), 1);
  EXPECT_GE(value_or_nan(rx3, "ddft_receive_packets_received_total"), size / 8952.0);
  EXPECT_GT(value_or_nan(rx3, "ddft_receive_fw_writes_total"), 0);
  // --report-mb 8 printed Rcvd: lines, so DR and FW of the last one have values.
  EXPECT_GE(value_or_nan(rx3, "ddft_receive_dr_interval_avg_seconds"), 0) << rx3;
  EXPECT_GE(value_or_nan(rx3, "ddft_receive_fw_interval_peak_seconds"), 0) << rx3;
  EXPECT_TRUE(same_content(src_ / "paced.bin", out_ / "paced.bin"));

  receiver_->signal(SIGTERM);
  EXPECT_EQ(receiver_->wait(seconds(60)), 0) << rx_log();
  // Serving stopped with the program.
  EXPECT_EQ(connect_loopback(rx_port), -1);
}

TEST_F(MetricsEndToEnd, ATakenPortStopsTheReceiverBeforeAnythingElse) {
  TakenPort taken;
  const int rc = run({DDFT_RECEIVE_BIN, "--listen", "127.0.0.1:" + std::to_string(port_),
                      "--output", out_.string(), "--buffer-mb", "64", "--write-buffers", "16",
                      "--metrics", "127.0.0.1:" + std::to_string(taken.port)},
                     base_ / "receive.log", seconds(20));
  EXPECT_EQ(rc, 1);
  const std::string log = rx_log();
  EXPECT_NE(log.find("Error: cannot serve metrics on 127.0.0.1:" + std::to_string(taken.port) +
                     ": Address already in use"),
            std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;  // one line, nothing before it
  // The output folder was not opened: no lock or state file was made in it.
  EXPECT_TRUE(fs::is_empty(out_));
}

TEST_F(MetricsEndToEnd, ATakenPortStopsTheSenderBeforeItSendsAnything) {
  TakenPort taken;
  // Something listening on the destination, to see that nothing comes.
  const int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port_);
  ASSERT_EQ(::bind(udp, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  write_pattern(src_ / "a.bin", 100000, 3);
  const int rc = run({DDFT_SEND_BIN, "--dest", "127.0.0.1:" + std::to_string(port_), "--metrics",
                      "127.0.0.1:" + std::to_string(taken.port), (src_ / "a.bin").string()},
                     base_ / "send.log", seconds(20));
  EXPECT_EQ(rc, 2);
  const std::string log = tx_log();
  EXPECT_NE(log.find("Error: cannot serve metrics on 127.0.0.1:" + std::to_string(taken.port) +
                     ": Address already in use"),
            std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  pollfd p{udp, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 200), 0) << "a datagram was sent";
  ::close(udp);
}

TEST_F(MetricsEndToEnd, ABadAddressIsAConfigError) {
  for (const char* bin : {DDFT_RECEIVE_BIN, DDFT_SEND_BIN}) {
    const fs::path log = base_ / "bad.log";
    fs::remove(log);
    std::vector<std::string> argv = {bin, "--metrics", "localhost:9464"};
    if (std::string(bin) == DDFT_RECEIVE_BIN) {
      argv.insert(argv.end(),
                  {"--listen", "127.0.0.1:" + std::to_string(port_), "--output", out_.string()});
    } else {
      argv.insert(argv.end(), {"--dest", "127.0.0.1:" + std::to_string(port_), "/etc/hostname"});
    }
    EXPECT_NE(run(argv, log, seconds(20)), 0) << bin;
    const std::string text = read_file(log);
    EXPECT_NE(text.find("--metrics: 'localhost:9464' is not ADDR:PORT with a numeric IP address"),
              std::string::npos)
        << text;
  }
}

}  // namespace
}  // namespace ddft::testing
