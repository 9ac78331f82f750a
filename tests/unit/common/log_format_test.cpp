// The DFTS log's numbers, durations and rates, as its lines print them.
#include "common/log_format.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

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

}  // namespace
}  // namespace ddft::common
