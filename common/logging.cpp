#include "common/logging.hpp"

#include <fmt/format.h>
#include <spdlog/details/file_helper.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <syslog.h>

#include <iterator>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/json.hpp"

namespace ddft::common {
namespace {

// An appending file sink that can be reopened under the same name (logrotate). spdlog's own
// basic_file_sink cannot; its file_helper can.
class ReopenableFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ReopenableFileSink(const std::string& path) { file_.open(path, false); }
  void reopen() {
    std::lock_guard<std::mutex> lock(mutex_);
    file_.reopen(false);  // append: a file that was not rotated keeps its lines
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    file_.write(formatted);
  }
  void flush_() override { file_.flush(); }

 private:
  spdlog::details::file_helper file_;
};

// The console sink: formats under its own mutex, writes through the Console's lock.
class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ConsoleSink(Console& console) : console_(console) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    console_.write_line(std::string_view(formatted.data(), formatted.size()));
  }
  void flush_() override { console_.flush(); }

 private:
  Console& console_;
};

std::mutex g_file_sink_mu;
std::shared_ptr<ReopenableFileSink> g_file_sink;  // guarded by g_file_sink_mu

}  // namespace

void Console::write_line(std::string_view line) {
  std::lock_guard lock(mu_);
  if (overlay_) overlay_->erase(out_);
  std::fwrite(line.data(), 1, line.size(), out_);
  if (overlay_) overlay_->draw(out_);
  std::fflush(out_);
}

void Console::flush() {
  std::lock_guard lock(mu_);
  std::fflush(out_);
}

void Console::set_overlay(Overlay* overlay) {
  std::lock_guard lock(mu_);
  overlay_ = overlay;
}

Console& stdout_console() {
  // Never destroyed: threads may still log while static objects are torn down at exit.
  static Console* const console = new Console(stdout);
  return *console;
}

spdlog::sink_ptr make_console_sink(Console& console) {
  return std::make_shared<ConsoleSink>(console);
}

void reopen_log_file() {
  std::shared_ptr<ReopenableFileSink> sink;
  {
    std::lock_guard lock(g_file_sink_mu);
    sink = g_file_sink;
  }
  if (sink) sink->reopen();
}

std::shared_ptr<spdlog::logger> setup_logging(const LogConfig& cfg, const std::string& name) {
  std::vector<spdlog::sink_ptr> sinks;
  if (!cfg.quiet) sinks.push_back(make_console_sink(stdout_console()));
  if (!cfg.log_file.empty()) {
    auto file = std::make_shared<ReopenableFileSink>(cfg.log_file);
    sinks.push_back(file);
    std::lock_guard lock(g_file_sink_mu);
    g_file_sink = file;
  }
  if (cfg.syslog) {
    // The bare message (formatting off): syslog adds its own time, host and ident. Levels map to
    // syslog priorities (warn -> LOG_WARNING, err -> LOG_ERR, ...).
    sinks.push_back(std::make_shared<spdlog::sinks::syslog_sink_mt>(name, LOG_PID, LOG_DAEMON,
                                                                    /*enable_formatting=*/false));
  }
  auto logger = std::make_shared<spdlog::logger>(name, sinks.begin(), sinks.end());
  if (cfg.format == "json") {
    logger->set_formatter(std::make_unique<JsonLogFormatter>(name));
  } else if (cfg.format == "text") {
    logger->set_pattern(kDftsPattern, spdlog::pattern_time_type::local);
  } else {
    throw spdlog::spdlog_ex("unknown log format '" + cfg.format + "' (text or json)");
  }
  logger->set_level(cfg.verbose ? spdlog::level::debug : spdlog::level::info);
  // Every line is an operator-visible event; flush each so a tail -f or a crash never hides one.
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  return logger;
}

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
