// Logging setup (spdlog) and the number/time formats of the DFTS receive log.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace ddft::common {

struct LogConfig {
  std::string log_file;   // empty: console only
  bool verbose = false;   // debug lines too
  bool quiet = false;     // no console output (the log file still gets everything)
  bool syslog = false;    // also every line to syslog (facility daemon, ident = program name)
  std::string format = "text";  // text (the DFTS lines) or json (console and log file)
};

// The DFTS timestamp prefix: "10/02-15:52:54 " then the message, which carries its own
// "Info:", "Rcvd:", "File:", "Warn:" or "Error:" word.
inline constexpr const char* kDftsPattern = "%m/%d-%H:%M:%S %v";

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
