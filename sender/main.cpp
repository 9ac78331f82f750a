// dd_file_send: sends files and folders across the diode (simulator mode: UDP).
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/device_transport.hpp"
#include "common/logging.hpp"
#include "common/signals.hpp"
#include "common/udp_transport.hpp"
#include "common/version.hpp"
#include "iotest/cli.hpp"
#include "sender/config.hpp"
#include "sender/file_list.hpp"
#include "sender/hot_folder.hpp"
#include "sender/pipeline.hpp"

int main(int argc, char** argv) {
  using namespace ddft;
  if (auto rc = iotest::run_if_requested(argc, argv, iotest::Kind::kRead)) return *rc;
  sender::SenderConfig cfg;
  CLI::App app{"dd_file_send: send files one way across a data diode"};
  app.set_version_flag("--version", std::string("dd_file_send ") + common::kVersion);
  sender::add_sender_options(app, cfg);
  iotest::add_switch_help(app, iotest::Kind::kRead);
  // owlDftsSend passes DFTS's single-dash spellings (-fsinterval 100, -NOSLEEPALG) as written.
  const std::vector<std::string> args = sender::translate_dfts_args(argc, argv);
  std::vector<const char*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
    sender::finalize_sender_config(cfg);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    common::setup_logging(cfg.log, "dd_file_send");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dd_file_send: cannot open log file: %s\n", e.what());
    return 2;
  }

  try {
    // --watch: the hot folder is checked (one line on a bad setting) before anything is sent.
    std::unique_ptr<sender::HotFolder> hot;
    sender::FileList list;
    if (!cfg.watch_dir.empty()) {
      hot = std::make_unique<sender::HotFolder>(sender::hot_folder_options(cfg),
                                                common::SteadyClock::instance());
    } else {
      list = sender::discover_files(cfg.sources, cfg.filter);
      if (!cfg.filter.empty()) {
        spdlog::info("Info: --include/--exclude left out {} file(s)", list.filtered.size());
      }
    }
    for (const auto& err : list.errors) spdlog::error("Error: {}", err);
    std::unique_ptr<common::DatagramSink> sink;
    if (cfg.transport_text == "device") {
      sink = std::make_unique<common::DeviceSink>(cfg.device);
    } else {
      auto udp = std::make_unique<common::UdpSink>(cfg.dest, cfg.socket_buffer_mb << 20);
      if (auto w = udp->buffer_report().warning("send"); !w.empty()) spdlog::warn("Warn: {}", w);
      sink = std::move(udp);
    }

    // Ctrl-C / SIGTERM: stop reading, abort the file in progress on the wire, close the session.
    std::stop_source stop;
    common::StopOnSignals on_signal(stop);

    sender::Sender s(cfg, *sink, common::SteadyClock::instance());
    if (hot) s.add_observer(hot.get());
    const sender::SendTotals t =
        hot ? s.run(*hot, stop.get_token()) : s.run(list.files, stop.get_token());

    const uint64_t failed = t.files_failed + list.errors.size();
    spdlog::info("Info: session {:016x} done: {} file(s) sent, {} failed, {} bytes, {} datagrams",
                 t.session_id, t.files_sent, failed, common::with_commas(t.bytes), t.datagrams);
    // A hot folder runs until stopped: SIGTERM is its clean end (what failed stays in DIR).
    if (hot) return hot->lost_root() ? 1 : 0;
    if (stop.stop_requested()) return 130;
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    spdlog::error("Error: {}", e.what());
    return 2;
  }
}
