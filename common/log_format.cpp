#include "common/log_format.hpp"

#include <fmt/format.h>

#include <chrono>
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
  fmt::format_to(std::back_inserter(dest),
                 "{{\"time\":\"{}\",\"level\":\"{}\",\"program\":{},\"msg\":{}}}\n",
                 iso8601_local(msg.time), level_name(msg.level), program_,
                 json_quote(std::string_view(msg.payload.data(), msg.payload.size())));
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  auto copy = std::make_unique<JsonLogFormatter>("");
  copy->program_ = program_;
  return copy;
}

}  // namespace ddft::common
