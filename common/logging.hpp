// Logging: the process's logger (console, log file, syslog) in the DFTS text format or one JSON
// object a line, the log options both programs share (--log-file, --verbose, --quiet, --syslog,
// --log-format), and the Console that keeps a redrawn overlay out of the way of whole lines.
//
// add_log_options() runs on main's thread before the parse (CLI11 reports a bad value as its own
// CLI::ParseError). setup_logging() runs once, on main's thread before any other thread starts,
// and throws spdlog::spdlog_ex when the log file cannot be opened. After it, logging, the Console
// and reopen_log_file() are thread-safe and throw nothing. The Console is the process's
// (stdout_console()); an overlay stays its installer's, who removes it before destroying it. A
// JsonLogFormatter is spdlog's: each sink holds its own clone and calls it under the sink's lock.
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace ddft::common {

struct LogConfig {
  std::string log_file;         // empty: console only
  bool verbose = false;         // debug lines too
  bool quiet = false;           // no console output (the log file still gets everything)
  bool syslog = false;          // also every line to syslog (facility daemon, ident = program name)
  std::string format = "text";  // text (the DFTS lines) or json (console and log file)
};

// Registers the log options on `app` (and so in its --config file), filling `cfg`. `cfg` must
// outlive the parse.
void add_log_options(CLI::App& app, LogConfig& cfg);

// The DFTS timestamp prefix: "10/02-15:52:54 " then the message, which carries its own
// "Info:", "Rcvd:", "File:", "Warn:" or "Error:" word.
inline constexpr const char* kDftsPattern = "%m/%d-%H:%M:%S %v";

// Where the console log lines go (stdout), shared with anything else that draws there (the
// sender's progress bar), so that a log line is never written into the middle of it: everything
// written to the console goes through one lock. Thread-safe.
class Console {
 public:
  // Something kept drawn below the log lines (a progress bar). The console calls erase() before
  // it writes a log line and draw() after it, under its lock, so the line lands above the
  // overlay, whole. Both write to `out` only: they must not log (the lock is held) nor throw.
  class Overlay {
   public:
    virtual ~Overlay() = default;
    virtual void erase(std::FILE* out) = 0;
    virtual void draw(std::FILE* out) = 0;
  };

  // `out` must outlive the console.
  explicit Console(std::FILE* out) : out_(out) {}
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Writes one formatted log line (it ends in '\n') between the overlay's erase and draw, and
  // flushes it.
  void write_line(std::string_view line);
  void flush();
  // Installs `overlay` (nullptr removes it); it must stay alive until it is removed.
  void set_overlay(Overlay* overlay);
  // Runs fn(out) under the console lock: how an overlay redraws itself between log lines. `fn`
  // must not log.
  template <typename Fn>
  void locked(Fn&& fn) {
    std::lock_guard lock(mu_);
    fn(out_);
  }
  std::FILE* file() const { return out_; }

 private:
  std::mutex mu_;
  std::FILE* const out_;
  Overlay* overlay_ = nullptr;  // guarded by mu_
};

// The process's console on stdout; lives for the whole program.
Console& stdout_console();

// An spdlog sink that writes each formatted line to `console`, which must outlive it.
spdlog::sink_ptr make_console_sink(Console& console);

// Builds the process-wide logger `name` (console on stdout, plus `cfg.log_file` when set, plus
// syslog with `cfg.syslog`) in the DFTS format or, with cfg.format "json", one JSON object a line
// (JsonLogFormatter below; syslog always gets the bare message, it stamps lines itself), registers
// it as spdlog's default and returns it. Throws spdlog::spdlog_ex when the log file cannot be
// opened (startup only). Call once, from main, before any thread starts.
std::shared_ptr<spdlog::logger> setup_logging(const LogConfig& cfg, const std::string& name);

// Closes and reopens the log file (if any) under its configured name: what SIGHUP does, so that
// logrotate can move the old file away. Thread-safe; lines are never lost or split.
void reopen_log_file();

// One JSON object per line, for log shippers:
//   {"time":"2026-11-22T18:20:01.123+01:00","level":"info","program":"dd_file_receive","msg":"..."}
// time: local time, ISO 8601 with milliseconds and the UTC offset; level: trace, debug, info,
// warning, error, critical; msg: the line's message exactly as the text format prints it after
// its timestamp, as a JSON string (any byte survives, see json_quote()). Thread-compatible, as
// every spdlog formatter: each sink holds its own clone and calls it under the sink's lock.
class JsonLogFormatter final : public spdlog::formatter {
 public:
  explicit JsonLogFormatter(std::string program);
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::string program_;  // already quoted
};

}  // namespace ddft::common
