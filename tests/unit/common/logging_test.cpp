// The log's helpers: numbers, durations and rates as the DFTS lines print them, and the Console
// that keeps a redrawn overlay (the progress display) out of the way of whole log lines.
#include "common/logging.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace ddft::common {
namespace {
using namespace std::chrono;

TEST(Format, Commas) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(12), "12");
  EXPECT_EQ(with_commas(123), "123");
  EXPECT_EQ(with_commas(1234), "1,234");
  EXPECT_EQ(with_commas(12345), "12,345");
  EXPECT_EQ(with_commas(104857600), "104,857,600");
  EXPECT_EQ(with_commas(1000000000000), "1,000,000,000,000");
}

TEST(Format, Durations) {
  EXPECT_EQ(format_hms(seconds(5)), "00:00:05");
  EXPECT_EQ(format_hms(milliseconds(4412)), "00:00:04");
  EXPECT_EQ(format_hms(hours(2) + minutes(3) + seconds(4)), "02:03:04");
  EXPECT_EQ(format_hms_ms(milliseconds(7335)), "00:00:07.335");
}

TEST(Format, RateIsMebibytesPerSecond) {
  // Seed 004's example: 104,857,600 bytes in 7.335 s prints 13.633 MB/s.
  EXPECT_EQ(fmt::format("{:.3f}", mib_per_s(104857600, milliseconds(7335))), "13.633");
  EXPECT_EQ(mib_per_s(100, nanoseconds(0)), 0.0);
}

// An overlay that says when it is erased and drawn, into the console's own stream.
class MarkOverlay : public Console::Overlay {
 public:
  void erase(std::FILE* out) override { std::fputs("<erase>", out); }
  void draw(std::FILE* out) override { std::fputs("<draw>", out); }
};

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(Console, WritesWholeLinesAroundItsOverlay) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Console console(f);
    EXPECT_EQ(console.file(), f);
    console.write_line("one\n");
    MarkOverlay overlay;
    console.set_overlay(&overlay);
    console.write_line("two\n");
    console.locked([](std::FILE* out) { std::fputs("[locked]", out); });
    console.set_overlay(nullptr);
    console.write_line("three\n");
    console.flush();
  }
  EXPECT_EQ(contents(f), "one\n<erase>two\n<draw>[locked]three\n");
  std::fclose(f);
}

TEST(Console, StdoutConsoleIsOneObjectOnStdout) {
  EXPECT_EQ(&stdout_console(), &stdout_console());
  EXPECT_EQ(stdout_console().file(), stdout);
}

}  // namespace
}  // namespace ddft::common
