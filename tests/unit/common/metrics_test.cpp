// The metrics exporter: the text exposition format, and the HTTP server on a real loopback socket.
#include "common/metrics.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "integration/http_client.hpp"
#include "support/host_probe.hpp"
#include "support/wait.hpp"

namespace ddft::common {
namespace {
using namespace std::chrono;
using testing::http_exchange;
using testing::http_get;

constexpr auto kCounter = MetricType::kCounter;
constexpr auto kGauge = MetricType::kGauge;

Endpoint loopback(uint16_t port = 0) { return Endpoint{"127.0.0.1", port}; }

// ---------------------------------------------------------------------------------------------
// Format

TEST(MetricsFormat, NumbersAreWrittenAsTheFormatReadsThem) {
  EXPECT_EQ(format_metric_value(0), "0");
  EXPECT_EQ(format_metric_value(-0.0), "0");
  EXPECT_EQ(format_metric_value(42), "42");
  EXPECT_EQ(format_metric_value(-7), "-7");
  EXPECT_EQ(format_metric_value(1234567890123.0), "1234567890123");
  EXPECT_EQ(format_metric_value(9007199254740992.0), "9007199254740992");  // 2^53, exact
  EXPECT_EQ(format_metric_value(0.25), "0.25");
  EXPECT_EQ(format_metric_value(0.1), "0.1");  // the shortest form, not 0.1000000000000000055
  EXPECT_EQ(format_metric_value(1e-9), "1e-09");
  EXPECT_EQ(format_metric_value(1e20), "1e+20");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");
  // Every non-integer reads back to the same double.
  for (double v : {0.1, 1.0 / 3.0, 123.456e-7, 6.02214076e23}) {
    EXPECT_EQ(std::stod(format_metric_value(v)), v) << format_metric_value(v);
  }
}

TEST(MetricsFormat, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), R"(a\\b\"c\nd)");
  EXPECT_EQ(escape_label_value("plain value, with ünïcode"), "plain value, with ünïcode");
  // In HELP only backslash and newline are escaped; a double quote stays as it is.
  EXPECT_EQ(escape_metric_help("say \"x\"\\y\nz"), "say \"x\"\\\\y\\nz");
}

TEST(MetricsRegistry, RendersHelpTypeAndSeriesInRegistrationOrder) {
  MetricsRegistry reg;
  double bytes = 1024;
  reg.add(kCounter, "ddft_test_bytes_total", "Bytes\nseen", [&] { return bytes; });
  reg.add(kGauge, "ddft_test_fill_ratio", "Fill", [] { return 0.5; });
  reg.add(kCounter, "ddft_test_rejected_total", "Rejected", [] { return 3.0; },
          {{"reason", "bad checksum"}});
  reg.add(kCounter, "ddft_test_rejected_total", "Rejected", [] { return 4.0; },
          {{"reason", "say \"hi\"\\\n"}, {"side", "rx"}});
  reg.add(kGauge, "ddft_test_since_seconds", "Since",
          [] { return std::numeric_limits<double>::quiet_NaN(); });
  const std::string expected =
      "# HELP ddft_test_bytes_total Bytes\\nseen\n"
      "# TYPE ddft_test_bytes_total counter\n"
      "ddft_test_bytes_total 1024\n"
      "# HELP ddft_test_fill_ratio Fill\n"
      "# TYPE ddft_test_fill_ratio gauge\n"
      "ddft_test_fill_ratio 0.5\n"
      "# HELP ddft_test_rejected_total Rejected\n"
      "# TYPE ddft_test_rejected_total counter\n"
      "ddft_test_rejected_total{reason=\"bad checksum\"} 3\n"
      "ddft_test_rejected_total{reason=\"say \\\"hi\\\"\\\\\\n\",side=\"rx\"} 4\n"
      "# HELP ddft_test_since_seconds Since\n"
      "# TYPE ddft_test_since_seconds gauge\n"
      "ddft_test_since_seconds NaN\n";
  EXPECT_EQ(reg.render(), expected);
  // Values are read at each render, not at registration.
  bytes = 2048;
  EXPECT_NE(reg.render().find("ddft_test_bytes_total 2048\n"), std::string::npos);
}

TEST(MetricsRegistry, DynamicFamiliesAndTheScrapePrelude) {
  MetricsRegistry reg;
  uint64_t session = 0;
  int snapshots = 0;
  uint64_t seen = 0;  // what the prelude took, read by the family
  reg.on_scrape([&] {
    ++snapshots;
    seen = session;
  });
  reg.add_family(kGauge, "ddft_test_session_info", "Session", [&] {
    std::vector<MetricSample> out;
    if (seen != 0) out.push_back({{{"session", std::to_string(seen)}}, 1});
    return out;
  });
  // No sample yet: the family's HELP and TYPE only.
  EXPECT_EQ(reg.render(),
            "# HELP ddft_test_session_info Session\n# TYPE ddft_test_session_info gauge\n");
  session = 77;
  EXPECT_NE(reg.render().find("ddft_test_session_info{session=\"77\"} 1\n"), std::string::npos);
  EXPECT_EQ(snapshots, 2);
}

TEST(MetricsRegistry, RefusesWhatTheFormatDoesNotAllow) {
  MetricsRegistry reg;
  auto one = [] { return 1.0; };
  EXPECT_THROW(reg.add(kCounter, "ddft_test_bytes", "no _total", one), std::invalid_argument);
  EXPECT_THROW(reg.add(kGauge, "9lives", "digit first", one), std::invalid_argument);
  EXPECT_THROW(reg.add(kGauge, "ddft-test", "dash", one), std::invalid_argument);
  EXPECT_THROW(reg.add(kGauge, "", "empty", one), std::invalid_argument);
  EXPECT_THROW(reg.add(kGauge, "ddft_ok", "label", one, {{"bad-label", "x"}}),
               std::invalid_argument);
  EXPECT_THROW(reg.add(kGauge, "ddft_ok", "label", one, {{"__reserved", "x"}}),
               std::invalid_argument);
  reg.add(kGauge, "ddft_ok", "help", one);
  EXPECT_THROW(reg.add(kCounter, "ddft_ok", "help", one), std::invalid_argument);  // type
  EXPECT_THROW(reg.add(kGauge, "ddft_ok", "other help", one), std::invalid_argument);
  reg.add(kGauge, "ddft:recorded_rule", "colons are allowed in names", one);
  // A label name produced at scrape time is checked too; the render fails rather than write it.
  reg.add_family(kGauge, "ddft_dyn", "dyn", [] {
    return std::vector<MetricSample>{{{{"0bad", "x"}}, 1}};
  });
  EXPECT_THROW(reg.render(), std::invalid_argument);
}

TEST(RateMeter, RateOverTheWindow) {
  RateMeter m(seconds(5));
  EXPECT_EQ(m.rate(), 0);
  m.sample(seconds(100), 0);
  EXPECT_EQ(m.rate(), 0);  // one sample: no rate yet
  m.sample(seconds(101), 1000);
  EXPECT_DOUBLE_EQ(m.rate(), 1000);
  for (int s = 102; s <= 110; ++s) m.sample(seconds(s), 1000 + (s - 101) * 500.0);
  // The window keeps the last 5 s: from t=105 (3000) to t=110 (5500).
  EXPECT_DOUBLE_EQ(m.rate(), 500);
  m.sample(seconds(111), 5500);
  m.sample(seconds(116), 5500);  // idle: the rate falls to 0
  EXPECT_DOUBLE_EQ(m.rate(), 0);
}

TEST(MetricsAddress, NumericAddressesAndAPort) {
  Endpoint ep;
  std::string error;
  ASSERT_TRUE(parse_metrics_address("127.0.0.1:9464", &ep, &error)) << error;
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, 9464);
  ASSERT_TRUE(parse_metrics_address("[::1]:9464", &ep, &error)) << error;
  EXPECT_EQ(ep.host, "::1");
  ASSERT_TRUE(parse_metrics_address("0.0.0.0:9464", &ep, &error)) << error;
  ASSERT_TRUE(parse_metrics_address("[::]:0", &ep, &error)) << error;
  for (const char* bad : {"", "9464", "127.0.0.1", "127.0.0.1:", "localhost:9464",
                          "example.org:9464", "::1:9464", "[::1]9464", "[::1]:", "1.2.3.4:65536",
                          "1.2.3.4:-1", "1.2.3.4:94x", "300.1.1.1:9464", "[127.0.0.1:9464"}) {
    error.clear();
    EXPECT_FALSE(parse_metrics_address(bad, &ep, &error)) << bad;
    EXPECT_NE(error.find("is not ADDR:PORT"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;  // one line
  }
}

// ---------------------------------------------------------------------------------------------
// Server

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_.add(kCounter, "ddft_test_requests_total", "A counter", [this] { return value_.load(); });
    reg_.add(kGauge, "ddft_test_label", "A label", [] { return 1.0; }, {{"v", "a\"b"}});
  }
  MetricsRegistry reg_;
  std::atomic<double> value_{5};
};

TEST_F(MetricsServerTest, ServesTheExpositionAndNothingElse) {
  MetricsServer server(loopback());
  ASSERT_NE(server.port(), 0);
  EXPECT_EQ(server.local_address(), "127.0.0.1:" + std::to_string(server.port()));
  server.start(reg_);

  auto r = http_get(server.port(), "/metrics");
  ASSERT_EQ(r.status, 200) << r.head;
  EXPECT_NE(r.head.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
            std::string::npos)
      << r.head;
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("Content-Length: " + std::to_string(r.body.size())), std::string::npos);
  EXPECT_EQ(r.body, reg_.render());
  value_ = 6;
  EXPECT_NE(http_get(server.port(), "/metrics?x=1").body.find("ddft_test_requests_total 6\n"),
            std::string::npos);

  r = http_get(server.port(), "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("href=\"/metrics\""), std::string::npos) << r.body;

  r = http_get(server.port(), "/metrics", "HEAD");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.empty());

  EXPECT_EQ(http_get(server.port(), "/other").status, 404);
  EXPECT_EQ(http_get(server.port(), "/metrics/x").status, 404);
  r = http_get(server.port(), "/metrics", "POST");
  EXPECT_EQ(r.status, 405);
  EXPECT_NE(r.head.find("Allow: GET, HEAD"), std::string::npos);
  EXPECT_EQ(http_get(server.port(), "/metrics", "DELETE").status, 405);

  // Malformed request lines.
  for (const char* req : {"GET\r\n\r\n", "GET /metrics\r\n\r\n", "GET /metrics HTTP/2\r\n\r\n",
                          "GET  /metrics HTTP/1.1\r\n\r\n", "\r\n\r\n"}) {
    const auto raw = http_exchange(server.port(), req);
    ASSERT_TRUE(raw) << req;
    EXPECT_EQ(raw->rfind("HTTP/1.1 400 ", 0), 0u) << *raw;
  }
  // A lax client's bare newlines are taken.
  const auto lax = http_exchange(server.port(), "GET /metrics HTTP/1.0\n\n");
  ASSERT_TRUE(lax);
  EXPECT_EQ(lax->rfind("HTTP/1.1 200 ", 0), 0u) << *lax;
}

TEST_F(MetricsServerTest, AnOversizedRequestIsAnsweredAndClosed) {
  MetricsServer server(loopback());
  server.start(reg_);
  std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
  while (req.size() < 20000) req += "X-Padding: " + std::string(100, 'p') + "\r\n";
  req += "\r\n";
  const auto raw = http_exchange(server.port(), req);
  ASSERT_TRUE(raw) << "the server did not close the connection";
  EXPECT_EQ(raw->rfind("HTTP/1.1 431 ", 0), 0u) << raw->substr(0, 200);
  // Just under the cap is served.
  std::string ok = "GET /metrics HTTP/1.1\r\n";
  while (ok.size() < 7000) ok += "X-Padding: " + std::string(100, 'p') + "\r\n";
  ok += "\r\n";
  const auto served = http_exchange(server.port(), ok);
  ASSERT_TRUE(served);
  EXPECT_EQ(served->rfind("HTTP/1.1 200 ", 0), 0u) << served->substr(0, 200);
}

TEST_F(MetricsServerTest, ASilentClientIsClosedAfterTheTimeout) {
  MetricsServerOptions opt;
  opt.timeout = milliseconds(200);
  MetricsServer server(loopback(), opt);
  server.start(reg_);
  const int fd = testing::connect_loopback(server.port());
  ASSERT_GE(fd, 0);
  ::send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);  // and never the blank line
  bool closed = false;
  const std::string got = testing::read_until_close(fd, seconds(30), &closed);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(got.empty()) << got;
}

TEST_F(MetricsServerTest, ConnectionsBeyondTheCapAreClosedAtOnce) {
  MetricsServerOptions opt;
  opt.max_connections = 2;
  MetricsServer server(loopback(), opt);
  server.start(reg_);
  // Two idle connections take both places...
  const int a = testing::connect_loopback(server.port());
  const int b = testing::connect_loopback(server.port());
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  // ...so a third is closed without an answer (once the server has accepted the first two:
  // retry until it is, the order of accepts being the kernel's).
  bool refused =
      testing::eventually([&] { return !http_get(server.port(), "/metrics").status; }, seconds(10));
  EXPECT_TRUE(refused);
  ::close(a);
  ::close(b);
  // Places free again: served.
  EXPECT_TRUE(testing::eventually([&] { return http_get(server.port(), "/metrics").status == 200; },
                                  seconds(10)));
}

TEST_F(MetricsServerTest, ATakenPortIsRefusedWithOneLine) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const uint16_t port = ntohs(addr.sin_port);
  try {
    MetricsServer server(loopback(port));
    FAIL() << "bound a taken port";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot serve metrics on 127.0.0.1:" + std::to_string(port) +
                                         ": Address already in use");
  }
  ::close(fd);
  // And the program-level wrapper refuses a bad address with one line.
  try {
    open_metrics_server("localhost:9464");
    FAIL() << "took a host name";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--metrics: 'localhost:9464' is not ADDR:PORT"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(open_metrics_server(""), nullptr);  // off
}

TEST_F(MetricsServerTest, StopsCleanlyAndRunsPeriodicWork) {
  std::atomic<int> ticks{0};
  reg_.every(milliseconds(10), [&] { ++ticks; });
  uint16_t port = 0;
  {
    MetricsServer server(loopback());
    port = server.port();
    // Bound but not started: nothing runs yet.
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(ticks.load(), 0);
    MetricsServing serving(&server, reg_);
    EXPECT_TRUE(testing::eventually([&] { return ticks.load() >= 3; }, seconds(10)));
    // A connection left open does not keep the server from stopping.
    const int idle = testing::connect_loopback(port);
    ASSERT_GE(idle, 0);
    EXPECT_EQ(http_get(port, "/metrics").status, 200);
    server.stop();
    server.stop();  // idempotent
    ::close(idle);
  }
  EXPECT_EQ(testing::connect_loopback(port), -1);  // nothing listens any more
}

TEST_F(MetricsServerTest, AFailingRenderAnswers500AndServingGoesOn) {
  MetricsRegistry reg;
  std::atomic<bool> fail{true};
  reg.add(kGauge, "ddft_test_flaky", "Flaky", [&]() -> double {
    if (fail) throw std::runtime_error("not now");
    return 1;
  });
  MetricsServer server(loopback());
  server.start(reg);
  EXPECT_EQ(http_get(server.port(), "/metrics").status, 500);
  fail = false;
  EXPECT_EQ(http_get(server.port(), "/metrics").status, 200);
}

// Where the host has an IPv6 loopback (a plain socket binds [::1]), the server binds it too and
// answers a scrape over it.
TEST_F(MetricsServerTest, ServesOnIpv6LoopbackWhenThereIsOne) {
  if (const std::string why = testing::ipv6_loopback_missing(); !why.empty()) GTEST_SKIP() << why;
  MetricsRegistry reg;
  reg.add(kGauge, "ddft_test_v6", "Over IPv6", [] { return 6.0; });
  MetricsServer server(Endpoint{"::1", 0});
  EXPECT_EQ(server.local_address(), "[::1]:" + std::to_string(server.port()));
  server.start(reg);
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  addr.sin6_port = htons(server.port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0)
      << std::strerror(errno);
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  bool closed = false;
  const std::string reply = testing::read_until_close(fd, seconds(10), &closed);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_NE(reply.find("\nddft_test_v6 6\n"), std::string::npos) << reply;
}

}  // namespace
}  // namespace ddft::common
