// dd_file_receive: the receive daemon. Drains the link into a RAM ring and writes verified files.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "common/cli_exit.hpp"
#include "common/device_transport.hpp"
#include "common/logging.hpp"
#include "common/metrics.hpp"
#include "common/signals.hpp"
#include "common/udp_transport.hpp"
#include "common/version.hpp"
#include "iotest/cli.hpp"
#include "receiver/config.hpp"
#include "receiver/operations/metrics.hpp"
#include "receiver/operations/systemd_notify.hpp"
#include "receiver/pipeline.hpp"

int main(int argc, char** argv) {
  using namespace ddft;
  if (auto rc = iotest::run_if_requested(argc, argv, iotest::Kind::kWrite)) return *rc;
  receiver::ReceiverConfig cfg;
  CLI::App app{"dd_file_receive: receive files sent one way across a data diode"};
  app.set_version_flag("--version", std::string("dd_file_receive ") + common::kVersion);
  receiver::add_receiver_options(app, cfg);
  iotest::add_switch_help(app, iotest::Kind::kWrite);
  try {
    app.parse(argc, argv);
    receiver::finalize_receiver_config(cfg);
  } catch (const CLI::ParseError& e) {
    return common::usage_exit(app, e);
  }

  try {
    common::setup_logging(cfg.log, "dd_file_receive");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dd_file_receive: cannot open log file: %s\n", e.what());
    return 2;
  }

  // Files waiting for a flush each hold descriptors: take what the hard limit allows (systemd
  // and most shells start services at a soft 1024).
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }

  // Reads NOTIFY_SOCKET and the watchdog's settings now, before any thread starts.
  receiver::ServiceNotifier notifier(common::SteadyClock::instance());
  try {
    // --metrics is bound first: a taken port stops the daemon before it opens anything else.
    const std::unique_ptr<common::MetricsServer> metrics = common::open_metrics_server(cfg.metrics);
    auto open_source = [&cfg](size_t lane) -> std::unique_ptr<common::DatagramSource> {
      if (cfg.transport == common::TransportKind::kDevice)
        return std::make_unique<common::DeviceSource>(cfg.devices.at(lane));
      auto udp = std::make_unique<common::UdpSource>(cfg.listens.at(lane),
                                                     cfg.socket_buffer_mb << 20, cfg.gro);
      if (auto w = udp->buffer_report().warning("receive"); !w.empty()) spdlog::warn("Warn: {}", w);
      return udp;
    };
    notifier.status(fmt::format("starting: preparing the receive buffer ({} MB)", cfg.buffer_mb));
    receiver::Receiver rx(cfg, open_source, common::SteadyClock::instance());
    if (notifier.enabled()) rx.set_observer(&notifier);
    common::MetricsRegistry registry;
    receiver::add_receiver_metrics(registry, rx, cfg);
    const common::MetricsServing serving(metrics.get(), registry);  // stops before rx goes

    // SIGTERM / Ctrl-C: finish what the ring holds, record files in flight as failed, exit 0.
    std::stop_source stop;
    common::StopOnSignals on_signal(stop);
    // STOPPING=1 as soon as the stop begins (on the signal thread): the service manager then
    // waits for the exit (TimeoutStopSec=) and no longer expects watchdog pings.
    const std::stop_callback notify_stopping(stop.get_token(),
                                             [&notifier] { notifier.stopping(); });

    const receiver::ReceiveTotals t = rx.run(stop.get_token());
    notifier.stopping();  // (--once, or the writer thread failed: stopping all the same)
    if (cfg.once) return t.files_failed + t.files_refused == 0 ? 0 : 1;
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("Error: {}", e.what());
    return 1;
  }
}
