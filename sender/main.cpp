// dd_file_send: sends files and folders across the diode (simulator mode: UDP).
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "common/cli_exit.hpp"
#include "common/device_transport.hpp"
#include "common/log_format.hpp"
#include "common/logging.hpp"
#include "common/metrics.hpp"
#include "common/signals.hpp"
#include "common/udp_transport.hpp"
#include "common/version.hpp"
#include "iotest/cli.hpp"
#include "sender/config.hpp"
#include "sender/operations/channel_tally.hpp"
#include "sender/operations/manifest.hpp"
#include "sender/operations/metrics.hpp"
#include "sender/operations/progress.hpp"
#include "sender/pipeline.hpp"
#include "sender/source/file_list.hpp"
#include "sender/source/history.hpp"
#include "sender/source/history_feed.hpp"
#include "sender/source/hot_folder.hpp"
#include "sender/source/resend_request.hpp"
#include "sender/source/resend_schedule.hpp"
#include "sender/transmit/status_report.hpp"

namespace {
using namespace ddft;

// Parses the command line into `cfg`. Returns the exit status when the program is to stop
// (--help, --version, a bad option: CLI11 has printed what to say).
std::optional<int> parse_args(CLI::App& app, sender::SenderConfig& cfg, int argc, char** argv) {
  // owlDftsSend passes DFTS's single-dash spellings (-fsinterval 100, -NOSLEEPALG) as written.
  const std::vector<std::string> args = sender::translate_dfts_args(argc, argv);
  std::vector<const char*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
    sender::finalize_sender_config(cfg);
  } catch (const CLI::ParseError& e) {
    return common::usage_exit(app, e);
  }
  return std::nullopt;
}

// The files of `sources` (the command line's, or a channel's) that are this host's (--shard),
// with the counts --shard and --include/--exclude left out logged, and the links followed or left
// out logged (those left out also in `manifest`, when there is one). A channel's (`channel` not
// empty) unreadable files and links are named CHANNEL/..., as the receiver would name them.
sender::FileList list_sources(const sender::SenderConfig& cfg,
                              const std::vector<std::string>& sources,
                              sender::ManifestWriter* manifest, const std::string& channel = "") {
  sender::FileList list = sender::discover_files(sources, cfg.filter, cfg.shard, cfg.symlinks);
  if (!channel.empty()) {
    for (auto& err : list.errors) err.rel_path = channel + '/' + err.rel_path;
    for (auto& l : list.skipped_links) l.rel_path = channel + '/' + l.rel_path;
  }
  if (cfg.shard.enabled()) {
    spdlog::info("Info: --shard {}: {} file(s) left to the other shards", cfg.shard.to_string(),
                 list.other_shards);
  }
  if (!cfg.filter.empty()) {
    spdlog::info("Info: --include/--exclude left out {} file(s)", list.filtered.size());
  }
  for (const std::string& line : list.followed_links) spdlog::info("Info: {}", line);
  for (const sender::SkippedLink& l : list.skipped_links) {
    spdlog::warn("Warn: {}", l.message);
    if (manifest != nullptr) manifest->link_left_out(l.rel_path, l.message, false);
  }
  return list;
}

// The hot folder of --watch, checked (one line on a bad setting) before anything is sent. Each
// link it leaves out gets its line in `manifest` (may be null); one under --symlinks error counts
// as a failed file in `status`. Both must outlive the hot folder.
std::unique_ptr<sender::HotFolder> open_hot_folder(const sender::SenderConfig& cfg,
                                                   sender::ManifestWriter* manifest,
                                                   sender::SendStatus& status,
                                                   sender::ResendSchedule* resends,
                                                   const std::string& channel = "") {
  sender::HotFolderOptions o = sender::hot_folder_options(cfg);
  o.resends = resends;
  const std::string prefix = channel.empty() ? "" : channel + '/';
  o.on_link = [manifest, &status, prefix](const std::string& rel, const std::string& message,
                                          bool failed) {
    if (manifest != nullptr) manifest->link_left_out(prefix + rel, message, failed);
    if (failed) status.files_failed.fetch_add(1, std::memory_order_relaxed);
  };
  return std::make_unique<sender::HotFolder>(std::move(o), common::SteadyClock::instance());
}

// Lane `lane`'s link: the card driver's node (--transport device) or a UDP socket, whose buffer
// shortfall is logged. Throws what opening it throws.
std::unique_ptr<common::DatagramSink> open_sink(const sender::SenderConfig& cfg, size_t lane) {
  if (cfg.transport == common::TransportKind::kDevice) {
    return std::make_unique<common::DeviceSink>(cfg.devices.at(lane));
  }
  auto udp =
      std::make_unique<common::UdpSink>(cfg.dests.at(lane), cfg.socket_buffer_mb << 20, cfg.gso);
  if (auto w = udp->buffer_report().warning("send"); !w.empty()) {
    // Every lane asks for the same buffer: once is enough.
    if (lane == 0) spdlog::warn("Warn: {}", w);
  }
  if (lane == 0 && cfg.gso && !udp->gso()) {
    spdlog::info("Info: this kernel has no UDP segmentation offload: sending datagram by datagram");
  }
  return udp;
}

// Every lane's link, lane 0 first.
std::vector<std::unique_ptr<common::DatagramSink>> open_sinks(const sender::SenderConfig& cfg) {
  std::vector<std::unique_ptr<common::DatagramSink>> sinks;
  for (size_t i = 0; i < cfg.lanes(); ++i) sinks.push_back(open_sink(cfg, i));
  return sinks;
}

// The progress display when --progress asks for one (else null): of the hot folders' queues
// (`hot`, each must outlive it) or of the batch `lists`.
std::unique_ptr<sender::ProgressDisplay> make_progress(
    const sender::SenderConfig& cfg, const std::vector<const sender::FileSource*>& hot,
    const std::vector<const sender::FileList*>& lists) {
  if (!sender::progress_wanted(cfg.progress, cfg.log.quiet, sender::stdout_is_terminal())) {
    return nullptr;
  }
  sender::ProgressOptions po;
  po.copies = cfg.repeat;
  if (!hot.empty()) {
    po.sources = hot;  // open-ended: their queues instead of a batch total
  } else {
    po.planned.emplace();
    for (const sender::FileList* list : lists) {
      for (const auto& f : list->files) po.planned->push_back(f.size);
    }
  }
  return std::make_unique<sender::ProgressDisplay>(common::stdout_console(),
                                                   common::SteadyClock::instance(), std::move(po));
}

// The sender's state (--state-dir): its history and what records each file sent there.
struct SenderState {
  std::unique_ptr<sender::History> history;
  std::unique_ptr<sender::HistoryRecorder> recorder;
  std::unique_ptr<sender::HistoryFeed> feed;  // the history on the wire (--history-repeat)
};

// The history's budget on the wire, payload bytes a second on each lane: 1/32 of --rate, or
// 8 MiB/s unpaced.
uint64_t history_budget(const sender::SenderConfig& cfg) {
  return cfg.rate_mb > 0 ? static_cast<uint64_t>(cfg.rate_mb * 1024 * 1024 / 32)
                         : uint64_t{8} << 20;
}

// With --state-dir: sets cfg.sender_id to the one kept there (or --sender-id, kept there from
// now on) and opens the history. Nothing without it. Throws std::runtime_error with one line.
SenderState open_state(sender::SenderConfig& cfg) {
  if (cfg.state_dir.empty()) return {};
  cfg.sender_id = sender::sender_id_in(
      cfg.state_dir, cfg.sender_id != 0 ? std::optional(cfg.sender_id) : std::nullopt);
  sender::HistoryLimits limits;
  limits.keep_for = std::chrono::seconds(static_cast<int64_t>(cfg.history_hours * 3600));
  limits.max_bytes = uint64_t{cfg.history_mb} << 20;
  SenderState st;
  st.history = std::make_unique<sender::History>(cfg.state_dir, limits);
  st.recorder = std::make_unique<sender::HistoryRecorder>(*st.history, cfg.sender_id, cfg.verify);
  if (!cfg.history_repeats.empty()) {
    st.feed = std::make_unique<sender::HistoryFeed>(
        cfg.sender_id, cfg.history_repeats, sender::source_datagram_size(cfg) - common::kHeaderSize,
        history_budget(cfg), limits.max_bytes);
    st.feed->add_earlier(st.history->entries(), st.history->sent_up_to());
    st.recorder->set_feed(st.feed.get());
  }
  spdlog::info("Info: sender {:016x}; its history '{}' holds {} file(s) of the last {} h",
               cfg.sender_id, st.history->path(), st.history->entries().size(), cfg.history_hours);
  return st;
}

// The observers that keep a durable record of each file (either may be null); with a hot
// folder each line is synced before the file is deleted or moved.
void add_records(sender::Sender& s, sender::ManifestWriter* manifest,
                 sender::HistoryRecorder* recorder, bool hot) {
  if (manifest != nullptr) {
    manifest->sync_each_line(hot);
    s.add_observer(manifest);
  }
  if (recorder != nullptr) {
    recorder->sync_each_line(hot);
    s.add_observer(recorder);
  }
}

// --resend-request: `list` becomes the files the request names, found in the retention folder
// or among the sources listed; each that cannot be sent is one error line and a failed file.
void resend_from_request(const sender::SenderConfig& cfg, sender::FileList& list) {
  const std::vector<sender::ResendRequest> requests =
      sender::read_resend_requests(cfg.resend_request);
  const size_t before = list.errors.size();
  list.files = sender::resend_sources(
      requests, list.files, cfg.state_dir.empty() ? std::string() : cfg.state_dir + "/retention",
      cfg.sender_id, &list.errors);
  spdlog::info("Info: the resend request '{}' names {} file(s): {} to send again, {} refused",
               cfg.resend_request, requests.size(), list.files.size(), list.errors.size() - before);
}

std::unique_ptr<sender::ResendSchedule> open_resends(const sender::SenderConfig& cfg) {
  if (cfg.resend_after.empty()) return nullptr;
  return std::make_unique<sender::ResendSchedule>(cfg.resend_after, cfg.verify,
                                                  common::SteadyClock::instance());
}

// The session: the hot folder's, or the list's (then, with --resend-after, its resends as they
// come due).
sender::SendTotals run_session(sender::Sender& s, sender::HotFolder* hot,
                               const sender::FileList& list, sender::ResendSchedule* resends,
                               std::stop_token stop) {
  if (hot != nullptr) return s.run(*hot, stop);
  if (resends == nullptr) return s.run(list.files, stop);
  sender::ListSource listed(list.files);
  sender::ResendingSource resending(listed, *resends);
  return s.run(resending, stop);
}

// The session's last line: what it sent, and what of the wire the history's repeats took.
void log_done(const sender::SendTotals& t, uint64_t failed, uint64_t links) {
  spdlog::info("Info: session {:016x} done: {} file(s) sent, {} failed, {} bytes, {} datagrams{}{}",
               t.session_id, t.files_sent, failed, common::with_commas(t.bytes), t.datagrams,
               t.history_bytes == 0 ? std::string()
                                    : fmt::format(" ({} bytes of them the history's repeats)",
                                                  common::with_commas(t.history_bytes)),
               links == 0 ? std::string() : fmt::format(", {} symbolic link(s) skipped", links));
}

// Sources that never reached the pipeline are in the manifest too, so that a reconciliation
// lists them ("not sent"); the session is the one just run.
void add_unread_sources(sender::ManifestWriter& manifest, const sender::FileList& list) {
  for (const auto& err : list.errors) {
    sender::FileMeta meta;
    meta.rel_path = err.rel_path;
    manifest.file_failed(meta, err.message);
  }
  manifest.sync();
}

// The sources of a session of channels (--channel): each channel's hot folder or list of files,
// and what the session and the program need of them.
struct Channels {
  std::vector<std::unique_ptr<sender::HotFolder>> hot;  // per channel; null for a list
  std::deque<sender::FileList> lists;  // per channel (empty for a hot folder); listed refers to it
  std::vector<std::unique_ptr<sender::ListSource>> listed;
  // Each hot folder hears of its own channel's files only.
  std::vector<std::unique_ptr<sender::ChannelObserver>> filters;
  std::vector<sender::SessionChannel> session;

  std::vector<const sender::FileSource*> hot_sources() const {
    std::vector<const sender::FileSource*> out;
    for (const auto& h : hot) {
      if (h) out.push_back(h.get());
    }
    return out;
  }
  std::vector<const sender::FileList*> all_lists() const {
    std::vector<const sender::FileList*> out;
    for (const auto& l : lists) out.push_back(&l);
    return out;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& c : session) out.push_back(c.name);
    return out;
  }
};

// Opens every channel's source, checked (one line on a bad setting) before anything is sent: a
// hot folder (its sent files moved to --sent-dir/NAME/), or its files listed. Each channel's
// unreadable files are in `errors`.
Channels open_channels(const sender::SenderConfig& cfg, sender::ManifestWriter* manifest,
                       sender::SendStatus& status, std::vector<sender::SourceError>* errors) {
  Channels ch;
  for (const sender::ChannelSpec& spec : cfg.channels) {
    sender::SessionChannel sc{spec.name, spec.policy, nullptr, ""};
    ch.lists.emplace_back();
    if (!spec.watch_dir.empty()) {
      sender::SenderConfig own = cfg;
      own.watch_dir = spec.watch_dir;
      if (!cfg.sent_dir.empty()) {
        // Each channel's sent files in a folder of its own, made when missing (--sent-dir
        // itself must exist: the hot folder checks it).
        own.sent_dir = cfg.sent_dir + "/" + spec.name;
        if (::mkdir(own.sent_dir.c_str(), 0755) != 0 && errno != EEXIST && errno != ENOENT) {
          throw std::runtime_error(
              fmt::format("--sent-dir: cannot make '{}': {}", own.sent_dir, std::strerror(errno)));
        }
      }
      ch.hot.push_back(open_hot_folder(own, manifest, status, nullptr, spec.name));
      ch.filters.push_back(std::make_unique<sender::ChannelObserver>(spec.name, *ch.hot.back()));
      sc.files = ch.hot.back().get();
    } else {
      ch.hot.emplace_back();
      ch.lists.back() = list_sources(cfg, spec.sources, manifest, spec.name);
      errors->insert(errors->end(), ch.lists.back().errors.begin(), ch.lists.back().errors.end());
      ch.listed.push_back(std::make_unique<sender::ListSource>(ch.lists.back().files));
      sc.files = ch.listed.back().get();
    }
    sc.description = fmt::format(
        "{}, class {}, weight {}{}{}", sc.files->describe(), spec.policy.priority,
        spec.policy.weight,
        spec.policy.rate_cap > 0
            ? fmt::format(", rate {:.4g} MB/s", spec.policy.rate_cap / (1024.0 * 1024.0))
            : std::string(),
        spec.policy.min_share > 0 ? fmt::format(", min-share {:.4g}%", spec.policy.min_share * 100)
                                  : std::string());
    ch.session.push_back(std::move(sc));
  }
  return ch;
}

// Files the listing left out: by the filters, or links not followed.
uint64_t refused_by_listing(const sender::FileList& list, const Channels& channels) {
  uint64_t n = list.filtered.size() + list.skipped_links.size();
  for (const auto& l : channels.lists) n += l.filtered.size() + l.skipped_links.size();
  return n;
}

// The files the listing could not read: each one's line, counted as failed and unreadable.
void log_unread(const sender::FileList& list, sender::SendStatus& status) {
  for (const auto& err : list.errors) spdlog::error("Error: {}", err.message);
  status.files_failed.fetch_add(list.errors.size(), std::memory_order_relaxed);
  status.read_failures.fetch_add(list.errors.size(), std::memory_order_relaxed);
}

// The sender's status, carried to the receivers with the kSenderInfo of `s`'s lanes: of the hot
// folders, and of what the listing left out (counted in `status` here). It must outlive the run.
std::unique_ptr<sender::StatusReport> attach_status_report(
    sender::Sender& s, const sender::SenderConfig& cfg, sender::SendStatus& status,
    const sender::HotFolder* hot, const Channels& channels, const sender::FileList& list) {
  std::vector<const sender::HotFolder*> folders;
  if (hot) folders.push_back(hot);
  for (const auto& h : channels.hot) {
    if (h) folders.push_back(h.get());
  }
  status.files_refused.fetch_add(refused_by_listing(list, channels), std::memory_order_relaxed);
  auto report = std::make_unique<sender::StatusReport>(cfg, status, std::move(folders));
  s.set_status_report(report.get());
  return report;
}

// --channel: what each channel sends, added to `reg` (null without channels).
std::unique_ptr<sender::ChannelTally> make_tally(const sender::SenderConfig& cfg,
                                                 common::MetricsRegistry& reg) {
  if (cfg.channels.empty()) return nullptr;
  std::vector<std::string> names;
  for (const auto& c : cfg.channels) names.push_back(c.name);
  auto tally = std::make_unique<sender::ChannelTally>(std::move(names));
  tally->add_metrics(reg);
  return tally;
}

// The session's sources: the channels', the hot folder (--watch), or the files listed (with
// --resend-request, those it names). Sources that cannot be read are in list->errors, and each
// channel's count in `tally` (null without channels).
void open_sources(const sender::SenderConfig& cfg, sender::ManifestWriter* manifest,
                  sender::SendStatus& status, sender::ResendSchedule* resends,
                  sender::ChannelTally* tally, std::unique_ptr<sender::HotFolder>* hot,
                  sender::FileList* list, Channels* channels) {
  if (!cfg.channels.empty()) {
    *channels = open_channels(cfg, manifest, status, &list->errors);
    for (size_t c = 0; tally != nullptr && c < channels->lists.size(); ++c) {
      tally->unread(cfg.channels[c].name, channels->lists[c].errors.size());
    }
  } else if (!cfg.watch_dir.empty()) {
    *hot = open_hot_folder(cfg, manifest, status, resends);
  } else {
    if (!cfg.sources.empty()) *list = list_sources(cfg, cfg.sources, manifest);
    if (!cfg.resend_request.empty()) resend_from_request(cfg, *list);
  }
}

// The session's last lines and the program's exit status: what the session sent and failed
// (`hot`, `tally` and `manifest` may be null), the files never read, the links left out.
int finish(const sender::SenderConfig& cfg, const sender::SendTotals& t,
           const sender::HotFolder* hot, const Channels& channels, const sender::FileList& list,
           sender::ManifestWriter* manifest, const sender::ChannelTally* tally, bool stopped) {
  if (manifest && !list.errors.empty()) add_unread_sources(*manifest, list);
  std::vector<const sender::HotFolder*> folders;
  if (hot) folders.push_back(hot);
  for (const auto& h : channels.hot) {
    if (h) folders.push_back(h.get());
  }
  uint64_t links_failed = 0;
  uint64_t links = folders.empty() ? list.skipped_links.size() : 0;
  bool lost_root = false;
  for (const sender::HotFolder* h : folders) {
    links_failed += h->links_failed();
    links += h->links_skipped();
    lost_root = lost_root || h->lost_root();
  }
  for (const auto& l : channels.lists) links += l.skipped_links.size();
  const uint64_t failed = t.files_failed + list.errors.size() + links_failed;
  if (tally) tally->log_summary();
  log_done(t, failed, links);
  // A hot folder runs until stopped: SIGTERM is its clean end (what failed stays in DIR).
  if (cfg.hot_folder()) return lost_root ? 1 : 0;
  if (stopped) return 130;
  // A manifest line that could not be written was logged instead; the run still says so.
  return failed == 0 && (!manifest || manifest->errors() == 0) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddft;
  if (auto rc = iotest::run_if_requested(argc, argv, iotest::Kind::kRead)) return *rc;
  sender::SenderConfig cfg;
  CLI::App app{"dd_file_send: send files one way across a data diode"};
  app.set_version_flag("--version", std::string("dd_file_send ") + common::kVersion);
  sender::add_sender_options(app, cfg);
  iotest::add_switch_help(app, iotest::Kind::kRead);
  if (auto rc = parse_args(app, cfg, argc, argv)) return *rc;
  // A link that goes away (a device node whose reader closed: EPIPE) is an error code for the
  // lane to handle (--lane-down), not a signal that kills every lane.
  std::signal(SIGPIPE, SIG_IGN);

  try {
    common::setup_logging(cfg.log, "dd_file_send");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dd_file_send: cannot open log file: %s\n", e.what());
    return 2;
  }

  try {
    // --metrics is bound first: a taken port stops the program before it reads or sends anything.
    const std::unique_ptr<common::MetricsServer> metrics = common::open_metrics_server(cfg.metrics);
    sender::SendStatus status;
    common::MetricsRegistry registry;
    sender::add_sender_metrics(registry, status, cfg, common::SteadyClock::instance());
    // --channel: what each channel sent, in the summary and the metrics.
    const std::unique_ptr<sender::ChannelTally> tally = make_tally(cfg, registry);
    const common::MetricsServing serving(metrics.get(), registry);  // stops before status goes
    // Opened before anything is sent: a manifest that cannot be written stops the program here.
    const std::unique_ptr<sender::ManifestWriter> manifest =
        cfg.manifest.empty() ? nullptr
                             : std::make_unique<sender::ManifestWriter>(
                                   cfg.manifest, cfg.verify, common::SteadyClock::instance());
    // The sender's id and history (--state-dir), read before anything is sent.
    const SenderState state = open_state(cfg);
    std::unique_ptr<sender::HotFolder> hot;
    sender::FileList list;
    Channels channels;
    // --resend-after: what was sent goes again, from the hot folder's next() or after the list.
    const std::unique_ptr<sender::ResendSchedule> resends = open_resends(cfg);
    open_sources(cfg, manifest.get(), status, resends.get(), tally.get(), &hot, &list, &channels);
    log_unread(list, status);
    const std::vector<std::unique_ptr<common::DatagramSink>> sinks = open_sinks(cfg);
    std::vector<common::DatagramSink*> lanes;
    for (const auto& sink : sinks) lanes.push_back(sink.get());

    // Ctrl-C / SIGTERM: stop reading, abort the file in progress on the wire, close the session.
    std::stop_source stop;
    common::StopOnSignals on_signal(stop);

    sender::Sender s(cfg, lanes, common::SteadyClock::instance());
    s.set_status(&status);
    s.set_history(state.feed.get());
    const auto report = attach_status_report(s, cfg, status, hot.get(), channels, list);
    // The manifest and the history hear of a file (and sync its line) before the hot folder
    // deletes or moves it.
    add_records(s, manifest.get(), state.recorder.get(), cfg.hot_folder());
    if (resends) s.add_observer(resends.get());
    if (hot) s.add_observer(hot.get());
    for (const auto& f : channels.filters) s.add_observer(f.get());
    if (tally) s.add_observer(tally.get());
    const std::unique_ptr<sender::ProgressDisplay> progress =
        tally ? make_progress(cfg, channels.hot_sources(), channels.all_lists())
              : make_progress(cfg,
                              hot ? std::vector<const sender::FileSource*>{hot.get()}
                                  : std::vector<const sender::FileSource*>{},
                              {&list});
    if (progress) s.add_observer(progress.get());
    const sender::SendTotals t =
        tally ? s.run(channels.session, stop.get_token())
              : run_session(s, hot.get(), list, resends.get(), stop.get_token());

    return finish(cfg, t, hot.get(), channels, list, manifest.get(), tally.get(),
                  stop.stop_requested());
  } catch (const std::exception& e) {
    spdlog::error("Error: {}", e.what());
    return 2;
  }
}
