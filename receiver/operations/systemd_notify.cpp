#include "receiver/operations/systemd_notify.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdlib>
#include <cstring>

namespace ddft::receiver {

bool WatchdogGate::due(common::Clock::time_point now, uint64_t ingest_passes,
                       uint64_t writer_passes) {
  if (interval_.count() <= 0) return false;
  // Half the interval, as sd_watchdog_enabled(3) recommends: one late ping is not yet a restart.
  if (last_ping_ && now - *last_ping_ < interval_ / 2) return false;
  // A loop that has not come round since the last ping may be stuck: withhold the ping, and let
  // the service manager decide once the whole interval has gone by.
  if (ingest_passes == ingest_at_ping_ || writer_passes == writer_at_ping_) return false;
  last_ping_ = now;
  ingest_at_ping_ = ingest_passes;
  writer_at_ping_ = writer_passes;
  return true;
}

namespace {

std::chrono::microseconds watchdog_from_environment() {
  uint64_t usec = 0;
  // 0: keep the variables, so that sd_notify() below (which reads NOTIFY_SOCKET each time)
  // still finds the socket.
  if (sd_watchdog_enabled(0, &usec) <= 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(usec);
}

}  // namespace

ServiceNotifier::ServiceNotifier(common::Clock& clock)
    : clock_(clock),
      enabled_(std::getenv("NOTIFY_SOCKET") != nullptr),
      watchdog_(enabled_ ? watchdog_from_environment() : std::chrono::microseconds(0)),
      gate_(watchdog_) {
  if (watchdog_.count() > 0) {
    spdlog::info(
        "Info: service manager watchdog: {:g} s (pinged every {:g} s while the link "
        "reader and the writer make progress)",
        static_cast<double>(watchdog_.count()) / 1e6, static_cast<double>(watchdog_.count()) / 2e6);
  }
}

void ServiceNotifier::send(const std::string& message) {
  if (!enabled_) return;
  const int rc = sd_notify(0, message.c_str());
  if (rc > 0) return;
  // 0 means NOTIFY_SOCKET went away from the environment, which nothing here does; either way
  // the message was not delivered.
  const int64_t now = clock_.now().time_since_epoch().count();
  int64_t last = last_error_log_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < std::chrono::nanoseconds(std::chrono::minutes(1)).count()) return;
  if (!last_error_log_ns_.compare_exchange_strong(last, now)) return;
  spdlog::warn("Warn: cannot notify the service manager ({}): {}",
               message.substr(0, message.find('\n')),
               rc < 0 ? std::strerror(-rc) : "NOTIFY_SOCKET is not set");
}

void ServiceNotifier::status(std::string_view text) { send(fmt::format("STATUS={}", text)); }

void ServiceNotifier::stopping() {
  if (stopping_sent_.exchange(true)) return;
  send("STOPPING=1\nSTATUS=stopping: writing what the buffer holds");
}

void ServiceNotifier::on_receiving(std::string_view link) {
  link_ = std::string(link);
  ready_ = true;
  last_status_ = clock_.now();
  send(fmt::format("READY=1\nSTATUS=receiving on {}", link_));
}

void ServiceNotifier::on_tick(const Liveness& liveness) {
  // Nothing before READY=1: the service manager arms its watchdog only then.
  if (!enabled_ || !ready_) return;
  const auto now = clock_.now();
  std::string message;
  if (gate_.due(now, liveness.ingest_passes, liveness.writer_passes)) message = "WATCHDOG=1";
  const bool changed =
      liveness.files_passed != files_passed_ || liveness.files_failed != files_failed_;
  if (changed && now - last_status_ >= std::chrono::seconds(1)) {
    files_passed_ = liveness.files_passed;
    files_failed_ = liveness.files_failed;
    last_status_ = now;
    if (!message.empty()) message += '\n';
    message += fmt::format("STATUS=receiving on {}; {} file(s) passed, {} failed", link_,
                           files_passed_, files_failed_);
  }
  if (!message.empty()) send(message);
}

}  // namespace ddft::receiver
