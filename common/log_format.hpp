// The log options both programs share (--log-file, --verbose, --quiet, --syslog, --log-format) and
// the --log-format json line formatter.
//
// add_log_options() runs on main's thread before the parse (CLI11 reports a bad value as its own
// CLI::ParseError). A JsonLogFormatter is spdlog's: each sink holds its own clone and calls it
// under the sink's lock; formatting throws nothing.
#pragma once

#include <spdlog/formatter.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/logging.hpp"

namespace ddft::common {

// Registers the log options on `app` (and so in its --config file), filling `cfg`. `cfg` must
// outlive the parse.
void add_log_options(CLI::App& app, LogConfig& cfg);

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
