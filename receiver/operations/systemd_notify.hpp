// The receiver's side of systemd's service notification (sd_notify(3), through libsystemd; the
// unit is Type=notify): READY=1 once it receives, STOPPING=1 when a stop begins, WATCHDOG=1 while
// its two loops make progress, and STATUS= lines for `systemctl status`.
//
// Without NOTIFY_SOCKET in the environment (not started by systemd, or not as Type=notify) every
// call is a no-op. A message that cannot be sent is logged (at most once a minute) and otherwise
// ignored: the daemon keeps receiving whatever happens to its service manager.
//
// The notifier is made on main's thread before other threads start; on_receiving() and
// on_tick() come from the writer thread, status() and stopping() from any. Nothing here throws.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.hpp"
#include "receiver/pipeline.hpp"

namespace ddft::receiver {

// Decides when a watchdog ping is due: half the watchdog interval after the last one, and only
// when both the ingest thread and the writer thread have made a pass of their loop since the last
// one, so that either thread being stuck stops the pings and the service manager restarts the
// daemon. Not thread-safe: one thread calls due().
class WatchdogGate {
 public:
  // `interval`: the service manager's watchdog timeout (WATCHDOG_USEC). Zero: never due.
  explicit WatchdogGate(std::chrono::microseconds interval) : interval_(interval) {}
  // True when a ping should be sent now (the caller sends it): the gate then counts it as sent.
  // `ingest_passes` and `writer_passes` are the loops' pass counters (Liveness), which only grow.
  // The first ping is due at once when both loops have made a pass.
  bool due(common::Clock::time_point now, uint64_t ingest_passes, uint64_t writer_passes);

 private:
  std::chrono::microseconds interval_;
  std::optional<common::Clock::time_point> last_ping_;
  uint64_t ingest_at_ping_ = 0;
  uint64_t writer_at_ping_ = 0;
};

class ServiceNotifier final : public ReceiverObserver {
 public:
  // Reads what systemd puts in the environment: NOTIFY_SOCKET, and WATCHDOG_USEC with
  // WATCHDOG_PID (sd_watchdog_enabled: the watchdog applies only when WATCHDOG_PID is this
  // process or unset). Call on the main thread before other threads start. `clock` must outlive
  // the notifier.
  explicit ServiceNotifier(common::Clock& clock);
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // True when a service manager listens (NOTIFY_SOCKET is set).
  bool enabled() const { return enabled_; }
  // The watchdog timeout the service manager set; zero when there is none.
  std::chrono::microseconds watchdog_interval() const { return watchdog_; }

  // STATUS=text. Any thread.
  void status(std::string_view text);
  // STOPPING=1 with a STATUS= line, the first time only (a signal and the end of run() may both
  // call it). Any thread.
  void stopping();

  // READY=1 with a STATUS= line naming the link. The receiver's writer thread, once.
  void on_receiving(std::string_view link) override;
  // WATCHDOG=1 when the gate says so, and STATUS= when the file counts changed (at most once a
  // second). The receiver's writer thread, every 250 ms.
  void on_tick(const Liveness& liveness) override;

 private:
  // Sends `message` (newline-separated assignments); logs a failure at most once a minute.
  void send(const std::string& message);

  common::Clock& clock_;
  bool enabled_ = false;
  std::chrono::microseconds watchdog_{0};
  std::atomic<bool> stopping_sent_{false};
  std::atomic<int64_t> last_error_log_ns_{0};
  // Writer thread only:
  WatchdogGate gate_;
  bool ready_ = false;
  std::string link_;
  uint64_t files_passed_ = 0;
  uint64_t files_failed_ = 0;
  common::Clock::time_point last_status_{};
};

}  // namespace ddft::receiver
