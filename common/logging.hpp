// Logging setup (spdlog) and the number and time formats of the DFTS receive log.
//
// setup_logging() runs once, on main's thread before any other thread starts, and throws
// spdlog::spdlog_ex when the log file cannot be opened. After it, logging, the Console and
// reopen_log_file() are thread-safe and throw nothing. The Console is the process's
// (stdout_console()); an overlay stays its installer's, who removes it before destroying it.
// The formatters are pure.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
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
// (common/log_format.hpp; syslog always gets the bare message, it stamps lines itself), registers
// it as spdlog's default and returns it. Throws spdlog::spdlog_ex when the log file cannot be
// opened (startup only). Call once, from main, before any thread starts.
std::shared_ptr<spdlog::logger> setup_logging(const LogConfig& cfg, const std::string& name);

// Closes and reopens the log file (if any) under its configured name: what SIGHUP does, so that
// logrotate can move the old file away. Thread-safe; lines are never lost or split.
void reopen_log_file();

// 104857600 -> "104,857,600".
std::string with_commas(uint64_t n);
// Whole seconds as "HH:MM:SS" (rounded to the nearest second).
std::string format_hms(std::chrono::nanoseconds d);
// "HH:MM:SS.mmm".
std::string format_hms_ms(std::chrono::nanoseconds d);
// Bytes per second in MB/s (MB = 2^20 bytes, as DFTS prints it), 0 for a zero duration.
double mib_per_s(uint64_t bytes, std::chrono::nanoseconds d);

}  // namespace ddft::common
