// Test helper: gMock matchers for the JSON records the programs write (failure records, send
// manifest lines, --log-format json lines). A check names the member it expects and its value, so
// it fails on the wrong member or the wrong kind of value, where a search of the text for
// "\"status\":\"failed\"" would pass on that text anywhere in the record:
//
//   EXPECT_THAT(record, JsonHas("reason", "incomplete"));
//   EXPECT_THAT(record, JsonHas("lane", 0));                       // a number, not "0"
//   EXPECT_THAT(record, JsonHas("missing_ranges", JsonText("[[0, 4000]]")));
//   EXPECT_THAT(record, JsonHas("reason", ::testing::StartsWith("never announced")));
//   EXPECT_THAT(records, ::testing::Contains(JsonHas("name", "a.bin")));
//   EXPECT_THAT(report, JsonHas("parameters", JsonHas("files", 2)));
//
// The record is the text of one JSON object (std::string or std::string_view); nested arrays and
// objects compare as compact JSON text (JsonValue in support/json_check.hpp).
#pragma once

#include <gmock/gmock.h>

#include <concepts>
#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "support/json_check.hpp"

namespace ddft::testing {

// A JSON value written as JSON text ("[[0, 4000]]", "{\"a\": 1}", "1.5e3"): matches the member
// whose value has that kind and, spacing aside, that text.
struct JsonText {
  std::string text;
};

// What one member must hold: a kind and a matcher of its text (JsonValue::text).
struct JsonExpected {
  JsonValue::Kind kind;
  ::testing::Matcher<const std::string&> text;
};

inline const char* json_kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Kind::kString:
      return "the string";
    case JsonValue::Kind::kNumber:
      return "the number";
    case JsonValue::Kind::kBool:
      return "the boolean";
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kArray:
      return "the array";
    case JsonValue::Kind::kObject:
      return "the object";
  }
  return "?";
}

class JsonHasMatcher {
 public:
  JsonHasMatcher(std::string key, JsonExpected want)
      : key_(std::move(key)), want_(std::move(want)) {}

  template <typename Text>
  bool MatchAndExplain(const Text& text, ::testing::MatchResultListener* listener) const {
    std::string error;
    const auto members = JsonChecker::parse_object(std::string_view(text), &error);
    if (!members) {
      *listener << "which is not one JSON object (" << error << ")";
      return false;
    }
    const auto it = members->find(key_);
    if (it == members->end()) {
      *listener << "which has no member " << JsonChecker::quote(key_);
      return false;
    }
    const JsonValue& got = it->second;
    ::testing::StringMatchResultListener inner;
    if (got.kind == want_.kind && want_.text.MatchAndExplain(got.text, &inner)) return true;
    *listener << "whose " << JsonChecker::quote(key_) << " is " << json_kind_name(got.kind) << " "
              << (got.kind == JsonValue::Kind::kString ? JsonChecker::quote(got.text) : got.text);
    if (!inner.str().empty()) *listener << ", " << inner.str();
    return false;
  }
  void DescribeTo(std::ostream* os) const {
    *os << "is a JSON object whose " << JsonChecker::quote(key_) << " is "
        << json_kind_name(want_.kind) << " that ";
    want_.text.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "is not a JSON object whose " << JsonChecker::quote(key_) << " is "
        << json_kind_name(want_.kind) << " that ";
    want_.text.DescribeTo(os);
  }

 private:
  std::string key_;
  JsonExpected want_;
};

// The expectation each kind of argument of JsonHas() stands for.
inline JsonExpected json_expected(const char* s) {
  return {JsonValue::Kind::kString, ::testing::Eq(std::string(s))};
}
inline JsonExpected json_expected(const std::string& s) {
  return {JsonValue::Kind::kString, ::testing::Eq(s)};
}
inline JsonExpected json_expected(bool b) {
  return {JsonValue::Kind::kBool, ::testing::Eq(std::string(b ? "true" : "false"))};
}
inline JsonExpected json_expected(std::nullptr_t) {
  return {JsonValue::Kind::kNull, ::testing::Eq(std::string("null"))};
}
// A JSON number: any integer type but bool and char.
template <typename I>
concept JsonInteger = std::integral<I> && !std::same_as<I, bool> && !std::same_as<I, char>;
template <JsonInteger I>
JsonExpected json_expected(I n) {
  return {JsonValue::Kind::kNumber, ::testing::Eq(std::to_string(n))};
}
// A string member whose decoded text satisfies `m` (StartsWith, HasSubstr, MatchesRegex...).
inline JsonExpected json_expected(::testing::Matcher<const std::string&> m) {
  return {JsonValue::Kind::kString, std::move(m)};
}
// Throws std::invalid_argument when `t` is not one JSON value (a mistake in the test).
inline JsonExpected json_expected(const JsonText& t) {
  std::string error;
  const auto wrapped = JsonChecker::parse_object("{\"v\":" + t.text + "}", &error);
  if (!wrapped) throw std::invalid_argument("JsonText(" + t.text + "): " + error);
  const JsonValue& v = wrapped->at("v");
  return {v.kind, ::testing::Eq(v.text)};
}

// Any member of kind `kind` whose text (JsonValue::text) satisfies `m`:
// JsonHas("missing_ranges", JsonValueIs(JsonValue::Kind::kArray, StartsWith("[["))).
inline JsonExpected JsonValueIs(JsonValue::Kind kind, ::testing::Matcher<const std::string&> m) {
  return {kind, std::move(m)};
}
inline JsonExpected json_expected(JsonExpected e) { return e; }

// An object member that `m` (another JsonHas) matches, given as compact JSON text.
inline JsonExpected json_expected(::testing::PolymorphicMatcher<JsonHasMatcher> m) {
  return {JsonValue::Kind::kObject, ::testing::Matcher<const std::string&>(std::move(m))};
}

// Matches the text of one JSON object whose member `key` holds `value`: a string (const char*,
// std::string, or a string matcher), an integer (a JSON number), a bool, nullptr (null), another
// JsonHas (an object member that has that member), JsonText (any value, arrays too) or
// JsonValueIs (a kind and a matcher of the value's text).
template <typename Value>
::testing::PolymorphicMatcher<JsonHasMatcher> JsonHas(std::string key, Value&& value) {
  return ::testing::MakePolymorphicMatcher(
      JsonHasMatcher(std::move(key), json_expected(std::forward<Value>(value))));
}

// The members of the JSON object `text`, or nullopt when it is not one (for a check that walks
// them; a check of one member reads better as JsonHas).
inline std::optional<std::map<std::string, JsonValue>> json_members(std::string_view text) {
  return JsonChecker::parse_object(text);
}

}  // namespace ddft::testing
