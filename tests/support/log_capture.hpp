// The spdlog lines written while a capture lives, for tests that check what is logged.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace ddft::testing {

// Makes the default spdlog logger write into a string (message only, "%v") while it lives, and
// puts the previous default logger back when it goes. Not thread-safe against other captures.
class LogCapture {
 public:
  LogCapture() : old_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(old_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Everything logged so far, one line per message.
  std::string text() const { return text_.str(); }
  // How many times `needle` occurs in what was logged so far.
  size_t count(const std::string& needle) const {
    const std::string all = text();
    size_t n = 0;
    for (size_t at = all.find(needle); at != std::string::npos; at = all.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> old_;
};

}  // namespace ddft::testing
