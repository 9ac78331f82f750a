// JSON output: quoting hostile names into one valid line, and local ISO 8601 times.
#include "common/json.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "support/scoped_tz.hpp"

namespace ddft::common {
namespace {
using namespace std::chrono;

TEST(Json, QuotesHostileNames) {
  EXPECT_EQ(json_quote("plain.txt"), "\"plain.txt\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote(std::string("nl\nnul\0x", 8)), "\"nl\\nnul\\u0000x\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // valid UTF-8 kept
  EXPECT_EQ(json_quote("bad\xff"), "\"bad\\u00ff\"");       // invalid byte escaped
  // Not valid UTF-8 either, though the lead bytes look right: each byte is escaped.
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");  // a UTF-16 surrogate
  EXPECT_EQ(json_quote("\xe0\x80\xaf"), "\"\\u00e0\\u0080\\u00af\"");  // overlong '/'
  EXPECT_EQ(json_quote("\xf4\x90\x80\x80"), "\"\\u00f4\\u0090\\u0080\\u0080\"");  // > U+10FFFF
  EXPECT_EQ(json_quote("\xf0\x9f\x93\x81"), "\"\xf0\x9f\x93\x81\"");              // U+1F4C1 kept
}

TEST(Json, ReadsAFlatObjectOfStringsNumbersAndNull) {
  std::map<std::string, std::optional<std::string>> f;
  ASSERT_TRUE(parse_flat_json(
      R"( {"session":"fb0a","file_id":6, "path":"a \"b\"\u00e9","size":-20e3,"sender":null,)"
      R"("ok":true} )",
      &f));
  EXPECT_EQ(f.at("session"), "fb0a");
  EXPECT_EQ(f.at("file_id"), "6");
  EXPECT_EQ(f.at("path"), "a \"b\"\xe9");  // \u00XX is a byte, as json_quote() writes it
  EXPECT_EQ(f.at("size"), "-20e3");
  EXPECT_EQ(f.at("sender"), std::nullopt);
  EXPECT_EQ(f.at("ok"), "true");
  ASSERT_TRUE(parse_flat_json("{}", &f));
  EXPECT_TRUE(f.empty());
  for (const char* bad :
       {"", "[]", "{", "{\"a\":1", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{\"a\":{}}", "{\"a\":[1]}",
        "{\"a\":nope}", "{\"a\":1,\"a\":2}", "{\"a\":1} x", "{\"a\":\"open}"}) {
    EXPECT_FALSE(parse_flat_json(bad, &f)) << bad;
  }
}

TEST(Json, Iso8601LocalCarriesMillisecondsAndTheOffset) {
  // 2026-11-22 17:20:01.123 UTC.
  const system_clock::time_point t{milliseconds(1'795'368'001'123)};
  {
    testing::ScopedTz tz("UTC0");
    EXPECT_EQ(iso8601_local(t), "2026-11-22T17:20:01.123+00:00");
  }
  {
    testing::ScopedTz tz("CET-1");
    EXPECT_EQ(iso8601_local(t), "2026-11-22T18:20:01.123+01:00");
  }
  {
    testing::ScopedTz tz("XST+5:30");
    EXPECT_EQ(iso8601_local(t), "2026-11-22T11:50:01.123-05:30");
  }
  testing::ScopedTz tz("UTC0");
  // Before 1970 the milliseconds stay positive (floor division).
  EXPECT_EQ(iso8601_local(system_clock::time_point{milliseconds(-1)}),
            "1969-12-31T23:59:59.999+00:00");
}

}  // namespace
}  // namespace ddft::common
