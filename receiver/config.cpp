#include "receiver/config.hpp"

#include <fmt/format.h>

#include "common/logging.hpp"
#include "common/metrics.hpp"
#include "common/protocol.hpp"

namespace ddft::receiver {

std::string_view collision_policy_name(CollisionPolicy policy) {
  return policy == CollisionPolicy::kOverwrite ? "overwrite"
         : policy == CollisionPolicy::kReject  ? "reject"
                                               : "rename";
}

std::string_view direct_io_name(DirectIo mode) {
  return mode == DirectIo::kOn ? "on" : mode == DirectIo::kOff ? "off" : "auto";
}

namespace {

// The config file, where datagrams come from and the folders files go to.
void add_link_options(CLI::App& app, ReceiverConfig& cfg) {
  app.set_config("--config", "", "Read options from this file (TOML or INI, option = value)");
  // A misspelt setting must stop the program, not be silently ignored.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("--transport", cfg.transport_text,
                 "udp (simulator mode, a plain NIC) or device (the diode card driver's node)")
      ->check(CLI::IsMember({"udp", "device"}))
      ->capture_default_str();
  app.add_option("--listen,-l", cfg.listen_texts,
                 "Address to receive on, HOST:PORT (udp); several times for several lanes")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--device", cfg.devices,
                 "Card driver device node to read (--transport device); several times for "
                 "several lanes")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--lanes", cfg.lanes_option,
                 "Lanes on consecutive ports from the one --listen HOST:PORT (1-64)");
  // Required but for --sink null (finalize_receiver_config()).
  app.add_option("--output,-o", cfg.output,
                 "Folder the files are written to (required, but for --sink null)");
  app.add_option("--failed-dir", cfg.failed_dir,
                 "Folder for files that could not be completed (default OUTPUT/.failed)");
}

// Memory: the receive ring, the write blocks and the FEC windows, and the largest datagram.
void add_memory_options(CLI::App& app, ReceiverConfig& cfg) {
  app.add_option("--buffer-mb", cfg.buffer_mb,
                 "RAM for receive buffering in MiB, allocated at start: the receive ring plus the "
                 "write blocks (--write-buffers x --write-block-kb)")
      ->check(CLI::Range(size_t{1}, size_t{65536}))
      ->capture_default_str();
  app.add_option("--fec-buffer-mb", cfg.fec_buffer_mb,
                 "Memory for FEC windows, kept until their parity arrives (allocated at the first "
                 "FEC packet), MiB")
      ->check(CLI::Range(size_t{1}, size_t{4096}))
      ->capture_default_str();
  app.add_option("--compress-buffer-mb", cfg.compress_buffer_mb,
                 "Memory for compressed blocks (sender --compress) gathered until their last "
                 "piece comes; past it the oldest is dropped, MiB (at least 4)")
      ->check(CLI::Range(size_t{4}, size_t{4096}))
      ->capture_default_str();
  app.add_option("--max-packet-size", cfg.max_packet_size, "Largest datagram accepted, bytes")
      ->check(CLI::Range(size_t{common::kMinPacketSize}, size_t{common::kMaxDatagramSize}))
      ->capture_default_str();
  app.add_option("--report-mb", cfg.report_mb, "A Rcvd: line every this many MB of a file")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
}

// How files are written: durability, collisions, timeouts, blocks, writers and the receive batch.
void add_write_options(CLI::App& app, ReceiverConfig& cfg) {
  app.add_option("--write-mode", cfg.write_mode_text,
                 "rwd (default): a file's data is synced, then it is renamed and its folder "
                 "synced, before it is logged Passed (many files share one flush); rws: the same "
                 "with all its metadata (mtime, mode) synced too; rw: no sync at all, faster, but "
                 "files logged Passed can be lost or empty after a power cut")
      ->check(CLI::IsMember({"rw", "rwd", "rws"}))
      ->capture_default_str();
  app.add_option("--on-collision", cfg.on_collision_text,
                 "Same name exists: rename (keep the old one as name.N.ext), overwrite, reject")
      ->check(CLI::IsMember({"rename", "overwrite", "reject"}))
      ->capture_default_str();
  app.add_option("--file-timeout", cfg.file_timeout_s,
                 "Seconds without a packet of a file before it fails")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--journal-hours", cfg.journal_hours,
                 "How long the journal (OUTPUT/.ddft-outcomes) remembers each file delivered or "
                 "named, across sender sessions and restarts, so that what a sender repeats "
                 "(file lists, its history) is not named twice")
      ->check(CLI::Range(0.01, 24.0 * 366))
      ->capture_default_str();
  app.add_option("--journal-mb", cfg.journal_mb,
                 "The journal's size bound, MiB: past it the oldest lines go (with a warning)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--write-block-kb", cfg.write_block_kb, "Write block size in KiB")
      ->check(CLI::Range(size_t{64}, size_t{65536}))
      ->capture_default_str();
  app.add_option("--write-buffers", cfg.write_buffers, "Write blocks in the pool")
      ->check(CLI::Range(size_t{4}, size_t{4096}))
      ->capture_default_str();
  app.add_option("--queue-depth", cfg.queue_depth,
                 "Writes in flight per writer (io_uring queue depth)")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  app.add_option("--writers", cfg.writers,
                 "Threads writing blocks to disk, each with its own queue; 1 writes from the "
                 "writer thread itself (dd_iotest --test write finds the best value)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_option("--workers", cfg.workers,
                 "Threads checking and opening (--key-file) datagrams side by side, the writer "
                 "thread included; 0: one per core beyond two, at most 4, at least 1")
      ->check(CLI::Range(0u, 64u))
      ->capture_default_str();
  app.add_option("--io-engine", cfg.io_engine_text, "auto (io_uring, else pwrite), uring, pwrite")
      ->check(CLI::IsMember({"auto", "uring", "pwrite"}))
      ->capture_default_str();
  app.add_option("--sink", cfg.sink_text,
                 "disk, or null: do everything but write (verification included), to measure "
                 "the link and the receiver without the disk. --output is optional then; "
                 "without it the replay state (--key-file) is kept in memory only and a failed "
                 "file's Error line is its only record")
      ->check(CLI::IsMember({"disk", "null"}))
      ->capture_default_str();
  app.add_option("--socket-buffer-mb", cfg.socket_buffer_mb, "Socket receive buffer, MiB")
      ->check(CLI::Range(size_t{0}, size_t{2048}))
      ->capture_default_str();
  app.add_option("--gro", cfg.gro_text,
                 "UDP receive offload: auto lets the kernel hand over runs of datagrams as one "
                 "bundle when it can (one trip up the stack for many); off receives them one by "
                 "one")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--batch", cfg.batch, "Datagrams per recvmmsg call")
      ->check(CLI::Range(size_t{1}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--direct-io", cfg.direct_io_text,
                 "Write whole blocks with O_DIRECT, past the page cache, so the disk works during "
                 "the transfer and not at the final sync: auto (where the file system allows it), "
                 "on (warn where it does not), off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
}

// What is accepted: the key, limits on files and paths, and the filters.
void add_admission_options(CLI::App& app, ReceiverConfig& cfg) {
  app.add_option("--key-file", cfg.key_files,
                 "Pre-shared key (32 random bytes or 64 hex digits, mode 0600): accept only "
                 "datagrams sealed with it (AES-256-GCM), drop and count all others. Give it "
                 "twice (old and new key) while keys are rotated")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--max-file-size", cfg.max_file_size,
                 "Refuse announced files larger than this (bytes, or with a unit: 500MB, 2GiB, "
                 "1TB; KB = 1000, KiB = 1024); 0: no limit but the free space")
      ->transform(CLI::AsSizeValue(true))
      ->capture_default_str();
  app.add_option("--max-files-in-flight", cfg.max_files_in_flight,
                 "Files receiving at once; an announce beyond it fails the oldest of them (files "
                 "finishing their writes do not count)")
      ->check(CLI::Range(size_t{2}, size_t{100000}))
      ->capture_default_str();
  app.add_option("--max-path-length", cfg.path_limits.max_length,
                 "Refuse announced paths longer than this, bytes")
      ->check(CLI::Range(size_t{1}, common::kMaxPathSize))
      ->capture_default_str();
  app.add_option("--max-path-depth", cfg.path_limits.max_depth,
                 "Refuse announced paths with more components (folders and the name) than this")
      ->check(CLI::Range(size_t{1}, size_t{2048}))
      ->capture_default_str();
  app.add_option("--include", cfg.includes,
                 "Take only files matching this glob (repeatable): without '/' it matches the base "
                 "name, with '/' the whole relative path ('*' crossing '/'); others are logged and "
                 "dropped")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--exclude", cfg.excludes,
                 "Drop files matching this glob (repeatable; wins over --include): logged, not "
                 "written, no failure record")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// The --on-complete hooks, how the program runs, metrics and logging, and the test hooks.
void add_run_options(CLI::App& app, ReceiverConfig& cfg) {
  app.add_option("--on-complete", cfg.on_complete,
                 "Run this command on each file verified and in place, off the receive path: "
                 "/bin/sh -c 'CMD \"$@\"' with the file's final path as the last argument, and "
                 "DDFT_PATH, DDFT_REL_PATH, DDFT_SIZE, DDFT_KEY, DDFT_SESSION in the environment. "
                 "Its exit status is logged; whatever it does, the file stays delivered");
  app.add_option("--on-complete-timeout", cfg.on_complete_timeout_s,
                 "Seconds an --on-complete command may run; then its process group is killed "
                 "(SIGTERM, SIGKILL 5 s later)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--on-complete-jobs", cfg.on_complete_jobs,
                 "--on-complete commands running at once")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  app.add_flag("--once", cfg.once, "Exit once the first sender session has finished");
  app.add_flag("--lock-memory", cfg.lock_memory, "Lock the receive ring in RAM (mlock)");
  app.add_flag("--keep-partial", cfg.keep_partial,
               "Keep the data of files an earlier run left unfinished (a crash, a power cut) in "
               "the failed folder beside their records, instead of removing it");
  common::add_metrics_option(app, cfg.metrics);
  common::add_log_options(app, cfg.log);
  app.add_option("--test-stall-writer-s", cfg.test_stall_writer_s)->group("");
  app.add_option("--test-stall-after-mb", cfg.test_stall_after_mb)->group("");
}

// --listen / --device / --lanes into the lanes' links, checked.
void finalize_lanes(ReceiverConfig& cfg) {
  std::string error;
  const bool udp = cfg.transport == common::TransportKind::kUdp;
  if (udp) {
    if (cfg.listen_texts.empty()) throw CLI::RequiredError("--listen");
    cfg.listens.clear();
    for (const std::string& text : cfg.listen_texts) {
      common::Endpoint e;
      if (!common::parse_endpoint(text, &e, &error)) throw CLI::ValidationError("--listen", error);
      cfg.listens.push_back(e);
    }
  } else if (cfg.devices.empty()) {
    throw CLI::ValidationError("--device", "--transport device needs --device PATH");
  }
  if (cfg.lanes_option != 0) {
    if (!udp || cfg.listens.size() != 1) {
      throw CLI::ValidationError("--lanes",
                                 "--lanes N takes one --listen HOST:PORT (lanes on ports PORT to "
                                 "PORT+N-1); give several --listen instead");
    }
    if (cfg.lanes_option > common::kMaxLanes) {
      throw CLI::ValidationError(
          "--lanes", fmt::format("{} lanes: at most {}", cfg.lanes_option, common::kMaxLanes));
    }
    const common::Endpoint first = cfg.listens.front();
    if (first.port == 0 || first.port + cfg.lanes_option - 1 > 65535) {
      throw CLI::ValidationError("--lanes",
                                 fmt::format("ports {} to {} are not all valid ports", first.port,
                                             first.port + cfg.lanes_option - 1));
    }
    for (size_t i = 1; i < cfg.lanes_option; ++i) {
      common::Endpoint e = first;
      e.port = static_cast<uint16_t>(first.port + i);
      cfg.listens.push_back(e);
    }
  }
  if (cfg.lanes() > common::kMaxLanes) {
    throw CLI::ValidationError(udp ? "--listen" : "--device",
                               fmt::format("{} lanes: at most {}", cfg.lanes(), common::kMaxLanes));
  }
  for (size_t i = 0; i < cfg.lanes(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (cfg.lane_name(i) == cfg.lane_name(j) && !(udp && cfg.listens[i].port == 0)) {
        throw CLI::ValidationError(udp ? "--listen" : "--device",
                                   fmt::format("{} is given twice: each lane needs a link of its "
                                               "own",
                                               cfg.lane_name(i)));
      }
    }
  }
  if (udp) {
    cfg.listen = cfg.listens.front();
  } else {
    cfg.device = cfg.devices.front();
  }
}

}  // namespace

std::string ReceiverConfig::lane_name(size_t lane) const {
  if (transport == common::TransportKind::kDevice) {
    return "device " + (lane < devices.size() ? devices[lane] : device);
  }
  return lane < listens.size() ? listens[lane].to_string() : listen.to_string();
}

void add_receiver_options(CLI::App& app, ReceiverConfig& cfg) {
  add_link_options(app, cfg);
  add_memory_options(app, cfg);
  add_write_options(app, cfg);
  add_admission_options(app, cfg);
  add_run_options(app, cfg);
}

void finalize_receiver_config(ReceiverConfig& cfg) {
  std::string error;
  // CLI11's IsMember has already refused anything else, with its one-line error.
  if (!common::parse_transport(cfg.transport_text, &cfg.transport)) {
    throw CLI::ValidationError("--transport", "expected udp or device");
  }
  if (cfg.gro_text != "auto" && cfg.gro_text != "off") {
    throw CLI::ValidationError("--gro", "expected auto or off");
  }
  cfg.gro = cfg.gro_text == "auto";
  finalize_lanes(cfg);
  cfg.null_sink = cfg.sink_text == "null";
  if (cfg.output.empty()) {
    // --sink null writes nothing: it may run without a folder (OutputDir then keeps no state
    // and no records on disk). Anything else needs one.
    if (!cfg.null_sink) throw CLI::RequiredError("--output");
    if (!cfg.failed_dir.empty()) {
      throw CLI::ValidationError("--failed-dir", "needs --output (it must be on its file system)");
    }
  } else if (cfg.failed_dir.empty()) {
    cfg.failed_dir = cfg.output + "/.failed";
  }
  try {
    cfg.filter = common::PathFilter(cfg.includes, cfg.excludes);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());  // "--exclude '[a': unclosed '['"
  }
  // CLI11's IsMember has already refused anything else.
  if (!common::parse_write_mode(cfg.write_mode_text, &cfg.write_mode)) {
    throw CLI::ValidationError("--write-mode", "expected rw, rwd or rws");
  }
  cfg.on_collision = cfg.on_collision_text == "overwrite" ? CollisionPolicy::kOverwrite
                     : cfg.on_collision_text == "reject"  ? CollisionPolicy::kReject
                                                          : CollisionPolicy::kRename;
  cfg.io_engine = cfg.io_engine_text == "uring"    ? common::IoEngine::kUring
                  : cfg.io_engine_text == "pwrite" ? common::IoEngine::kPwrite
                                                   : common::IoEngine::kAuto;
  cfg.direct_io = cfg.direct_io_text == "on"    ? DirectIo::kOn
                  : cfg.direct_io_text == "off" ? DirectIo::kOff
                                                : DirectIo::kAuto;
  const size_t pool_mb = cfg.write_buffers * cfg.write_block_kb / 1024;
  if (cfg.buffer_mb < pool_mb + 8) {
    throw CLI::ValidationError(
        "--buffer-mb", fmt::format("{} MiB leaves no room for the receive ring next to the write "
                                   "blocks ({} MiB); give at least {}",
                                   cfg.buffer_mb, pool_mb, pool_mb + 8));
  }
  if (cfg.null_sink) cfg.io_engine = common::IoEngine::kNull;
  if (cfg.key_files.size() > 2) {
    throw CLI::ValidationError("--key-file", "at most two keys (the old and the new one)");
  }
  for (const std::string& f : cfg.key_files) {
    try {
      cfg.keys.push_back(common::load_key_file(f));
    } catch (const std::exception& e) {
      throw CLI::ValidationError("--key-file", e.what());
    }
  }
}

}  // namespace ddft::receiver
