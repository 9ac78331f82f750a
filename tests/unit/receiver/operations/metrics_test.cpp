// The receiver's metrics: registered on a registry for a real (not yet running) Receiver, every
// family renders with its HELP and TYPE lines and the counters start at zero.
#include "receiver/operations/metrics.hpp"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.hpp"
#include "common/udp_transport.hpp"
#include "support/host_probe.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {

// A receiver with small buffers on `out` (not running), `extra` options added.
ReceiverConfig small_config(const std::string& out, std::vector<std::string> extra = {}) {
  ReceiverConfig cfg;
  CLI::App app;
  add_receiver_options(app, cfg);
  std::vector<std::string> args = {
      "dd_file_receive", "--listen", "127.0.0.1:0",      "--output", out, "--buffer-mb", "16",
      "--write-buffers", "8",        "--write-block-kb", "64"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  finalize_receiver_config(cfg);
  return cfg;
}

// The value of the sample line `name VALUE` (no labels) in `text`, or -1 when there is none.
double sample_of(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + name.size() + 2));
}

TEST(ReceiverMetrics, EveryFamilyRendersAndStartsAtZero) {
  testing::ScratchDir dir("rx_metrics");
  const ReceiverConfig cfg = small_config(dir.path().string());
  auto open = [&] { return std::make_unique<common::UdpSource>(cfg.listen, 1 << 20); };
  Receiver rx(cfg, open, common::SteadyClock::instance());
  common::MetricsRegistry registry;
  add_receiver_metrics(registry, rx, cfg);
  const std::string text = registry.render();
  for (const char* family :
       {"ddft_receive_files_delivered_total", "ddft_receive_files_failed_total",
        "ddft_receive_files_refused_total", "ddft_receive_files_filtered_total",
        "ddft_receive_fec_rebuilt_packets_used_total", "ddft_receive_repeat_filled_chunks_total"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " counter"), std::string::npos)
        << family << "\n"
        << text;
    EXPECT_NE(text.find(std::string("\n") + family + " 0\n"), std::string::npos) << family;
  }
  EXPECT_NE(text.find("ddft_build_info"), std::string::npos) << text;
}

// The engine that writes is named: what was asked for, and with --io-engine auto io_uring where
// the host has it (a ring of the test's own), else pwrite with the kernel's reason.
TEST(ReceiverMetrics, TheWriteEngineIsNamed) {
  testing::ScratchDir dir("rx_metrics_engine");
  const std::string auto_series =
      testing::io_uring_missing().empty()
          ? "ddft_receive_write_engine_info{engine=\"io_uring\"} 1\n"
          : "ddft_receive_write_engine_info{engine=\"pwrite\",fallback=\"";
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{}, auto_series},
      {{"--writers", "3"}, auto_series},
      {{"--io-engine", "pwrite"}, "ddft_receive_write_engine_info{engine=\"pwrite\"} 1\n"},
      {{"--sink", "null"}, "ddft_receive_write_engine_info{engine=\"null\"} 1\n"}};
  for (const auto& [extra, series] : cases) {
    const ReceiverConfig cfg = small_config(dir.path().string(), extra);
    auto open = [&] { return std::make_unique<common::UdpSource>(cfg.listen, 1 << 20); };
    Receiver rx(cfg, open, common::SteadyClock::instance());
    common::MetricsRegistry registry;
    add_receiver_metrics(registry, rx, cfg);
    const std::string text = registry.render();
    EXPECT_NE(text.find("# TYPE ddft_receive_write_engine_info gauge\n"), std::string::npos);
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
}

// The output folder's file system, sampled at each scrape: as statvfs(3) says, and absent when
// nothing is written (--sink null).
TEST(ReceiverMetrics, OutputDiskFreeAndSize) {
  testing::ScratchDir dir("rx_metrics_disk");
  const ReceiverConfig cfg = small_config(dir.path().string());
  auto open = [&] { return std::make_unique<common::UdpSource>(cfg.listen, 1 << 20); };
  Receiver rx(cfg, open, common::SteadyClock::instance());
  common::MetricsRegistry registry;
  add_receiver_metrics(registry, rx, cfg);
  struct statvfs before {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &before), 0);
  const std::string text = registry.render();
  struct statvfs after {};
  ASSERT_EQ(::statvfs(dir.path().c_str(), &after), 0);
  EXPECT_NE(text.find("# TYPE ddft_receive_output_free_bytes gauge"), std::string::npos) << text;
  const double size = sample_of(text, "ddft_receive_output_size_bytes");
  EXPECT_EQ(size, static_cast<double>(before.f_blocks) * static_cast<double>(before.f_frsize));
  // Other programs may write to the same file system meanwhile: within 256 MiB of both samples.
  const double free = sample_of(text, "ddft_receive_output_free_bytes");
  const double slack = 256.0 * 1024 * 1024;
  const auto bytes = [](const struct statvfs& s) {
    return static_cast<double>(s.f_bavail) * static_cast<double>(s.f_frsize);
  };
  EXPECT_GE(free, std::min(bytes(before), bytes(after)) - slack) << text;
  EXPECT_LE(free, std::max(bytes(before), bytes(after)) + slack) << text;
  EXPECT_GT(free, 0) << text;
  EXPECT_LE(free, size);

  testing::ScratchDir null_dir("rx_metrics_null");
  const ReceiverConfig null_cfg = small_config(null_dir.path().string(), {"--sink", "null"});
  Receiver null_rx(null_cfg, open, common::SteadyClock::instance());
  common::MetricsRegistry null_registry;
  add_receiver_metrics(null_registry, null_rx, null_cfg);
  const std::string null_text = null_registry.render();
  EXPECT_EQ(sample_of(null_text, "ddft_receive_output_free_bytes"), -1) << null_text;
  EXPECT_EQ(sample_of(null_text, "ddft_receive_output_size_bytes"), -1) << null_text;
}

}  // namespace
}  // namespace ddft::receiver
