// Progress: the Rcvd: line and the DR/FW intervals it closes.
#include "receiver/assembly/progress.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace ddft::receiver {
namespace {

TEST(Progress, ALineIsDueEveryStepAndClosesTheInterval) {
  std::ostringstream text;
  auto old = spdlog::default_logger();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  sink->set_pattern("%v");
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  Progress p;
  File f;
  f.size = 4 << 20;
  f.next_report = 1 << 20;
  p.note_read_wait(std::chrono::milliseconds(2));
  p.note_write(3'000'000);
  f.bytes_received = 1000;
  p.report(f, common::Clock::time_point(std::chrono::seconds(1)), 1 << 20);
  EXPECT_TRUE(text.str().empty());
  f.bytes_received = (2 << 20) + 5;
  p.report(f, common::Clock::time_point(std::chrono::seconds(1)), 1 << 20);
  spdlog::set_default_logger(old);
  EXPECT_EQ(text.str().rfind("Rcvd: 2,097,157 (50.00%)", 0), 0u) << text.str();
  EXPECT_NE(text.str().find("DR: 2.00/2 msec FW: 3.00/3 msec"), std::string::npos) << text.str();
  EXPECT_EQ(f.next_report, uint64_t{3} << 20);
  EXPECT_EQ(p.waits().dr_last.count, 1u);
  EXPECT_EQ(p.waits().fw_all.count, 1u);
  p.note_read_wait(std::chrono::nanoseconds(-5));  // a clock step back counts as no wait
  EXPECT_EQ(p.waits().dr_all.count, 2u);
  EXPECT_EQ(p.waits().dr_all.max_ns, 2'000'000u);
}

}  // namespace
}  // namespace ddft::receiver
