#include "common/logging.hpp"

#include <fmt/format.h>
#include <spdlog/details/file_helper.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <syslog.h>

#include <mutex>
#include <vector>

#include "common/log_format.hpp"

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

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  const size_t lead = digits.size() % 3;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && i >= lead && (i - lead) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_hms(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(d + milliseconds(500)).count();
  return fmt::format("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

std::string format_hms_ms(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(d).count();
  const auto s = ms / 1000;
  return fmt::format("{:02}:{:02}:{:02}.{:03}", s / 3600, (s / 60) % 60, s % 60, ms % 1000);
}

double mib_per_s(uint64_t bytes, std::chrono::nanoseconds d) {
  if (d.count() <= 0) return 0.0;
  return static_cast<double>(bytes) / (1024.0 * 1024.0) / std::chrono::duration<double>(d).count();
}

}  // namespace ddft::common
