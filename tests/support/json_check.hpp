// Test helper: a strict check of one JSON object (RFC 8259), for the lines and records the
// programs write (--log-format json lines, send manifest lines, failure records). Strings must be
// valid UTF-8 with no raw control character; escapes are decoded (\uXXXX to UTF-8, surrogate
// pairs joined). parse_flat_object() takes a flat object (every member a string, a number, true,
// false or null); parse_object() takes arrays and objects as members too.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddft::testing {

// One member's value: its kind and its text. The text of a string is the string decoded; of a
// number, true, false or null, the value as written; of an array or an object, the value in
// compact JSON (no space outside strings, strings quoted again with only the escapes JSON
// requires), so that two writings of one value have one text.
struct JsonValue {
  enum class Kind { kString, kNumber, kBool, kNull, kArray, kObject };
  Kind kind = Kind::kNull;
  std::string text;
};

class JsonChecker {
 public:
  // The object's members, each value as decoded text (strings unquoted; numbers, true, false
  // and null as written), or nullopt when `text` is not exactly one such object (surrounding
  // whitespace allowed). *error says where it failed.
  static std::optional<std::map<std::string, std::string>> parse_flat_object(
      std::string_view text, std::string* error = nullptr) {
    const auto members = parse(text, /*flat=*/true, error);
    if (!members) return std::nullopt;
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : *members) out.emplace(key, value.text);
    return out;
  }

  // The object's members, any JSON value each (nested arrays and objects at most 32 deep), or
  // nullopt when `text` is not exactly one JSON object (surrounding whitespace allowed). *error
  // says where it failed.
  static std::optional<std::map<std::string, JsonValue>> parse_object(
      std::string_view text, std::string* error = nullptr) {
    return parse(text, /*flat=*/false, error);
  }

  // `s` as a JSON string literal: quoted, with \" \\ and control characters escaped.
  static std::string quote(std::string_view s) {
    std::string out = "\"";
    for (const char ch : s) {
      const auto c = static_cast<uint8_t>(ch);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += ch;
      } else if (c < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      } else {
        out += ch;
      }
    }
    return out + "\"";
  }

 private:
  explicit JsonChecker(std::string_view s) : s_(s) {}

  bool fail(const char* why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  static constexpr int kMaxDepth = 32;

  static std::optional<std::map<std::string, JsonValue>> parse(std::string_view text, bool flat,
                                                               std::string* error) {
    JsonChecker c(text);
    c.flat_ = flat;
    std::map<std::string, JsonValue> out;
    if (!c.members(&out, 0) || (c.ws(), c.i_ != text.size())) {
      if (error) *error = "at byte " + std::to_string(c.i_) + ": " + c.error_;
      return std::nullopt;
    }
    return out;
  }
  // An object's members into *out (document order kept in *compact when given).
  bool members(std::map<std::string, JsonValue>* out, int depth, std::string* compact = nullptr) {
    if (!eat('{')) return fail("expected '{'");
    if (compact) *compact = "{";
    if (eat('}')) {
      if (compact) *compact += '}';
      return true;
    }
    do {
      std::string key;
      JsonValue value;
      ws();
      if (!string(&key)) return false;
      if (!eat(':')) return fail("expected ':'");
      ws();
      if (!this->value(&value, depth)) return false;
      if (compact) {
        if (compact->size() > 1) *compact += ',';
        *compact += quote(key) + ':' + compact_text(value);
      }
      if (!out->emplace(std::move(key), std::move(value)).second) return fail("duplicate key");
    } while (eat(','));
    if (!eat('}')) return fail("expected ',' or '}'");
    if (compact) *compact += '}';
    return true;
  }
  static std::string compact_text(const JsonValue& v) {
    return v.kind == JsonValue::Kind::kString ? quote(v.text) : v.text;
  }
  bool value(JsonValue* out, int depth) {
    if (i_ >= s_.size()) return fail("expected a value");
    const char c = s_[i_];
    if (c == '"') {
      out->kind = JsonValue::Kind::kString;
      return string(&out->text);
    }
    if (c == '[' || c == '{') {
      if (flat_) return fail("an array or object in a flat object");
      if (depth + 1 >= kMaxDepth) return fail("nested too deep");
      if (c == '{') {
        std::map<std::string, JsonValue> inner;
        out->kind = JsonValue::Kind::kObject;
        return members(&inner, depth + 1, &out->text);
      }
      out->kind = JsonValue::Kind::kArray;
      return array(&out->text, depth + 1);
    }
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(i_, word.size()) == word) {
        out->kind = word == "null" ? JsonValue::Kind::kNull : JsonValue::Kind::kBool;
        out->text = std::string(word);
        i_ += word.size();
        return true;
      }
    }
    out->kind = JsonValue::Kind::kNumber;
    return number(&out->text);
  }
  bool array(std::string* compact, int depth) {
    ++i_;  // '['
    *compact = "[";
    if (eat(']')) {
      *compact += ']';
      return true;
    }
    do {
      JsonValue v;
      ws();
      if (!value(&v, depth)) return false;
      if (compact->size() > 1) *compact += ',';
      *compact += compact_text(v);
    } while (eat(','));
    if (!eat(']')) return fail("expected ',' or ']'");
    *compact += ']';
    return true;
  }
  bool number(std::string* out) {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > d;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return fail("expected a value");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return fail("expected digits after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return fail("expected an exponent");
    }
    *out = std::string(s_.substr(start, i_ - start));
    return true;
  }
  static void put_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(uint32_t* v) {
    if (i_ + 4 > s_.size()) return fail("short \\u escape");
    *v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      *v <<= 4;
      if (c >= '0' && c <= '9') {
        *v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        *v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        *v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return fail("bad \\u escape");
      }
    }
    return true;
  }
  // Length of the valid UTF-8 sequence at i_ (RFC 3629: no overlongs, no surrogates), or 0.
  size_t utf8_length() const {
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s_[i_ + k]); };
    const uint8_t c = b(0);
    size_t len = 0;
    uint8_t lo = 0x80;  // the allowed range of the second byte
    uint8_t hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return 0;
    }
    if (i_ + len > s_.size() || b(1) < lo || b(1) > hi) return 0;
    for (size_t k = 2; k < len; ++k) {
      if ((b(k) & 0xC0) != 0x80) return 0;
    }
    return len;
  }
  bool string(std::string* out) {
    if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a string");
    ++i_;
    while (i_ < s_.size()) {
      const auto c = static_cast<uint8_t>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return fail("raw control character in a string");
      if (c == '\\') {
        if (++i_ >= s_.size()) return fail("unfinished escape");
        const char e = s_[i_++];
        switch (e) {
          case '"':
            *out += '"';
            break;
          case '\\':
            *out += '\\';
            break;
          case '/':
            *out += '/';
            break;
          case 'b':
            *out += '\b';
            break;
          case 'f':
            *out += '\f';
            break;
          case 'n':
            *out += '\n';
            break;
          case 'r':
            *out += '\r';
            break;
          case 't':
            *out += '\t';
            break;
          case 'u': {
            uint32_t cp = 0;
            if (!hex4(&cp)) return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t low = 0;
              if (s_.substr(i_, 2) != "\\u") return fail("lone high surrogate");
              i_ += 2;
              if (!hex4(&low)) return false;
              if (low < 0xDC00 || low > 0xDFFF) return fail("bad low surrogate");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              return fail("lone low surrogate");
            }
            put_utf8(cp, out);
            break;
          }
          default:
            return fail("unknown escape");
        }
        continue;
      }
      if (c < 0x80) {
        *out += static_cast<char>(c);
        ++i_;
        continue;
      }
      const size_t len = utf8_length();
      if (len == 0) return fail("invalid UTF-8 in a string");
      out->append(s_.substr(i_, len));
      i_ += len;
    }
    return fail("unterminated string");
  }

  std::string_view s_;
  size_t i_ = 0;
  bool flat_ = true;
  std::string error_;
};

}  // namespace ddft::testing
