#include "sender/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "common/cli_options.hpp"
#include "common/logging.hpp"
#include "common/metrics.hpp"
#include "common/parse_number.hpp"
#include "sender/source/history.hpp"

namespace ddft::sender {

namespace {

using common::add_bounded_option;
using common::add_choice_option;
using common::ChoiceCase;

// The config file, what to send, where to and how: transport, packet size, rate, verification.
void add_link_options(CLI::App& app, SenderConfig& cfg) {
  common::add_config_file_option(app);
  app.add_option("sources", cfg.sources,
                 "Files and folders to send; a folder is sent recursively under its own name, "
                 "'folder/' sends only its contents; synthetic:SIZE sends generated data (e.g. "
                 "synthetic:2G) without reading a disk");
  common::add_transport_option(app, cfg.transport);
  // Repeatable, one value each: a source after --dest is a source, not a second destination.
  common::add_endpoints_option(app, "--dest,-d", cfg.dests,
                               "Receiver address HOST:PORT (--transport udp); give it once per "
                               "lane to drive several links as one session",
                               common::PortZero::kRefused, cfg.transport);
  common::add_devices_option(
      app, cfg.devices,
      "Card driver device node to write packets to (--transport device); once per lane");
  app.add_option("--lanes", cfg.lanes_opt,
                 "Drive N links as one session: the one --dest HOST:PORT and the ports after it, "
                 "PORT..PORT+N-1 (--rate applies to each lane)")
      ->check(CLI::Range(size_t{1}, common::kMaxLanes));
  add_bounded_option(
      app, "--stripe-mb", cfg.stripe_mb, 0, size_t{1} << 20,
      "With 2 lanes or more: a file larger than this many MiB is striped over the lanes in 4 MiB "
      "ranges, each down the least busy lane; smaller files go whole down one lane; 0 = never "
      "stripe (not given: 64 when every lane goes to one host, else 0)")
      ->each([&cfg](const std::string&) { cfg.stripe_given = true; });
  add_choice_option<LaneDownPolicy>(
      app, "--lane-down", cfg.lane_down,
      {{"stop", LaneDownPolicy::kStop}, {"continue", LaneDownPolicy::kContinue}},
      "When a lane's link reports a send error: stop ends the session; continue takes the lane out "
      "of rotation, fails the files it was carrying and goes on over the other lanes (with one "
      "lane, continue is stop)");
  add_bounded_option(app, "--packet-size", cfg.packet_size, common::kMinPacketSize,
                     common::kMaxDatagramSize,
                     "Datagram size in bytes, header included (default fits a 9000-byte MTU)");
  app.add_option(
         "--rate", cfg.rate_mb,
         "Rate limit in MB/s on the wire (1 MB = 1,048,576 bytes); 0 = unlimited, which loses "
         "packets whenever the receiver cannot keep up")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_choice_option<common::VerifyType>(app, "--verify", cfg.verify,
                                        {{"b2b", common::VerifyType::kB2B},
                                         {"sha256", common::VerifyType::kSha256},
                                         {"none", common::VerifyType::kNone}},
                                        "File verification: b2b (XXH3-128), sha256, none",
                                        ChoiceCase::kAnyCase);
  add_bounded_option(app, "--control-repeat", cfg.control_repeat, 1, 100,
                     "Copies sent of each announce, end, abort and file-list packet");
}

// --compress off, zstd[:LEVEL] or auto[:LEVEL] into cfg.compress and cfg.compress_level.
void take_compress(const std::string& text, SenderConfig& cfg) {
  const auto colon = text.find(':');
  const std::string mode = text.substr(0, colon);
  const char* expected = "expected off, auto[:LEVEL] or zstd[:LEVEL], LEVEL 1 to 19";
  if (mode == "off" && colon == std::string::npos) {
    cfg.compress = CompressMode::kOff;
    return;
  }
  if (mode != "zstd" && mode != "auto") throw CLI::ValidationError("--compress", expected);
  int level = cfg.compress_level;
  if (colon != std::string::npos &&
      (!common::parse_whole_number(std::string_view(text).substr(colon + 1), &level) || level < 1 ||
       level > 19)) {
    throw CLI::ValidationError("--compress", expected);
  }
  cfg.compress = mode == "zstd" ? CompressMode::kZstd : CompressMode::kAuto;
  cfg.compress_level = level;
}

// Loss protection (FEC, repeats) and security (the key).
void add_protection_options(CLI::App& app, SenderConfig& cfg) {
  auto* loss = "Loss protection (no packet can be asked for again)";
  app.add_option_function<std::string>(
         "--fec",
         [&cfg](const std::string& text) {
           std::string error;
           if (!common::parse_fec(text, &cfg.fec, &error)) {
             throw CLI::ValidationError("--fec", error);
           }
         },
         "Forward error correction K:M: M Reed-Solomon parity packets after every K packets, any "
         "M lost of the K + M are rebuilt (e.g. 32:4); off")
      ->group(loss)
      ->default_str("off");
  add_bounded_option(app, "--fec-interleave", cfg.fec.interleave, 1, 255,
                     "Spread consecutive packets over this many FEC groups: a burst of up to "
                     "interleave x M lost packets is rebuilt")
      ->group(loss);
  add_bounded_option(app, "--repeat", cfg.repeat, 1, 255,
                     "Send each file this many times; the receiver fills the holes of one copy "
                     "from the next and delivers the file once")
      ->group(loss);
  app.add_option_function<std::string>(
         "--compress", [&cfg](const std::string& text) { take_compress(text, cfg); },
         "Compress blocks with zstd before they cross: zstd[:LEVEL] tries every block, "
         "auto[:LEVEL] first a sample of each; a block that does not shrink by 1/32 goes as it is "
         "(LEVEL 1-19, default 1); off. Needs a dd_file_receive of ddft 0.2 or later")
      ->group(loss)
      ->default_str("off");
  add_bounded_option(app, "--compress-workers", cfg.compress_workers, 0, 64,
                     "Threads compressing blocks (dd-zstdN); 0: one per core, at most 8")
      ->group(loss);
  const std::string security = "Security";
  app.add_option("--key-file", cfg.key_file,
                 "Pre-shared key (32 random bytes or 64 hex digits, mode 0600): seal every "
                 "datagram with AES-256-GCM under a key of this session's own")
      ->group(security);
  app.add_flag("--auth-only", cfg.auth_only,
               "With --key-file: authenticate every datagram but send its contents in the clear "
               "(for sites that must inspect the traffic)")
      ->group(security);
}

// The reader and the transmitter: blocks, threads, socket, batch and heartbeats.
void add_read_options(CLI::App& app, SenderConfig& cfg) {
  add_bounded_option(app, "--read-block-kb", cfg.read_block_kb, 4, 65536,
                     "Reader block size in KiB");
  add_bounded_option(app, "--read-buffers", cfg.read_buffers, 2, 1024,
                     "Reader blocks in the pool shared with the transmitter (read ahead + queued)");
  add_bounded_option(app, "--readers", cfg.readers, 1, 64,
                     "Threads reading files, each with its own queue; 1 reads from the reader "
                     "thread itself (dd_iotest --test read finds the best value)");
  add_bounded_option(app, "--read-queue-depth", cfg.read_queue_depth, 1, 1024,
                     "Reads in flight per reader (io_uring queue depth)");
  add_bounded_option(app, "--socket-buffer-mb", cfg.socket_buffer_mb, 0, 1024,
                     "Socket send buffer to ask for, MiB");
  add_bounded_option(app, "--batch", cfg.batch, 1, 1024, "Datagrams per sendmmsg call");
  common::add_offload_option(
      app, "--gso", cfg.gso,
      "UDP segmentation offload: auto sends each run of equal datagrams as one segmented send when "
      "the kernel takes it (still one datagram each on the wire); off sends them one by one");
  add_bounded_option(app, "--heartbeat-ms", cfg.heartbeat_ms, 10, 3600000,
                     "Heartbeat interval when idle, between files and during the DFTS sleeps, ms; "
                     "the receiver warns after 3 silent intervals");
  app.add_option("--buff-full-delay", cfg.buff_full_delay_ms,
                 "ms to wait when the link buffer is full before retrying (BUFF_FULL_DELAY); at "
                 "most --heartbeat-ms")
      ->capture_default_str();
}

// The DFTS pacing options (seed 004), kept for the sites that use them.
void add_dfts_options(CLI::App& app, SenderConfig& cfg) {
  auto* dfts = "DFTS pacing (seed 004; the product's recommended way is --rate)";
  app.add_option("--intra-pkt-interval", cfg.intra_pkt_interval,
                 "Packets between two sleeps of --intra-pkt-delay ms (INTRA_PKT_INTERVAL); 0 = off")
      ->group(dfts)
      ->capture_default_str();
  app.add_option("--intra-pkt-delay", cfg.intra_pkt_delay_ms,
                 "ms to sleep after every --intra-pkt-interval packets (INTRA_PKT_DELAY)")
      ->group(dfts)
      ->capture_default_str();
  app.add_option("--fsinterval", cfg.fs_interval_mb,
                 "MB sent before a forced sleep of --fsdelay ms (-fsinterval); 0 = off")
      ->group(dfts)
      ->capture_default_str();
  app.add_option("--fsdelay", cfg.fs_delay_ms,
                 "ms of forced sleep every --fsinterval MB (-fsdelay)")
      ->group(dfts)
      ->capture_default_str();
  app.add_flag("--sleep-alg,!--no-sleep-alg", cfg.sleep_alg,
               "Pause 3-20 s before the data of files of 100 MB and more (DFTS sleep algorithm; "
               "-NOSLEEPALG = --no-sleep-alg)")
      ->group(dfts);
  app.add_option("--eof-delay", cfg.eof_delay_ms, "ms to wait after each file (EOF_DELAY)")
      ->group(dfts)
      ->capture_default_str();
  add_choice_option<bool>(app, "--file-lock", cfg.file_lock, {{"Y", true}, {"N", false}},
                          "Y: take a shared lock on each file while it is read, waiting for a "
                          "writer's lock up to --lock-timeout s (FILE_LOCK)",
                          ChoiceCase::kAnyCase)
      ->group(dfts);
  add_bounded_option(app, "--lock-timeout", cfg.lock_timeout_s, 0.0, 86400.0,
                     "Seconds FILE_LOCK=Y waits for a lock")
      ->group(dfts);
  add_choice_option<ReportOption>(
      app, "--report", cfg.report,
      {{"S", ReportOption::kSummary}, {"V", ReportOption::kVerbose}, {"N", ReportOption::kNone}},
      "REPORT_OPTION: S a summary line per file, V also a progress line every --report-mb MB, N "
      "errors and the session summary only",
      ChoiceCase::kAnyCase)
      ->group(dfts);
  add_bounded_option(app, "--report-mb", cfg.report_mb, 1, size_t{1} << 30,
                     "Progress line interval for --report V, MB")
      ->group(dfts);
}

// The sender's state on its host: its id and its history (sender/source/history.hpp).
void add_state_options(CLI::App& app, SenderConfig& cfg) {
  app.add_option("--state-dir", cfg.state_dir,
                 "The sender's state folder (made when missing): its id (sender-id), sent with "
                 "every session, and its history of every file it sent (history), shared by "
                 "every run on this host; without it the sender has no id and keeps no history");
  app.add_option("--sender-id", cfg.sender_id,
                 "This sender's id, 1 to 16 hex digits, not 0 (kept in --state-dir, replacing "
                 "the one there; default: the one kept there, made at random the first time)")
      ->transform(
          [](std::string text) {
            uint64_t id = 0;
            if (!parse_sender_id(text, &id)) {
              throw CLI::ValidationError("'" + text + "' is not 1 to 16 hex digits, not all zero");
            }
            return std::to_string(id);
          },
          "HEX");
  add_bounded_option(
      app, "--history-hours", cfg.history_hours, 0.01, 24.0 * 366,
      "How long the history keeps a file sent (at least its last repeat on the wire)");
  add_bounded_option(
      app, "--history-mb", cfg.history_mb, 1, size_t{1} << 20,
      "The history's size bound, MiB: past it the oldest entries go, with a warning");
  app.add_option_function<std::string>(
         "--history-repeat",
         [&cfg](const std::string& text) {
           if (text == "none") {
             cfg.history_repeats.clear();
           } else if (!common::parse_delay_list(text, &cfg.history_repeats)) {
             throw CLI::ValidationError("--history-repeat",
                                        "'" + text +
                                            "' is not 'none' or delays like 1m,10m,1h,6h,24h "
                                            "(s, m, h or d; each longer than the one before)");
           }
         },
         "When each file of the history (--state-dir) goes on the wire again after it was "
         "sent, so that a receiver that was down names what it missed; 'none': never")
      ->default_str("1m,10m,1h,6h,24h");
  app.add_option_function<std::string>(
      "--resend-after",
      [&cfg](const std::string& text) {
        if (!common::parse_delay_list(text, &cfg.resend_after)) {
          throw CLI::ValidationError("--resend-after",
                                     "'" + text +
                                         "' is not delays like 30s or 1m,1h (s, m, h or d; each "
                                         "longer than the one before)");
        }
      },
      "Send each file again after each of these delays, with no one asking (from its source, or "
      "a hot folder's --sent-dir, while unchanged): a receiver that has it skips the copy, one "
      "that failed or missed it delivers it. A one-shot send waits for the last. Default: off");
  app.add_option("--resend-request", cfg.resend_request,
                 "Send again exactly the files this request names (JSON lines, written on the "
                 "receiving side by dd_resend_request), each from the retention folder of "
                 "--state-dir or the files and folders given, refusing each one whose bytes "
                 "changed since it was sent");
}

// The hot folder's options (--watch), and the globs and --shard of both modes.
void add_hot_folder_options(CLI::App& app, SenderConfig& cfg) {
  const std::string hot = "Hot folder (one long session; SIGTERM ends it)";
  app.add_option("--watch", cfg.watch_dir,
                 "Send every file that lands in this folder or a subfolder (under "
                 "its path there) once it is complete, then delete it (or move it "
                 "to --sent-dir); instead of files and folders to send")
      ->group(hot);
  add_channel_option(app, cfg, hot);
  auto* sent =
      app.add_option("--sent-dir", cfg.sent_dir,
                     "Move sent files here, keeping their folders (a name taken gets a number: "
                     "a.1.txt); on the same filesystem, outside --watch. Default: delete them. "
                     "Needs --watch, "
                     "or --channel NAME:watch=DIR (each channel's files then go to its own NAME/)")
          ->group(hot);
  add_bounded_option(app, "--sent-keep-hours", cfg.sent_keep_hours, 0.0, 24.0 * 3660,
                     "Make --sent-dir a retention folder: remove what was moved there longer ago "
                     "than this, oldest first (0: keep it all)")
      ->needs("--sent-dir")
      ->group(hot);
  add_bounded_option(app, "--sent-keep-gb", cfg.sent_keep_gb, 0.0, 1e6,
                     "And keep it within this many GiB, oldest first, but never a file the history "
                     "still repeats on the wire (0: no bound)")
      ->needs("--sent-dir")
      ->group(hot);
  auto* settle =
      add_bounded_option(app, "--settle", cfg.settle_s, 0.0, 86400.0,
                         "Seconds a file must stay unchanged, after its writer closed it or it was "
                         "moved in, before it is sent. Needs --watch or --channel NAME:watch=DIR")
          ->group(hot);
  auto* journal =
      app.add_option("--watch-journal", cfg.watch_journal,
                     "Where the hot folder records what it sent, so that a restart neither sends a "
                     "file twice nor forgets one (default DIR/.ddft-watch-journal). Needs --watch")
          ->group(hot);
  // Hot-folder settings need a hot folder: --watch, or channels with watch= (each channel's
  // files moved to --sent-dir/NAME/).
  app.final_callback([&cfg, watched = std::vector<CLI::Option*>{sent, settle, journal}] {
    if (cfg.hot_folder()) return;
    for (const CLI::Option* o : watched) {
      if (o->count() > 0) {
        throw CLI::RequiresError(o->get_name(), "--watch (or --channel NAME:watch=DIR)");
      }
    }
  });
  const std::string globs = "Filters (one-shot sends and the hot folder)";
  app.add_option("--include", cfg.includes,
                 "Send only files matching this glob (repeatable); without '/' it matches the base "
                 "name, with '/' the relative path ('*' crossing '/')")
      ->allow_extra_args(false)  // one pattern each: a source after it is not a pattern
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(globs);
  app.add_option("--exclude", cfg.excludes,
                 "Leave out files matching this glob (repeatable; wins over --include)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(globs);
  app.add_option_function<std::string>(
         "--shard",
         [&cfg](const std::string& text) {
           std::string error;
           if (!parse_shard(text, &cfg.shard, &error)) throw CLI::ValidationError("--shard", error);
         },
         "This host is one of N sharing one hot folder or list of sources (each with its own "
         "link and receiver): send only the files whose relative path hashes to K (XXH3-64 "
         "modulo N, K from 0) and leave the others alone")
      ->type_name("K/N")
      ->group(globs);
  add_choice_option(
      app, "--symlinks", cfg.symlinks,
      common::named_choices({SymlinkMode::kSkip, SymlinkMode::kFollow, SymlinkMode::kError},
                            symlink_mode_name),
      "Symbolic links inside the folders sent: skip (named once each and counted, in the summary "
      "and the manifest), follow (to files and folders, a folder reached twice walked once; not "
      "with --watch), or error (each one fails, as an unreadable file does). Links named on the "
      "command line are followed")
      ->group(globs);
  app.add_option("--test-crash-after-sent", cfg.test_crash_after_sent)->group("");
}

// Builds cfg.filter and checks that exactly one of sources (or --resend-request) and --watch is
// given, and what --watch refuses. Throws CLI::ValidationError / CLI::RequiredError with one line.
void finalize_hot_folder_config(SenderConfig& cfg) {
  cfg.filter = common::path_filter_option(cfg.includes, cfg.excludes);
  if (!cfg.channels.empty()) {
    finalize_channel_config(cfg);
    return;
  }
  if (cfg.watch_dir.empty()) {
    if (cfg.sources.empty() && cfg.resend_request.empty()) {
      throw CLI::RequiredError("files or folders to send (or --watch DIR, or --channel)");
    }
    return;
  }
  if (!cfg.resend_request.empty()) {
    throw CLI::ValidationError("--resend-request",
                               "sends the files a request names, once: not with --watch");
  }
  if (cfg.symlinks == SymlinkMode::kFollow) {
    throw CLI::ValidationError("--symlinks",
                               "follow cannot be used with --watch: the hot folder deletes or "
                               "moves what it sends, and a link's target is not its own to "
                               "remove (skip or error)");
  }
  if (!cfg.sources.empty()) {
    throw CLI::ValidationError("--watch", "sends what lands in " + cfg.watch_dir +
                                              ": give no files or folders with it (got '" +
                                              cfg.sources.front() + "')");
  }
}

// Metrics, the hot folder, logging, progress and the manifest, and the test hooks.
void add_output_options(CLI::App& app, SenderConfig& cfg) {
  common::add_metrics_option(app, cfg.metrics);
  add_hot_folder_options(app, cfg);
  common::add_log_options(app, cfg.log);
  add_choice_option<ProgressMode>(
      app, "--progress", cfg.progress,
      {{"auto", ProgressMode::kAuto}, {"on", ProgressMode::kOn}, {"off", ProgressMode::kOff}},
      "Live progress of the file and of the whole batch (bytes, rate, ETA): auto when stdout is a "
      "terminal and not --quiet, on, off");
  app.add_option("--manifest", cfg.manifest,
                 "Append one JSON line per file sent or failed to this file (time, session, file "
                 "id, path, size, verification key, status)");
  add_state_options(app, cfg);
  app.add_option("--test-drop-data", cfg.test_drop_data)->group("");
}

// Every lane's destination: the --dest given (several times), or with --lanes N the ports after
// the one --dest. Throws CLI::ValidationError / CLI::RequiredError with one line.
void finalize_dests(SenderConfig& cfg) {
  if (cfg.dests.empty()) throw CLI::RequiredError("--dest");
  if (cfg.lanes_opt > 0 && cfg.dests.size() > 1) {
    throw CLI::ValidationError(
        "--lanes",
        fmt::format("takes one --dest (the first of the lanes' ports), got {}", cfg.dests.size()));
  }
  for (size_t i = 1; i < cfg.dests.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (cfg.dests[i].host == cfg.dests[j].host && cfg.dests[i].port == cfg.dests[j].port) {
        throw CLI::ValidationError("--dest", cfg.dests[i].to_string() +
                                                 " given twice: each lane needs a destination "
                                                 "of its own");
      }
    }
  }
  if (cfg.lanes_opt > 1 && !common::add_consecutive_ports(&cfg.dests, cfg.lanes_opt)) {
    throw CLI::ValidationError("--lanes", fmt::format("{} lanes from port {} go past port 65535",
                                                      cfg.lanes_opt, cfg.dests.front().port));
  }
  if (cfg.dests.size() > common::kMaxLanes) {
    throw CLI::ValidationError("--dest", fmt::format("{} destinations: at most {} lanes",
                                                     cfg.dests.size(), common::kMaxLanes));
  }
  cfg.dest = cfg.dests.front();
}

// Every lane's device node from --device (several times).
void finalize_devices(SenderConfig& cfg) {
  common::require_devices(cfg.devices);
  if (cfg.lanes_opt > 0 && cfg.lanes_opt != cfg.devices.size()) {
    throw CLI::ValidationError(
        "--lanes", fmt::format("{} lanes with --transport device: give --device once per "
                               "lane instead (got {})",
                               cfg.lanes_opt, cfg.devices.size()));
  }
  for (size_t i = 0; i < cfg.devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (cfg.devices[i] == cfg.devices[j]) {
        throw CLI::ValidationError(
            "--device", cfg.devices[i] + " given twice: each lane needs a device of its own");
      }
    }
  }
  if (cfg.devices.size() > common::kMaxLanes) {
    throw CLI::ValidationError("--device", fmt::format("{} devices: at most {} lanes",
                                                       cfg.devices.size(), common::kMaxLanes));
  }
  cfg.device = cfg.devices.front();
}

void finalize_lanes(SenderConfig& cfg) {
  if (cfg.transport == common::TransportKind::kUdp) {
    finalize_dests(cfg);
  } else {
    finalize_devices(cfg);
  }
}

// What --compress asks of the other options: blocks a receiver takes, and compress workers.
void finalize_compress(SenderConfig& cfg) {
  if (cfg.compress == CompressMode::kOff) return;
  if (cfg.read_block_kb * 1024 > common::kMaxZBlockSize) {
    throw CLI::ValidationError(
        "--read-block-kb",
        fmt::format("at most {} with --compress (a compressed block is at most {} MiB)",
                    common::kMaxZBlockSize / 1024, common::kMaxZBlockSize >> 20));
  }
  if (cfg.compress_workers == 0) {
    cfg.compress_workers = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  }
}

// Lanes to different hosts may end on different receivers, and none of them could assemble a
// striped file: unless --stripe-mb is given (NICs of one receiver), files then go whole.
void default_striping(SenderConfig& cfg) {
  if (cfg.stripe_given || cfg.transport != common::TransportKind::kUdp || cfg.dests.size() < 2) {
    return;
  }
  for (const common::Endpoint& e : cfg.dests) {
    if (e.host == cfg.dests.front().host) continue;
    cfg.stripe_mb = 0;
    cfg.stripe_note =
        "Info: the lanes go to different hosts, which may be different receivers: every file "
        "goes whole down one lane (--stripe-mb 64 stripes large files when they are NICs of one "
        "receiver)";
    return;
  }
}

}  // namespace

size_t SenderConfig::lanes() const {
  const size_t n = transport == common::TransportKind::kDevice ? devices.size() : dests.size();
  return std::max<size_t>(1, n);
}

std::vector<uint8_t> SenderConfig::lane_hosts() const {
  std::vector<uint8_t> host(lanes());
  for (size_t k = 0; k < host.size(); ++k) {
    host[k] = static_cast<uint8_t>(k);
    if (transport == common::TransportKind::kDevice || k >= dests.size()) continue;
    for (size_t j = 0; j < k; ++j) {
      if (dests[j].host == dests[k].host) {
        host[k] = host[j];
        break;
      }
    }
  }
  return host;
}

std::string SenderConfig::lane_name(size_t i) const {
  if (transport == common::TransportKind::kDevice) {
    if (i < devices.size()) return "device " + devices[i];
    if (i == 0) return "device " + device;
  } else {
    if (i < dests.size()) return dests[i].to_string();
    if (i == 0) return dest.to_string();
  }
  return "lane " + std::to_string(i);  // a config with fewer lanes than the session (tests)
}

void add_sender_options(CLI::App& app, SenderConfig& cfg) {
  add_link_options(app, cfg);
  add_protection_options(app, cfg);
  add_read_options(app, cfg);
  add_dfts_options(app, cfg);
  add_output_options(app, cfg);
}

void finalize_sender_config(SenderConfig& cfg) {
  std::string error;
  finalize_lanes(cfg);
  default_striping(cfg);
  if (cfg.packet_size < common::kHeaderSize + common::kDataHeaderSize + 1) {
    throw CLI::ValidationError("--packet-size", "too small to carry data");
  }
  if (!common::check_fec_interleave(cfg.fec, &error)) {
    throw CLI::ValidationError("--fec-interleave", error);
  }
  if (cfg.auth_only && cfg.key_file.empty()) {
    throw CLI::ValidationError("--auth-only",
                               "needs --key-file (it says how to seal, not what with)");
  }
  finalize_compress(cfg);
  finalize_hot_folder_config(cfg);
  if (!cfg.state_dir.empty() && !cfg.history_repeats.empty() &&
      static_cast<double>(cfg.history_repeats.back().count()) > cfg.history_hours * 3600) {
    throw CLI::ValidationError("--history-repeat",
                               fmt::format("its last delay ({} s) is longer than --history-hours "
                                           "({}): the history would forget a file before it",
                                           cfg.history_repeats.back().count(), cfg.history_hours));
  }
  if (!cfg.key_file.empty()) cfg.key = common::load_key_option(cfg.key_file);
}

size_t source_datagram_size(const SenderConfig& cfg) {
  return cfg.packet_size - (cfg.fec.enabled() ? common::kFecOverhead : 0) -
         (cfg.key ? common::kSealOverhead : 0);
}

size_t data_chunk_size(const SenderConfig& cfg) {
  return source_datagram_size(cfg) - common::kHeaderSize - common::kDataHeaderSize;
}

std::vector<std::string> translate_dfts_args(int argc, const char* const* argv) {
  std::vector<std::string> out;
  bool literal = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i == 0 || literal) {
      out.push_back(a);
      continue;
    }
    if (a == "--") {
      literal = true;
      out.push_back(a);
    } else if (a == "-fsinterval" || a == "-fsinternal") {
      out.push_back("--fsinterval");
    } else if (a == "-fsdelay") {
      out.push_back("--fsdelay");
    } else if (a == "-NOSLEEPALG") {
      out.push_back("--no-sleep-alg");
    } else {
      out.push_back(a);
    }
  }
  return out;
}

}  // namespace ddft::sender
