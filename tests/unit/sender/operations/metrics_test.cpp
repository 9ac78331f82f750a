// The sender's metrics: registered for a SendStatus, they render what the transmit thread
// published, and the session's info series appears only once there is a session.
#include "sender/operations/metrics.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>

namespace ddft::sender {
namespace {

TEST(SenderMetrics, RenderWhatTheStatusHolds) {
  SenderConfig cfg;
  CLI::App app;
  add_sender_options(app, cfg);
  const char* argv[] = {"dd_file_send", "--dest", "127.0.0.1:9", "x"};
  app.parse(4, argv);
  finalize_sender_config(cfg);
  SendStatus status;
  common::FakeClock clock;
  common::MetricsRegistry registry;
  add_sender_metrics(registry, status, cfg, clock);
  std::string text = registry.render();
  EXPECT_NE(text.find("# TYPE ddft_send_files_sent_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("\nddft_send_files_sent_total 0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("ddft_send_session_info{"), std::string::npos) << "no session yet";
  EXPECT_NE(text.find("ddft_build_info"), std::string::npos);
  EXPECT_NE(text.find("\nddft_send_lanes 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nddft_send_lanes_up 0\n"), std::string::npos) << "no session yet";
  status.files_sent = 3;
  status.bytes = 12345;
  status.session_id = 0xABCDEF;
  status.lanes_up = 1;
  text = registry.render();
  EXPECT_NE(text.find("\nddft_send_lanes_up 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nddft_send_files_sent_total 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nddft_send_bytes_total 12345\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ddft_send_session_info{session=\"0000000000abcdef\"} 1"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace ddft::sender
