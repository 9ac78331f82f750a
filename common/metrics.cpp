#include "common/metrics.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/buffers_iterator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "common/named_thread.hpp"

namespace ddft::common {

namespace {

bool valid_name(std::string_view s, bool colon_ok) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

void check_labels(std::string_view metric, const MetricLabels& labels) {
  for (const auto& [name, value] : labels) {
    // "__" names are the Prometheus server's own.
    if (!valid_name(name, false) || name.starts_with("__")) {
      throw std::invalid_argument(
          fmt::format("metric {}: '{}' is not a valid label name", metric, name));
    }
  }
}

void write_sample(std::string& out, std::string_view name, const MetricLabels& labels,
                  double value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out += ',';
      out += labels[i].first;
      out += "=\"";
      out += escape_label_value(labels[i].second);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += format_metric_value(value);
  out += '\n';
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Registry and format

MetricsRegistry::Family& MetricsRegistry::family(MetricType type, std::string_view name,
                                                 std::string_view help) {
  if (!valid_name(name, true)) {
    throw std::invalid_argument(fmt::format("'{}' is not a valid metric name", name));
  }
  if (type == MetricType::kCounter && !name.ends_with("_total")) {
    throw std::invalid_argument(fmt::format("counter {} must end in _total", name));
  }
  for (Family& f : families_) {
    if (f.name != name) continue;
    if (f.type != type || f.help != help) {
      throw std::invalid_argument(
          fmt::format("metric {} registered again with another type or help", name));
    }
    return f;
  }
  families_.push_back(Family{std::string(name), std::string(help), type, {}, {}});
  return families_.back();
}

void MetricsRegistry::add(MetricType type, std::string_view name, std::string_view help, Read read,
                          MetricLabels labels) {
  check_labels(name, labels);
  std::lock_guard lock(mu_);
  family(type, name, help).series.emplace_back(std::move(labels), std::move(read));
}

void MetricsRegistry::add_family(MetricType type, std::string_view name, std::string_view help,
                                 ReadMany read) {
  std::lock_guard lock(mu_);
  family(type, name, help).dynamic.push_back(std::move(read));
}

void MetricsRegistry::on_scrape(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  preludes_.push_back(std::move(fn));
}

void MetricsRegistry::every(std::chrono::milliseconds period, std::function<void()> fn) {
  if (period.count() <= 0) throw std::invalid_argument("MetricsRegistry::every: period <= 0");
  std::lock_guard lock(mu_);
  periodic_.emplace_back(period, std::move(fn));
}

MetricsRegistry::Periodic MetricsRegistry::periodic() const {
  std::lock_guard lock(mu_);
  return periodic_;
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mu_);
  for (const auto& fn : preludes_) fn();
  std::string out;
  for (const Family& f : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, escape_metric_help(f.help), f.name,
                       f.type == MetricType::kCounter ? "counter" : "gauge");
    for (const auto& [labels, read] : f.series) write_sample(out, f.name, labels, read());
    for (const auto& read : f.dynamic) {
      for (const MetricSample& s : read()) {
        check_labels(f.name, s.labels);
        write_sample(out, f.name, s.labels, s.value);
      }
    }
  }
  return out;
}

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Integers as integers: counters read best that way, and every integer up to 2^53 is exact.
  if (v == std::trunc(v) && std::fabs(v) <= 9007199254740992.0) {
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);  // fmt's default: the shortest form that reads back exactly
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_metric_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void RateMeter::sample(std::chrono::nanoseconds now, double total) {
  std::lock_guard lock(mu_);
  samples_.emplace_back(now, total);
  // Keep one sample at or beyond the window's start, so the rate always spans the whole window.
  while (samples_.size() > 2 && samples_[1].first <= now - window_) samples_.pop_front();
}

double RateMeter::rate() const {
  std::lock_guard lock(mu_);
  if (samples_.size() < 2) return 0;
  const auto& [t0, v0] = samples_.front();
  const auto& [t1, v1] = samples_.back();
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  if (secs <= 0 || v1 < v0) return 0;
  return (v1 - v0) / secs;
}

bool parse_metrics_address(std::string_view text, Endpoint* out, std::string* why) {
  const std::string hint = fmt::format(
      "'{}' is not ADDR:PORT with a numeric IP address (e.g. 127.0.0.1:9464, [::1]:9464, "
      "0.0.0.0:9464)",
      text);
  Endpoint ep;
  std::string ignored;
  if (!parse_endpoint(text, &ep, &ignored)) {
    *why = hint;
    return false;
  }
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(ep.host, ec);
  // An IPv6 address must come in brackets, which parse_endpoint has already taken off.
  if (ec || (addr.is_v6() && text.front() != '[')) {
    *why = hint;
    return false;
  }
  *out = ep;
  return true;
}

// ---------------------------------------------------------------------------------------------
// HTTP server

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

using HeadIter = asio::buffers_iterator<asio::streambuf::const_buffers_type>;

// The end of the request head: a blank line ("\r\n\r\n", or "\n\n" from a lax client). On no
// match, returns where a match could still start, so the next read resumes the search there.
std::pair<HeadIter, bool> end_of_head(HeadIter begin, HeadIter end) {
  for (HeadIter i = begin; i != end; ++i) {
    if (*i != '\n') continue;
    HeadIter j = std::next(i);
    if (j == end) return {i, false};
    if (*j == '\n') return {std::next(j), true};
    if (*j != '\r') continue;
    HeadIter k = std::next(j);
    if (k == end) return {i, false};
    if (*k == '\n') return {std::next(k), true};
  }
  return {end, false};
}

std::string endpoint_text(const tcp::endpoint& ep) {
  const auto addr = ep.address();
  return addr.is_v6() ? fmt::format("[{}]:{}", addr.to_string(), ep.port())
                      : fmt::format("{}:{}", addr.to_string(), ep.port());
}

constexpr std::string_view kIndexPage =
    "<!DOCTYPE html>\n<html><head><title>ddft metrics</title></head>\n"
    "<body><p>Prometheus metrics: <a href=\"/metrics\">/metrics</a></p></body></html>\n";

}  // namespace

struct MetricsServer::Impl {
  // Declared before `io`: connections still queued in the io_context when it is destroyed
  // update it from their destructors.
  size_t active = 0;  // connections open (server thread only)
  MetricsServerOptions options;
  const MetricsRegistry* registry = nullptr;
  std::vector<std::pair<std::chrono::milliseconds, std::function<void()>>> periodic;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  std::jthread thread;
  std::string local;  // the address bound, as text
  uint16_t port = 0;  // the port bound

  void accept();
  // Runs periodic function i now, and again every its period.
  void run_periodic(size_t i);
};

namespace {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(size_t& active, const MetricsServerOptions& options, const MetricsRegistry& registry,
             tcp::socket socket)
      : active_(active),
        registry_(registry),
        timeout_(options.timeout),
        socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        head_(options.max_request_bytes) {
    ++active_;
  }
  ~Connection() { --active_; }

  void start() {
    // One deadline for the whole exchange: a client that sends its head slowly, or does not
    // read the answer, is closed after it.
    timer_.expires_after(timeout_);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->close();
    });
    asio::async_read_until(
        socket_, head_, end_of_head,
        [self = shared_from_this()](error_code ec, size_t n) { self->on_head(ec, n); });
  }

 private:
  void on_head(error_code ec, size_t n) {
    if (ec == asio::error::not_found) {  // the head filled the buffer without ending
      respond(431, "Request Header Fields Too Large", "text/plain; charset=utf-8",
              "request head too large\n", false);
      return;
    }
    if (ec) {
      close();
      return;
    }
    const auto data = head_.data();
    const std::string head(asio::buffers_begin(data), asio::buffers_begin(data) + n);
    const std::string_view line = std::string_view(head).substr(0, head.find_first_of("\r\n"));
    // METHOD SP TARGET SP HTTP/1.x, nothing else.
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos ||
        !line.substr(sp2 + 1).starts_with("HTTP/1.") || sp1 == 0 || sp2 == sp1 + 1) {
      respond(400, "Bad Request", "text/plain; charset=utf-8", "bad request line\n", false);
      return;
    }
    const std::string_view method = line.substr(0, sp1);
    std::string_view path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    const bool head_only = method == "HEAD";
    if (path != "/metrics" && path != "/") {
      respond(404, "Not Found", "text/plain; charset=utf-8", "not found; try /metrics\n",
              head_only);
      return;
    }
    if (method != "GET" && !head_only) {
      respond(405, "Method Not Allowed", "text/plain; charset=utf-8",
              "only GET and HEAD are served\n", false, "Allow: GET, HEAD\r\n");
      return;
    }
    if (path == "/") {
      respond(200, "OK", "text/html; charset=utf-8", std::string(kIndexPage), head_only);
      return;
    }
    std::string body;
    try {
      body = registry_.render();
    } catch (const std::exception& e) {
      spdlog::error("Error: metrics could not be rendered: {}", e.what());
      respond(500, "Internal Server Error", "text/plain; charset=utf-8", "internal error\n",
              head_only);
      return;
    }
    respond(200, "OK", std::string(kMetricsContentType), std::move(body), head_only);
  }

  void respond(int code, std::string_view reason, std::string_view type, std::string body,
               bool head_only, std::string_view extra = {}) {
    out_ = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
        code, reason, type, body.size(), extra);
    if (!head_only) out_ += body;
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](error_code ec, size_t) {
                        if (ec) {
                          self->close();
                          return;
                        }
                        // Closing with unread input would make the kernel send a reset and throw
                        // away the answer still queued (a 431 before the client has sent its whole
                        // head). So: end our side, read and discard until the client closes
                        // (or the connection's deadline), then close.
                        error_code ignored;
                        self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
                        self->discard_input();
                      });
  }

  void discard_input() {
    socket_.async_read_some(asio::buffer(scratch_),
                            [self = shared_from_this()](error_code ec, size_t) {
                              if (ec) {
                                self->close();
                              } else {
                                self->discard_input();
                              }
                            });
  }

  void close() {
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    timer_.cancel();
  }

  size_t& active_;
  const MetricsRegistry& registry_;
  std::chrono::milliseconds timeout_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  asio::streambuf head_;
  std::string out_;
  std::array<char, 4096> scratch_;  // input discarded after the answer
};

}  // namespace

void MetricsServer::Impl::accept() {
  acceptor.async_accept([this](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      // Out of file descriptors and the like: try again shortly rather than spin.
      spdlog::warn("Warn: metrics server: accept failed: {}", ec.message());
      accept_retry.expires_after(std::chrono::milliseconds(200));
      accept_retry.async_wait([this](error_code e) {
        if (!e) accept();
      });
      return;
    }
    if (active >= options.max_connections) {
      error_code ignored;
      socket.close(ignored);  // over the cap: closed at once, the scraper retries
    } else {
      std::make_shared<Connection>(active, options, *registry, std::move(socket))->start();
    }
    accept();
  });
}

void MetricsServer::Impl::run_periodic(size_t i) {
  try {
    periodic[i].second();
  } catch (const std::exception& e) {
    spdlog::error("Error: metrics sampler: {}", e.what());
  }
  timers[i]->expires_after(periodic[i].first);
  timers[i]->async_wait([this, i](error_code ec) {
    if (!ec) run_periodic(i);
  });
}

MetricsServer::MetricsServer(const Endpoint& address, MetricsServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  error_code ec;
  const auto addr = asio::ip::make_address(address.host, ec);
  if (ec) {
    throw std::runtime_error(fmt::format("cannot serve metrics on {}: '{}' is not an IP address",
                                         address.to_string(), address.host));
  }
  const tcp::endpoint ep(addr, address.port);
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  // SO_REUSEADDR: a restart is not refused for the last run's connections in TIME_WAIT; a port
  // another program listens on is still refused.
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("cannot serve metrics on {}: {}", address.to_string(), ec.message()));
  }
  const tcp::endpoint bound = a.local_endpoint();
  impl_->local = endpoint_text(bound);
  impl_->port = bound.port();
}

MetricsServer::~MetricsServer() { stop(); }

void add_metrics_option(CLI::App& app, std::string& text) {
  app.add_option("--metrics", text,
                 "Serve Prometheus metrics over HTTP at ADDR:PORT/metrics (e.g. 127.0.0.1:9464, "
                 "[::1]:9464, 0.0.0.0:9464); off by default")
      ->check(CLI::Validator(
          [](std::string& value) {
            Endpoint ep;
            std::string why;
            return parse_metrics_address(value, &ep, &why) ? std::string() : why;
          },
          "ADDR:PORT", "metrics address"));
}

std::unique_ptr<MetricsServer> open_metrics_server(const std::string& text) {
  if (text.empty()) return nullptr;
  Endpoint ep;
  std::string why;
  if (!parse_metrics_address(text, &ep, &why)) throw std::runtime_error("--metrics: " + why);
  return std::make_unique<MetricsServer>(ep);
}

MetricsServing::MetricsServing(MetricsServer* server, const MetricsRegistry& registry)
    : server_(server) {
  if (server_ == nullptr) return;
  server_->start(registry);
  spdlog::info("Info: metrics at http://{}/metrics", server_->local_address());
}

MetricsServing::~MetricsServing() {
  if (server_ != nullptr) server_->stop();
}

std::string MetricsServer::local_address() const { return impl_->local; }

uint16_t MetricsServer::port() const { return impl_->port; }

void MetricsServer::start(const MetricsRegistry& registry) {
  Impl& s = *impl_;
  if (s.thread.joinable()) throw std::logic_error("MetricsServer::start called twice");
  s.registry = &registry;
  s.periodic = registry.periodic();
  for (size_t i = 0; i < s.periodic.size(); ++i) {
    s.timers.push_back(std::make_unique<asio::steady_timer>(s.io));
    asio::post(s.io, [&s, i] { s.run_periodic(i); });
  }
  s.accept();
  s.thread = start_named_thread("dd-metrics", [&s] {
    // Nothing may leave this thread: a handler's exception is logged and serving goes on.
    while (true) {
      try {
        s.io.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("Error: metrics server: {}", e.what());
      }
    }
  });
}

void MetricsServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
  error_code ignored;
  impl_->acceptor.close(ignored);  // refuse connections at once, not leave them in the backlog
}

}  // namespace ddft::common
