#include "common/json.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>

namespace ddft::common {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF; JSON text must be valid UTF-8).
size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  unsigned char lo = 0x80;  // the range of the second byte
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong below
    if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates above
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong below
    if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF above
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  const auto second = static_cast<unsigned char>(s[i + 1]);
  if (second < lo || second > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return len;
}

}  // namespace

namespace {
// Undoes json_quote() for what it produces: \" \\ \n \t \r \b \f and \u00XX.
bool unquote_json(std::string_view q, std::string* out) {
  if (q.size() < 2 || q.front() != '"' || q.back() != '"') return false;
  q = q.substr(1, q.size() - 2);
  std::string s;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == '"') return false;  // json_quote never leaves one bare: two lines glued
    if (q[i] != '\\') {
      s += q[i];
      continue;
    }
    if (++i >= q.size()) return false;
    switch (q[i]) {
      case '"':
        s += '"';
        break;
      case '\\':
        s += '\\';
        break;
      case '/':
        s += '/';
        break;
      case 'n':
        s += '\n';
        break;
      case 't':
        s += '\t';
        break;
      case 'r':
        s += '\r';
        break;
      case 'b':
        s += '\b';
        break;
      case 'f':
        s += '\f';
        break;
      case 'u': {
        if (i + 4 >= q.size()) return false;  // four hex digits must follow
        const std::string hex(q.substr(i + 1, 4));
        char* end = nullptr;
        const unsigned long v = std::strtoul(hex.c_str(), &end, 16);
        if (hex.size() != 4 || *end != '\0' || v > 0xFF) return false;
        s += static_cast<char>(v);
        i += 4;
        break;
      }
      default:
        return false;
    }
  }
  *out = std::move(s);
  return true;
}
}  // namespace

bool take_json_string(std::string_view* rest, std::string* out) {
  if (rest->empty() || rest->front() != '"') return false;
  size_t i = 1;
  while (i < rest->size() && (*rest)[i] != '"') i += (*rest)[i] == '\\' ? 2 : 1;
  if (i >= rest->size()) return false;
  if (!unquote_json(rest->substr(0, i + 1), out)) return false;
  rest->remove_prefix(i + 1);
  return true;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\u{:04x}", c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const size_t len = utf8_length(s, i); len > 0) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      // Not UTF-8: keep the byte's value visible without breaking the JSON.
      out += fmt::format("\\u{:04x}", c);
      ++i;
    }
  }
  out += '"';
  return out;
}

namespace {

void skip_spaces(std::string_view* s) {
  while (!s->empty() && (s->front() == ' ' || s->front() == '\t')) s->remove_prefix(1);
}

// A number, true, false or null at the front of `*s`: its text (null: nothing).
bool take_bare_value(std::string_view* s, std::optional<std::string>* out) {
  size_t n = 0;
  while (n < s->size() &&
         std::string_view("+-.0123456789eEtrufalsn").find((*s)[n]) != std::string_view::npos) {
    ++n;
  }
  const std::string_view word = s->substr(0, n);
  if (word.empty()) return false;
  if (word == "null") {
    *out = std::nullopt;
  } else if (word == "true" || word == "false" ||
             std::string_view("-0123456789").find(word.front()) != std::string_view::npos) {
    *out = std::string(word);
  } else {
    return false;
  }
  s->remove_prefix(n);
  return true;
}

}  // namespace

bool parse_flat_json(std::string_view line,
                     std::map<std::string, std::optional<std::string>>* out) {
  std::map<std::string, std::optional<std::string>> m;
  skip_spaces(&line);
  if (line.empty() || line.front() != '{') return false;
  line.remove_prefix(1);
  skip_spaces(&line);
  bool first = true;
  while (!line.empty() && line.front() != '}') {
    if (!first) {
      if (line.front() != ',') return false;
      line.remove_prefix(1);
      skip_spaces(&line);
    }
    first = false;
    std::string key;
    if (!take_json_string(&line, &key)) return false;
    skip_spaces(&line);
    if (line.empty() || line.front() != ':') return false;
    line.remove_prefix(1);
    skip_spaces(&line);
    std::optional<std::string> value;
    if (!line.empty() && line.front() == '"') {
      std::string text;
      if (!take_json_string(&line, &text)) return false;
      value = std::move(text);
    } else if (!take_bare_value(&line, &value)) {
      return false;
    }
    if (!m.emplace(std::move(key), std::move(value)).second) return false;
    skip_spaces(&line);
  }
  if (line.empty()) return false;
  line.remove_prefix(1);
  skip_spaces(&line);
  if (!line.empty() && line != "\r") return false;
  *out = std::move(m);
  return true;
}

std::string iso8601_local(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  // Floor division: a time before 1970 keeps its milliseconds positive.
  const auto secs = static_cast<std::time_t>(ms / 1000 - (ms % 1000 < 0 ? 1 : 0));
  const auto frac = static_cast<int>(ms - static_cast<long long>(secs) * 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  const long off = tm.tm_gmtoff / 60;  // minutes east of UTC
  const long abs_off = off < 0 ? -off : off;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}{:02}:{:02}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac,
                     off < 0 ? '-' : '+', abs_off / 60, abs_off % 60);
}

}  // namespace ddft::common
