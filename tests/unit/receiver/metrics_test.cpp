// The receiver's metrics: registered on a registry for a real (not yet running) Receiver, every
// family renders with its HELP and TYPE lines and the counters start at zero.
#include "receiver/metrics.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

#include "common/clock.hpp"
#include "common/udp_transport.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {

TEST(ReceiverMetrics, EveryFamilyRendersAndStartsAtZero) {
  testing::ScratchDir dir("rx_metrics");
  ReceiverConfig cfg;
  CLI::App app;
  add_receiver_options(app, cfg);
  const std::string out = dir.path().string();
  const char* argv[] = {"dd_file_receive",
                        "--listen",
                        "127.0.0.1:0",
                        "--output",
                        out.c_str(),
                        "--buffer-mb",
                        "16",
                        "--write-buffers",
                        "8",
                        "--write-block-kb",
                        "64"};
  app.parse(11, argv);
  finalize_receiver_config(cfg);
  auto open = [&] { return std::make_unique<common::UdpSource>(cfg.listen, 1 << 20); };
  Receiver rx(cfg, open, common::SteadyClock::instance());
  common::MetricsRegistry registry;
  add_receiver_metrics(registry, rx, cfg);
  const std::string text = registry.render();
  for (const char* family :
       {"ddft_receive_files_delivered_total", "ddft_receive_files_failed_total",
        "ddft_receive_files_refused_total", "ddft_receive_files_filtered_total"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " counter"), std::string::npos)
        << family << "\n"
        << text;
    EXPECT_NE(text.find(std::string("\n") + family + " 0\n"), std::string::npos) << family;
  }
  EXPECT_NE(text.find("ddft_build_info"), std::string::npos) << text;
}

}  // namespace
}  // namespace ddft::receiver
