// Test helper: a strict check of one JSON object (RFC 8259), for the lines the programs write
// (--log-format json). It decodes a flat object: every member's value is a string, a number,
// true, false or null (nested objects and arrays are refused). Strings must be valid UTF-8 with no
// raw control character; escapes are decoded (\uXXXX to UTF-8, surrogate pairs joined).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddft::testing {

class JsonChecker {
 public:
  // The object's members, each value as decoded text (strings unquoted; numbers, true, false
  // and null as written), or nullopt when `text` is not exactly one such object (surrounding
  // whitespace allowed). *error says where it failed.
  static std::optional<std::map<std::string, std::string>> parse_flat_object(
      std::string_view text, std::string* error = nullptr) {
    JsonChecker c(text);
    std::map<std::string, std::string> out;
    if (!c.object(&out) || (c.ws(), c.i_ != text.size())) {
      if (error) *error = "at byte " + std::to_string(c.i_) + ": " + c.error_;
      return std::nullopt;
    }
    return out;
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
  bool object(std::map<std::string, std::string>* out) {
    if (!eat('{')) return fail("expected '{'");
    if (eat('}')) return true;
    do {
      std::string key, value;
      ws();
      if (!string(&key)) return false;
      if (!eat(':')) return fail("expected ':'");
      ws();
      if (!scalar(&value)) return false;
      if (!out->emplace(key, value).second) return fail("duplicate key");
    } while (eat(','));
    if (!eat('}')) return fail("expected ',' or '}'");
    return true;
  }
  bool scalar(std::string* out) {
    if (i_ >= s_.size()) return fail("expected a value");
    if (s_[i_] == '"') return string(out);
    for (std::string_view word : {"true", "false", "null"}) {
      if (s_.substr(i_, word.size()) == word) {
        *out = std::string(word);
        i_ += word.size();
        return true;
      }
    }
    return number(out);
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
  std::string error_;
};

}  // namespace ddft::testing
