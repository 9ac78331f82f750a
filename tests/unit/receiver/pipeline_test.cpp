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
#include "support/fake_sender.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
using namespace std::chrono_literals;

ReceiverConfig config(const std::filesystem::path& out) {
  ReceiverConfig cfg;
  CLI::App app;
  add_receiver_options(app, cfg);
  const std::string o = out.string();
  const char* argv[] = {"dd_file_receive",
                        "--listen",
                        "127.0.0.1:0",
                        "--output",
                        o.c_str(),
                        "--buffer-mb",
                        "16",
                        "--write-buffers",
                        "8",
                        "--write-block-kb",
                        "64",
                        "--once",
                        "--socket-buffer-mb",
                        "4"};
  app.parse(14, argv);
  finalize_receiver_config(cfg);
  return cfg;
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
  EXPECT_EQ(st.writer.session, 0x5EEDu);
  EXPECT_EQ(rx.hooks(), nullptr) << "no --on-complete";
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
