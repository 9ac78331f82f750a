// Formats of the DFTS receive log, endpoint parsing and JSON quoting.
#include <gtest/gtest.h>

#include <chrono>

#include "common/json.hpp"
#include "common/logging.hpp"
#include "common/transport.hpp"

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

TEST(Endpoint, Parses) {
  Endpoint e;
  std::string err;
  ASSERT_TRUE(parse_endpoint("127.0.0.1:5000", &e, &err));
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 5000);
  ASSERT_TRUE(parse_endpoint("[::1]:6000", &e, &err));
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.to_string(), "[::1]:6000");
  ASSERT_TRUE(parse_endpoint("localhost:1", &e, &err));
  for (const char* bad : {"", "127.0.0.1", ":5000", "host:", "host:65536", "host:5x", "::1:80",
                          "[::1]5000", "[::1"}) {
    EXPECT_FALSE(parse_endpoint(bad, &e, &err)) << bad;
    EXPECT_FALSE(err.empty());
  }
}

TEST(Json, QuotesHostileNames) {
  EXPECT_EQ(json_quote("plain.txt"), "\"plain.txt\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote(std::string("nl\nnul\0x", 8)), "\"nl\\nnul\\u0000x\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // valid UTF-8 kept
  EXPECT_EQ(json_quote("bad\xff"), "\"bad\\u00ff\"");        // invalid byte escaped
  // Not valid UTF-8 either, though the lead bytes look right: each byte is escaped.
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");  // a UTF-16 surrogate
  EXPECT_EQ(json_quote("\xe0\x80\xaf"), "\"\\u00e0\\u0080\\u00af\"");  // overlong '/'
  EXPECT_EQ(json_quote("\xf4\x90\x80\x80"), "\"\\u00f4\\u0090\\u0080\\u0080\"");  // > U+10FFFF
  EXPECT_EQ(json_quote("\xf0\x9f\x93\x81"), "\"\xf0\x9f\x93\x81\"");  // U+1F4C1 kept
}

}  // namespace
}  // namespace ddft::common
