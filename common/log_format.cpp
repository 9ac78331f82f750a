#include "common/log_format.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <iterator>
#include <string_view>

#include "common/json.hpp"

namespace ddft::common {

void add_log_options(CLI::App& app, LogConfig& cfg) {
  app.add_option("--log-file", cfg.log_file, "Also write the log to this file");
  app.add_flag("--verbose,-v", cfg.verbose, "Debug lines too");
  app.add_flag("--quiet,-q", cfg.quiet, "No console output");
  app.add_flag("--syslog", cfg.syslog,
               "Also send every line to syslog (facility daemon, ident = the program's name)");
  app.add_option("--log-format", cfg.format,
                 "text (the DFTS lines) or json (one object a line: time, level, program, msg), "
                 "on the console and in --log-file")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

namespace {

std::string_view level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    case spdlog::level::off:
    case spdlog::level::n_levels:
      break;
  }
  return "off";
}

}  // namespace

JsonLogFormatter::JsonLogFormatter(std::string program) : program_(json_quote(program)) {}

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using namespace std::chrono;
  const auto since_epoch = duration_cast<milliseconds>(msg.time.time_since_epoch()).count();
  // Floor division: a time before the epoch (a broken clock) still prints a valid stamp.
  const long long secs = since_epoch / 1000 - (since_epoch % 1000 < 0 ? 1 : 0);
  const long long millis = since_epoch - secs * 1000;
  const auto t = static_cast<std::time_t>(secs);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  const long offset_min = tm.tm_gmtoff / 60;
  const long abs_min = offset_min < 0 ? -offset_min : offset_min;
  fmt::format_to(std::back_inserter(dest),
                 "{{\"time\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}{:02}:{:02}\","
                 "\"level\":\"{}\",\"program\":{},\"msg\":{}}}\n",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 millis, offset_min < 0 ? '-' : '+', abs_min / 60, abs_min % 60,
                 level_name(msg.level), program_,
                 json_quote(std::string_view(msg.payload.data(), msg.payload.size())));
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  auto copy = std::make_unique<JsonLogFormatter>("");
  copy->program_ = program_;
  return copy;
}

}  // namespace ddft::common
