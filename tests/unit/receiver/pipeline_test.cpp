// The receiver's pipeline in-process, on a real UDP socket over loopback and a real temp folder:
// it tells its observer when it is receiving (naming the link as given), writes the files a
// sender's session brings, and with --once returns at the session's final heartbeat with the
// totals. A bad output folder is refused before anything else. Bounded: a receiver that does not
// finish within 60 s is stopped (and the test fails); nothing is timed.
#include "receiver/pipeline.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/udp_transport.hpp"
#include "receiver/config.hpp"
#include "receiver/operations/metrics.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
using namespace std::chrono_literals;
using ddft::testing::JsonHas;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

// `lanes` times --listen 127.0.0.1:0, and `extra` options.
ReceiverConfig config(const std::filesystem::path& out, int lanes = 1,
                      std::vector<std::string> extra = {}) {
  ReceiverConfig cfg;
  CLI::App app;
  add_receiver_options(app, cfg);
  std::vector<std::string> args = {
      "dd_file_receive",    "--output", out.string(),       "--buffer-mb", "16",
      "--write-buffers",    "8",        "--write-block-kb", "64",          "--once",
      "--socket-buffer-mb", "4"};
  for (int i = 0; i < lanes; ++i) {
    args.emplace_back("--listen");
    args.emplace_back("127.0.0.1:0");
  }
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  finalize_receiver_config(cfg);
  return cfg;
}

// Sends every datagram of `wire` to 127.0.0.1:`port`.
void send_to(uint16_t port, const std::vector<testing::Datagram>& wire) {
  common::UdpSink sink(common::Endpoint{"127.0.0.1", port}, 1 << 20);
  for (const auto& d : wire) {
    const std::span<const uint8_t> one[] = {d};
    size_t sent = 0;
    ASSERT_FALSE(sink.send(one, &sent));
  }
}

// Notes the link the receiver says it receives on.
class Watcher final : public ReceiverObserver {
 public:
  void on_receiving(std::string_view link) override {
    std::lock_guard lock(mu_);
    link_ = std::string(link);
    cv_.notify_all();
  }
  void on_tick(const Liveness&) override {}
  // The link, once receiving (waits at most 30 s; "" then).
  std::string wait_receiving() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 30s, [&] { return !link_.empty(); });
    return link_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string link_;
};

TEST(ReceiverPipeline, ReceivesASessionOverUdpAndStopsAtItsEndWithOnce) {
  testing::ScratchDir dir("rx_pipeline");
  const ReceiverConfig cfg = config(dir.path());
  uint16_t port = 0;
  auto open = [&]() -> std::unique_ptr<common::DatagramSource> {
    auto src = std::make_unique<common::UdpSource>(cfg.listen, 4u << 20);
    port = src->local_port();
    return src;
  };
  common::SteadyClock& clock = common::SteadyClock::instance();
  Receiver rx(cfg, open, clock);
  ASSERT_NE(port, 0u);
  Watcher watcher;
  rx.set_observer(&watcher);
  std::stop_source stop;
  auto done = std::async(std::launch::async, [&] { return rx.run(stop.get_token()); });
  EXPECT_EQ(watcher.wait_receiving(), "127.0.0.1:0") << "the link as it was given";

  testing::FakeSender tx(0x5EED);
  const std::string content(25'000, 'q');
  std::vector<testing::Datagram> wire = tx.file(1, "dir/one.bin", content);
  for (auto& d : tx.file(2, "two.txt", "two")) wire.push_back(std::move(d));
  wire.push_back(tx.heartbeat(true));
  common::UdpSink sink(common::Endpoint{"127.0.0.1", port}, 1 << 20);
  for (const auto& d : wire) {
    const std::span<const uint8_t> one[] = {d};
    size_t sent = 0;
    ASSERT_FALSE(sink.send(one, &sent));
  }
  if (done.wait_for(60s) != std::future_status::ready) {
    stop.request_stop();
    ADD_FAILURE() << "the receiver did not end with the session";
  }
  const ReceiveTotals t = done.get();
  EXPECT_EQ(t.files_passed, 2u);
  EXPECT_EQ(t.files_failed, 0u);
  EXPECT_EQ(t.datagrams, wire.size());
  EXPECT_EQ(testing::read_file(dir.path() / "dir/one.bin"), content);
  EXPECT_EQ(testing::read_file(dir.path() / "two.txt"), "two");
  const ReceiverStatus st = rx.status();
  ASSERT_EQ(st.writer.senders.size(), 1u);
  EXPECT_EQ(st.writer.senders[0].first, 0x5EEDu);
  EXPECT_EQ(rx.hooks(), nullptr) << "no --on-complete";
}

TEST(ReceiverPipeline, LanesFeedOneFileTableAndADeadLaneIsNamedInItsFilesRecords) {
  testing::ScratchDir dir("rx_pipeline");
  // Three lanes; the sender's third never reaches this receiver (its cable is out). A short
  // --file-timeout: the dead lane is taken as gone that long after the session starts.
  const ReceiverConfig cfg = config(dir.path(), 3, {"--file-timeout", "2"});
  ASSERT_EQ(cfg.lanes(), 3u);
  std::vector<uint16_t> ports(3);
  auto open = [&](size_t lane) -> std::unique_ptr<common::DatagramSource> {
    auto src = std::make_unique<common::UdpSource>(cfg.listens.at(lane), 4u << 20);
    ports[lane] = src->local_port();
    return src;
  };
  Receiver rx(cfg, open, common::SteadyClock::instance());
  ASSERT_EQ(rx.lanes(), 3u);
  Watcher watcher;
  rx.set_observer(&watcher);
  std::stop_source stop;
  auto done = std::async(std::launch::async, [&] { return rx.run(stop.get_token()); });
  EXPECT_EQ(watcher.wait_receiving(), "127.0.0.1:0, 127.0.0.1:0, 127.0.0.1:0");

  // One session over three lanes, each with its own sequence numbers: lane 0 carries a.bin,
  // lane 1 b.bin, both carry their stripe of big.bin; lane 2 carried lost.bin.
  testing::FakeSender lane0(0xABC), lane1(0xABC);
  std::string big(300'000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + i / 7);
  const testing::FakeSender::Listed listed[] = {
      {1, "a.bin", "alpha", common::VerifyType::kB2B, false, 0},
      {2, "b.bin", "bravo", common::VerifyType::kB2B, false, 1},
      {3, "big.bin", big, common::VerifyType::kB2B, false, common::kLaneAll},
      {4, "lost.bin", "never", common::VerifyType::kB2B, false, 2}};
  std::vector<testing::Datagram> w0 = {lane0.heartbeat(false, 1000, 0, 3)};
  std::vector<testing::Datagram> w1 = {lane1.heartbeat(false, 1000, 1, 3)};
  for (auto& d : lane0.file(1, "a.bin", "alpha")) w0.push_back(std::move(d));
  for (auto& d : lane1.file(2, "b.bin", "bravo")) w1.push_back(std::move(d));
  w0.push_back(lane0.striped_announce(3, "big.bin", big.size()));
  w1.push_back(lane1.striped_announce(3, "big.bin", big.size()));
  for (auto& d : lane0.data(3, big, 0, 0, 100'000)) w0.push_back(std::move(d));
  for (auto& d : lane1.data(3, big, 0, 100'000)) w1.push_back(std::move(d));
  w0.push_back(lane0.end(3, big));
  w1.push_back(lane1.end(3, big));
  for (auto* l : {&lane0, &lane1}) {
    auto& w = l == &lane0 ? w0 : w1;
    w.push_back(l->file_list({listed[0], listed[1], listed[2], listed[3]}, common::kListComplete));
    w.push_back(l->heartbeat(true, 1000, l == &lane0 ? 0 : 1, 3));
  }
  send_to(ports[1], w1);
  send_to(ports[0], w0);
  if (done.wait_for(60s) != std::future_status::ready) {
    stop.request_stop();
    ADD_FAILURE() << "the receiver did not end with the session";
  }
  const ReceiveTotals t = done.get();
  EXPECT_EQ(t.files_passed, 3u);
  EXPECT_EQ(t.files_failed, 1u);
  EXPECT_EQ(t.datagrams, w0.size() + w1.size());
  EXPECT_EQ(testing::read_file(dir.path() / "a.bin"), "alpha");
  EXPECT_EQ(testing::read_file(dir.path() / "b.bin"), "bravo");
  EXPECT_TRUE(testing::read_file(dir.path() / "big.bin") == big);
  EXPECT_THAT(testing::failed_record_texts(dir.path()),
              Contains(AllOf(JsonHas("name", "lost.bin"), JsonHas("lane", 2),
                             JsonHas("reason", HasSubstr("the sender's lane 2")))));
  EXPECT_EQ(rx.lane_status(2).datagrams, 0u);
  EXPECT_EQ(rx.status().datagrams, t.datagrams);
  // One set of metrics: the link's side per lane, labelled.
  common::MetricsRegistry reg;
  add_receiver_metrics(reg, rx, cfg);
  const std::string m = reg.render();
  EXPECT_NE(m.find("ddft_receive_packets_received_total{lane=\"2\",link=\"127.0.0.1:0\"} 0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(fmt::format("ddft_receive_packets_received_total{{lane=\"0\",link=\"127.0.0."
                               "1:0\"}} {}",
                               w0.size())),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("ddft_receive_files_delivered_total 3"), std::string::npos) << m;
}

TEST(ReceiverPipeline, ABadOutputFolderIsRefusedBeforeTheLinkOpens) {
  testing::ScratchDir dir("rx_pipeline");
  const ReceiverConfig cfg = config(dir.path() / "missing");
  bool opened = false;
  auto open = [&]() -> std::unique_ptr<common::DatagramSource> {
    opened = true;
    return nullptr;
  };
  try {
    Receiver rx(cfg, open, common::SteadyClock::instance());
    FAIL() << "a missing output folder was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_FALSE(opened);
}

}  // namespace
}  // namespace ddft::receiver
