#include "common/signals.hpp"

#include <spdlog/spdlog.h>

#include <csignal>

#include "common/logging.hpp"
#include "common/named_thread.hpp"

namespace ddft::common {

StopOnSignals::StopOnSignals(std::stop_source stop)
    : signals_(io_, SIGINT, SIGTERM), hup_(io_, SIGHUP) {
  wait_hup();
  signals_.async_wait([stop](const boost::system::error_code& ec, int sig) mutable {
    if (ec) return;
    spdlog::info("Info: signal {} received, stopping", sig);
    stop.request_stop();
  });
  thread_ = start_named_thread("dd-signals", [this] { io_.run(); });
}

StopOnSignals::~StopOnSignals() { io_.stop(); }

void StopOnSignals::wait_hup() {
  hup_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reopen_log_file();
    spdlog::info("Info: SIGHUP: log file reopened");
    wait_hup();
  });
}

}  // namespace ddft::common
