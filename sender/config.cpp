#include "sender/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "common/logging.hpp"
#include "common/metrics.hpp"
#include "common/parse_number.hpp"
#include "sender/source/history.hpp"

namespace ddft::sender {

namespace {

// The config file, what to send, where to and how: transport, packet size, rate, verification.
void add_link_options(CLI::App& app, SenderConfig& cfg) {
  app.set_config("--config", "", "Read options from this file (TOML or INI, option = value)");
  // A misspelt setting must stop the program, not be silently ignored.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("sources", cfg.sources,
                 "Files and folders to send; a folder is sent recursively under its own name, "
                 "'folder/' sends only its contents; synthetic:SIZE sends generated data (e.g. "
                 "synthetic:2G) without reading a disk");
  app.add_option("--transport", cfg.transport_text,
                 "udp (simulator mode, a plain NIC) or device (the diode card driver's node)")
      ->check(CLI::IsMember({"udp", "device"}))
      ->capture_default_str();
  // Repeatable, one value each: a source after --dest is a source, not a second destination.
  app.add_option("--dest,-d", cfg.dest_texts,
                 "Receiver address HOST:PORT (--transport udp); give it once per lane to drive "
                 "several links as one session")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--device", cfg.devices,
                 "Card driver device node to write packets to (--transport device); once per "
                 "lane")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--lanes", cfg.lanes_opt,
                 "Drive N links as one session: the one --dest HOST:PORT and the ports after it, "
                 "PORT..PORT+N-1 (--rate applies to each lane)")
      ->check(CLI::Range(size_t{1}, common::kMaxLanes));
  app.add_option("--stripe-mb", cfg.stripe_mb,
                 "With 2 lanes or more: a file larger than this many MiB is striped over the "
                 "lanes in 4 MiB ranges, each down the least busy lane; smaller files go whole "
                 "down one lane; 0 = never stripe (not given: 64 when every lane goes to one "
                 "host, else 0)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 20))
      ->each([&cfg](const std::string&) { cfg.stripe_given = true; })
      ->capture_default_str();
  app.add_option("--lane-down", cfg.lane_down_text,
                 "When a lane's link reports a send error: stop ends the session; continue takes "
                 "the lane out of rotation, fails the files it was carrying and goes on over the "
                 "other lanes (with one lane, continue is stop)")
      ->check(CLI::IsMember({"stop", "continue"}))
      ->capture_default_str();
  app.add_option("--packet-size", cfg.packet_size,
                 "Datagram size in bytes, header included (default fits a 9000-byte MTU)")
      ->check(CLI::Range(common::kMinPacketSize, common::kMaxDatagramSize))
      ->capture_default_str();
  app.add_option(
         "--rate", cfg.rate_mb,
         "Rate limit in MB/s on the wire (1 MB = 1,048,576 bytes); 0 = unlimited, which loses "
         "packets whenever the receiver cannot keep up")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--verify", cfg.verify_text, "File verification: b2b (XXH3-128), sha256, none")
      ->check(CLI::IsMember({"b2b", "sha256", "none"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--control-repeat", cfg.control_repeat,
                 "Copies sent of each announce, end, abort and file-list packet")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
}

// Loss protection (FEC, repeats) and security (the key).
void add_protection_options(CLI::App& app, SenderConfig& cfg) {
  auto* loss = "Loss protection (no packet can be asked for again)";
  app.add_option("--fec", cfg.fec_text,
                 "Forward error correction K:M: M Reed-Solomon parity packets after every K "
                 "packets, any M lost of the K + M are rebuilt (e.g. 32:4); off")
      ->group(loss)
      ->capture_default_str();
  app.add_option("--fec-interleave", cfg.fec.interleave,
                 "Spread consecutive packets over this many FEC groups: a burst of up to "
                 "interleave x M lost packets is rebuilt")
      ->check(CLI::Range(1u, 255u))
      ->group(loss)
      ->capture_default_str();
  app.add_option("--repeat", cfg.repeat,
                 "Send each file this many times; the receiver fills the holes of one copy from "
                 "the next and delivers the file once")
      ->check(CLI::Range(1u, 255u))
      ->group(loss)
      ->capture_default_str();
  app.add_option("--compress", cfg.compress_text,
                 "Compress blocks with zstd before they cross: zstd[:LEVEL] tries every block, "
                 "auto[:LEVEL] first a sample of each; a block that does not shrink by 1/32 goes "
                 "as it is (LEVEL 1-19, default 1); off. Needs a dd_file_receive of ddft 0.2 or "
                 "later")
      ->group(loss)
      ->capture_default_str();
  app.add_option("--compress-workers", cfg.compress_workers,
                 "Threads compressing blocks (dd-zstdN); 0: one per core, at most 8")
      ->check(CLI::Range(0u, 64u))
      ->group(loss)
      ->capture_default_str();
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
  app.add_option("--read-block-kb", cfg.read_block_kb, "Reader block size in KiB")
      ->check(CLI::Range(size_t{4}, size_t{65536}))
      ->capture_default_str();
  app.add_option("--read-buffers", cfg.read_buffers,
                 "Reader blocks in the pool shared with the transmitter (read ahead + queued)")
      ->check(CLI::Range(size_t{2}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--readers", cfg.readers,
                 "Threads reading files, each with its own queue; 1 reads from the reader thread "
                 "itself (dd_iotest --test read finds the best value)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--read-queue-depth", cfg.read_queue_depth,
                 "Reads in flight per reader (io_uring queue depth)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--socket-buffer-mb", cfg.socket_buffer_mb, "Socket send buffer to ask for, MiB")
      ->check(CLI::Range(size_t{0}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--batch", cfg.batch, "Datagrams per sendmmsg call")
      ->check(CLI::Range(size_t{1}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--gso", cfg.gso_text,
                 "UDP segmentation offload: auto sends each run of equal datagrams as one "
                 "segmented send when the kernel takes it (still one datagram each on the wire); "
                 "off sends them one by one")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--heartbeat-ms", cfg.heartbeat_ms,
                 "Heartbeat interval when idle, between files and during the DFTS sleeps, ms; the "
                 "receiver warns after 3 silent intervals")
      ->check(CLI::Range(10u, 3600000u))
      ->capture_default_str();
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
  app.add_option("--file-lock", cfg.file_lock_text,
                 "Y: take a shared lock on each file while it is read, waiting for a writer's "
                 "lock up to --lock-timeout s (FILE_LOCK)")
      ->check(CLI::IsMember({"Y", "N"}, CLI::ignore_case))
      ->group(dfts)
      ->capture_default_str();
  app.add_option("--lock-timeout", cfg.lock_timeout_s, "Seconds FILE_LOCK=Y waits for a lock")
      ->check(CLI::Range(0.0, 86400.0))
      ->group(dfts)
      ->capture_default_str();
  app.add_option("--report", cfg.report_text,
                 "REPORT_OPTION: S a summary line per file, V also a progress line every "
                 "--report-mb MB, N errors and the session summary only")
      ->check(CLI::IsMember({"S", "V", "N"}, CLI::ignore_case))
      ->group(dfts)
      ->capture_default_str();
  app.add_option("--report-mb", cfg.report_mb, "Progress line interval for --report V, MB")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->group(dfts)
      ->capture_default_str();
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
  app.add_option("--history-hours", cfg.history_hours,
                 "How long the history keeps a file sent (at least its last repeat on the wire)")
      ->check(CLI::Range(0.01, 24.0 * 366))
      ->capture_default_str();
  app.add_option("--history-mb", cfg.history_mb,
                 "The history's size bound, MiB: past it the oldest entries go, with a warning")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
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

// Metrics, the hot folder, logging, progress and the manifest, and the test hooks.
void add_output_options(CLI::App& app, SenderConfig& cfg) {
  common::add_metrics_option(app, cfg.metrics);
  add_hot_folder_options(app, cfg);
  common::add_log_options(app, cfg.log);
  app.add_option("--progress", cfg.progress_text,
                 "Live progress of the file and of the whole batch (bytes, rate, ETA): auto when "
                 "stdout is a terminal and not --quiet, on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_option("--manifest", cfg.manifest,
                 "Append one JSON line per file sent or failed to this file (time, session, file "
                 "id, path, size, verification key, status)");
  add_state_options(app, cfg);
  app.add_option("--test-drop-data", cfg.test_drop_data)->group("");
}

// Every lane's destination from --dest (several times) or --lanes N (the ports after the one
// --dest). Throws CLI::ValidationError / CLI::RequiredError with one line.
void finalize_dests(SenderConfig& cfg) {
  if (cfg.dest_texts.empty()) throw CLI::RequiredError("--dest");
  if (cfg.lanes_opt > 0 && cfg.dest_texts.size() > 1) {
    throw CLI::ValidationError(
        "--lanes", fmt::format("takes one --dest (the first of the lanes' ports), got {}",
                               cfg.dest_texts.size()));
  }
  cfg.dests.clear();
  for (const std::string& text : cfg.dest_texts) {
    common::Endpoint e;
    std::string error;
    if (!common::parse_endpoint(text, &e, &error)) throw CLI::ValidationError("--dest", error);
    if (e.port == 0) throw CLI::ValidationError("--dest", "port 0 is not a destination");
    for (const common::Endpoint& seen : cfg.dests) {
      if (seen.host == e.host && seen.port == e.port) {
        throw CLI::ValidationError("--dest",
                                   text + " given twice: each lane needs a destination of its own");
      }
    }
    cfg.dests.push_back(e);
  }
  if (cfg.lanes_opt > 1) {
    const common::Endpoint first = cfg.dests.front();
    if (first.port + (cfg.lanes_opt - 1) > 65535) {
      throw CLI::ValidationError("--lanes", fmt::format("{} lanes from port {} go past port 65535",
                                                        cfg.lanes_opt, first.port));
    }
    for (size_t i = 1; i < cfg.lanes_opt; ++i) {
      common::Endpoint e = first;
      e.port = static_cast<uint16_t>(first.port + i);
      cfg.dests.push_back(e);
    }
  }
  if (cfg.dests.size() > common::kMaxLanes) {
    throw CLI::ValidationError("--dest", fmt::format("{} destinations: at most {} lanes",
                                                     cfg.dests.size(), common::kMaxLanes));
  }
  cfg.dest = cfg.dests.front();
}

// Every lane's device node from --device (several times).
void finalize_devices(SenderConfig& cfg) {
  if (cfg.devices.empty()) {
    throw CLI::ValidationError("--device", "--transport device needs --device PATH");
  }
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
  // CLI11's IsMember has already refused anything else, with its one-line error.
  if (!common::parse_transport(cfg.transport_text, &cfg.transport)) {
    throw CLI::ValidationError("--transport", "expected udp or device");
  }
  if (cfg.gso_text != "auto" && cfg.gso_text != "off") {
    throw CLI::ValidationError("--gso", "expected auto or off");
  }
  cfg.gso = cfg.gso_text == "auto";
  finalize_lanes(cfg);
  default_striping(cfg);
  if (cfg.lane_down_text != "stop" && cfg.lane_down_text != "continue") {
    throw CLI::ValidationError("--lane-down", "expected stop or continue");
  }
  cfg.lane_down =
      cfg.lane_down_text == "continue" ? LaneDownPolicy::kContinue : LaneDownPolicy::kStop;
  cfg.file_lock = cfg.file_lock_text == "Y" || cfg.file_lock_text == "y";
  cfg.progress = cfg.progress_text == "on"    ? ProgressMode::kOn
                 : cfg.progress_text == "off" ? ProgressMode::kOff
                                              : ProgressMode::kAuto;
  const char r = static_cast<char>(std::toupper(static_cast<unsigned char>(cfg.report_text[0])));
  cfg.report = r == 'V'   ? ReportOption::kVerbose
               : r == 'N' ? ReportOption::kNone
                          : ReportOption::kSummary;
  if (!common::parse_verify_type(cfg.verify_text, &cfg.verify)) {
    throw CLI::ValidationError("--verify", "expected b2b, sha256 or none");
  }
  if (cfg.packet_size < common::kHeaderSize + common::kDataHeaderSize + 1) {
    throw CLI::ValidationError("--packet-size", "too small to carry data");
  }
  const unsigned interleave = cfg.fec.interleave;
  if (!common::parse_fec(cfg.fec_text, &cfg.fec, &error))
    throw CLI::ValidationError("--fec", error);
  cfg.fec.interleave = interleave;
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
  if (!cfg.key_file.empty()) {
    try {
      cfg.key = common::load_key_file(cfg.key_file);
    } catch (const std::exception& e) {
      throw CLI::ValidationError("--key-file", e.what());
    }
  }
}

void finalize_compress(SenderConfig& cfg) {
  const std::string& t = cfg.compress_text;
  const auto colon = t.find(':');
  const std::string mode = t.substr(0, colon);
  const char* expected = "expected off, auto[:LEVEL] or zstd[:LEVEL], LEVEL 1 to 19";
  if (mode == "off" && colon == std::string::npos) {
    cfg.compress = CompressMode::kOff;
    return;
  }
  if (mode != "zstd" && mode != "auto") throw CLI::ValidationError("--compress", expected);
  cfg.compress = mode == "zstd" ? CompressMode::kZstd : CompressMode::kAuto;
  if (colon != std::string::npos) {
    int v = 0;
    if (!common::parse_whole_number(std::string_view(t).substr(colon + 1), &v) || v < 1 || v > 19) {
      throw CLI::ValidationError("--compress", expected);
    }
    cfg.compress_level = v;
  }
  if (cfg.read_block_kb * 1024 > common::kMaxZBlockSize) {
    throw CLI::ValidationError(
        "--read-block-kb",
        fmt::format("at most {} with --compress (a compressed block is at most "
                    "{} MiB)",
                    common::kMaxZBlockSize / 1024, common::kMaxZBlockSize >> 20));
  }
  if (cfg.compress_workers == 0) {
    cfg.compress_workers = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  }
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
