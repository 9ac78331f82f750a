// Test helper: a blocking HTTP exchange over a plain loopback socket, enough to scrape /metrics
// and to send requests a real client would not (oversized, malformed, never finished).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

namespace ddft::testing {

// A connected TCP socket to 127.0.0.1:port, or -1.
inline int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `timeout` passes. *closed says whether it closed.
inline std::string read_until_close(int fd, std::chrono::milliseconds timeout, bool* closed) {
  std::string out;
  *closed = false;
  const auto end = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return out;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = true;  // EOF, or a reset: either way the server closed it
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

// Sends `request` as is and returns everything the server answers before closing; nullopt when
// nothing listens or the server did not close within `timeout`.
inline std::optional<std::string> http_exchange(
    uint16_t port, const std::string& request,
    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const int fd = connect_loopback(port);
  if (fd < 0) return std::nullopt;
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early (an oversized head): read its answer
    sent += static_cast<size_t>(n);
  }
  bool closed = false;
  std::string reply = read_until_close(fd, timeout, &closed);
  ::close(fd);
  if (!closed) return std::nullopt;
  return reply;
}

struct HttpReply {
  int status = 0;    // 0: no answer
  std::string head;  // status line and headers
  std::string body;
};

inline HttpReply http_get(uint16_t port, const std::string& path,
                          const std::string& method = "GET") {
  HttpReply r;
  const auto raw = http_exchange(
      port, method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: ddft-test\r\n\r\n");
  if (!raw) return r;
  const size_t split = raw->find("\r\n\r\n");
  r.head = raw->substr(0, split);
  if (split != std::string::npos) r.body = raw->substr(split + 4);
  if (r.head.rfind("HTTP/1.1 ", 0) == 0) r.status = std::atoi(r.head.c_str() + 9);
  return r;
}

// The value of the series written exactly as `series` (name and labels) in a scrape, or nullopt.
inline std::optional<double> metric_value(const std::string& body, const std::string& series) {
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t eol = body.find('\n', pos);
    const std::string line =
        body.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  return std::nullopt;
}

// The port a program logged in its "Info: metrics at http://127.0.0.1:PORT/metrics" line, 0
// while it has not.
inline uint16_t logged_metrics_port(const std::string& log) {
  std::smatch m;
  static const std::regex re(R"(Info: metrics at http://127\.0\.0\.1:([0-9]+)/metrics)");
  return std::regex_search(log, m, re) ? static_cast<uint16_t>(std::stoi(m[1])) : 0;
}

}  // namespace ddft::testing
