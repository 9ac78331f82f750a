// Prometheus metrics (--metrics ADDR:PORT): a registry of counters and gauges read at scrape time,
// rendered in the text exposition format 0.0.4, and a small HTTP/1.1 server for it on a thread of
// its own (Boost.Asio).
//
// The programs' hot paths never see this: they publish plain numbers (relaxed atomics, or a
// snapshot the owning thread copies a few times a second), and the registry's read callbacks
// look at those from the server thread when a scrape comes.
//
//   program threads ──(atomics / snapshot)──> MetricsRegistry::render() <── [dd-metrics:
//                                                                           MetricsServer]
//                                                                           GET /metrics
//
// The registry is thread-safe. The server owns its sockets and its "dd-metrics" thread, joined
// by stop() or its destructor; what a read callback looks at must outlive the serving
// (MetricsServing). At start-up a bad registration throws std::invalid_argument (a bug), an
// address that cannot be bound std::runtime_error with one line; a scrape never throws out of
// the server: a read callback that throws makes it answer 500.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/transport.hpp"

namespace ddft::common {

enum class MetricType { kCounter, kGauge };

// Label name/value pairs of one series, in the order written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricSample {
  MetricLabels labels;
  double value = 0;
};

// The Content-Type of the text exposition format.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// A set of metric families, rendered in registration order. Registration and rendering are
// thread-safe (one mutex); renders are serialised, so read callbacks never run concurrently with
// each other. Callbacks run on the thread that calls render() (the server's) and must not call
// back into the registry.
class MetricsRegistry {
 public:
  using Read = std::function<double()>;
  using ReadMany = std::function<std::vector<MetricSample>()>;

  // Adds one series of family `name`. Registering a name again adds another series (other
  // labels) to the same family; its type and help must then be the same. A value of NaN is
  // written as NaN (the format's "no value yet"). Throws std::invalid_argument on a name or label
  // name the format does not allow, a counter whose name does not end in "_total", or a clash
  // with the family's type or help.
  void add(MetricType type, std::string_view name, std::string_view help, Read read,
           MetricLabels labels = {});
  // Adds a family whose series are known only at scrape time (e.g. a label that changes). An
  // empty result writes the family's HELP and TYPE lines only. Same checks as add().
  void add_family(MetricType type, std::string_view name, std::string_view help, ReadMany read);
  // Runs `fn` at the start of every render, before any value is read (to take one consistent
  // snapshot that the reads then use).
  void on_scrape(std::function<void()> fn);
  // Asks the server that serves this registry to run `fn` every `period` on its thread, from
  // its start() on (e.g. to feed a RateMeter). Nothing runs while no server serves it.
  void every(std::chrono::milliseconds period, std::function<void()> fn);
  using Periodic = std::vector<std::pair<std::chrono::milliseconds, std::function<void()>>>;
  Periodic periodic() const;

  // The whole exposition, ending with a newline. A read callback that throws makes the render
  // throw (the server answers 500).
  std::string render() const;

 private:
  struct Family {
    std::string name;
    std::string help;
    MetricType type;
    std::vector<std::pair<MetricLabels, Read>> series;
    std::vector<ReadMany> dynamic;
  };
  Family& family(MetricType type, std::string_view name, std::string_view help);

  mutable std::mutex mu_;
  std::vector<Family> families_;
  std::vector<std::function<void()>> preludes_;
  Periodic periodic_;
};

// The format's number: integers (up to 2^53) without a decimal point, others in the shortest form
// that reads back exactly, "NaN", "+Inf", "-Inf".
std::string format_metric_value(double v);
// A label value between double quotes: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view v);
// HELP text: backslash and newline escaped.
std::string escape_metric_help(std::string_view v);

// A rate over a sliding window of samples of a growing total (bytes sent, say). Thread-safe.
class RateMeter {
 public:
  explicit RateMeter(std::chrono::nanoseconds window) : window_(window) {}
  // Records the total at time `now` (times must not go backwards).
  void sample(std::chrono::nanoseconds now, double total);
  // Units per second between the oldest sample in the window and the newest; 0 with fewer than
  // two samples.
  double rate() const;

 private:
  std::chrono::nanoseconds window_;
  mutable std::mutex mu_;
  std::deque<std::pair<std::chrono::nanoseconds, double>> samples_;
};

// --metrics ADDR:PORT: a numeric IPv4 address or a bracketed IPv6 one, and a port (0: any free
// port, logged at start). Returns false with a one-line reason in *why.
[[nodiscard]] bool parse_metrics_address(std::string_view text, Endpoint* out, std::string* why);

struct MetricsServerOptions {
  size_t max_request_bytes = 8192;          // request line + headers
  std::chrono::milliseconds timeout{5000};  // a connection's whole life
  size_t max_connections = 16;              // at once; more are closed at accept
};

// The HTTP side: GET (or HEAD) /metrics answers 200 with the registry's exposition, / a short
// page pointing there, any other path 404, any other method 405, a malformed request 400, a
// request whose head is larger than max_request_bytes 431; every answer is "Connection: close".
// Nothing but the request line is interpreted; header lines are read up to the blank line and
// ignored.
class MetricsServer {
 public:
  // Binds and listens on `address` now, so that a taken port stops the program before it does
  // anything else, but serves nothing until start(). Throws std::runtime_error with a one-line
  // reason ("cannot serve metrics on ADDR: Address already in use").
  explicit MetricsServer(const Endpoint& address, MetricsServerOptions options = {});
  // Stops and joins the thread.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // "127.0.0.1:9464", "[::1]:9464": the address bound (the real port when 0 was asked for).
  std::string local_address() const;
  uint16_t port() const;

  // Starts serving `registry` on the thread "metrics", and runs its periodic functions there.
  // `registry` must outlive stop().
  void start(const MetricsRegistry& registry);
  // Closes the listening socket and every connection and joins the thread. Idempotent; any
  // thread but the server's.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Registers --metrics ADDR:PORT on `app` into `text` (empty: off), checked by
// parse_metrics_address() when the command line and config file are parsed.
void add_metrics_option(CLI::App& app, std::string& text);

// --metrics as given (empty: nullptr, off): binds the server now. Throws std::runtime_error with a
// one-line reason (a bad address, a taken port).
std::unique_ptr<MetricsServer> open_metrics_server(const std::string& text);

// Serves `registry` on `server` (null: --metrics off, nothing happens) for as long as it lives,
// and logs where. Declare it after everything the registry's callbacks read, so that serving stops
// before they are destroyed.
class MetricsServing {
 public:
  MetricsServing(MetricsServer* server, const MetricsRegistry& registry);
  ~MetricsServing();
  MetricsServing(const MetricsServing&) = delete;
  MetricsServing& operator=(const MetricsServing&) = delete;

 private:
  MetricsServer* server_;
};

}  // namespace ddft::common
