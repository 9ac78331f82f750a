#include "common/transport.hpp"

#include <charconv>

namespace ddft::common {

std::string_view transport_name(TransportKind kind) {
  return kind == TransportKind::kDevice ? "device" : "udp";
}

bool parse_transport(std::string_view text, TransportKind* kind) {
  if (text == "udp") {
    *kind = TransportKind::kUdp;
  } else if (text == "device") {
    *kind = TransportKind::kDevice;
  } else {
    return false;
  }
  return true;
}

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

bool parse_endpoint(std::string_view text, Endpoint* out, std::string* why) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *why = "expected [ADDRESS]:PORT, got '" + std::string(text) + "'";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      *why = "expected HOST:PORT, got '" + std::string(text) + "'";
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || port.empty() || ec != std::errc() || ptr != port.data() + port.size() ||
      value > 65535) {
    *why = "expected HOST:PORT with a port from 0 to 65535, got '" + std::string(text) + "'";
    return false;
  }
  out->host = std::string(host);
  out->port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace ddft::common
