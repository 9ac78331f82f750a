#include "receiver/config.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <utility>

#include "common/channel_name.hpp"
#include "common/cli_options.hpp"
#include "common/logging.hpp"
#include "common/metrics.hpp"
#include "common/protocol.hpp"
#include "receiver/delivery/state_dir.hpp"

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

using common::add_bounded_option;
using common::add_choice_option;

// The config file, where datagrams come from and the folders files go to.
void add_link_options(CLI::App& app, ReceiverConfig& cfg) {
  common::add_config_file_option(app);
  common::add_transport_option(app, cfg.transport);
  common::add_endpoints_option(
      app, "--listen,-l", cfg.listens,
      "Address to receive on, HOST:PORT (udp); several times for several lanes",
      common::PortZero::kAllowed, cfg.transport);
  common::add_devices_option(
      app, cfg.devices,
      "Card driver device node to read (--transport device); several times for several lanes");
  app.add_option("--lanes", cfg.lanes_option,
                 "Lanes on consecutive ports from the one --listen HOST:PORT (1-64)");
  // Required but for --sink null (finalize_receiver_config()).
  app.add_option("--output,-o", cfg.output,
                 "Folder the files are written to (required, but for --sink null)");
  app.add_option("--state-dir", cfg.state_dir,
                 "Folder for the receiver's own state: its journal, replay state, record reserve "
                 "and failed folder (default OUTPUT/.ddft; made when missing, on the output "
                 "folder's file system)");
  app.add_option("--failed-dir", cfg.failed_dir,
                 "Folder for files that could not be completed (default STATE/failed, in "
                 "--state-dir)");
  app.add_option_function<std::vector<std::string>>(
         "--channel-dir",
         [&cfg](const std::vector<std::string>& values) {
           cfg.channel_dirs.clear();
           for (const std::string& v : values) {
             const size_t eq = v.find('=');
             if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
               throw CLI::ValidationError("--channel-dir", "'" + v + "' is not NAME=PATH");
             }
             const std::string name = v.substr(0, eq);
             if (auto why = common::channel_name_refusal(name)) {
               throw CLI::ValidationError("--channel-dir", *why);
             }
             cfg.channel_dirs.emplace_back(name, v.substr(eq + 1));
           }
         },
         "Files of the sender's channel NAME land below PATH instead of OUTPUT/NAME/ "
         "(repeatable): an existing folder on the output folder's file system, outside it")
      ->type_name("NAME=PATH")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// Memory: the receive ring, the write blocks and the FEC windows, and the largest datagram.
void add_memory_options(CLI::App& app, ReceiverConfig& cfg) {
  add_bounded_option(app, "--buffer-mb", cfg.buffer_mb, 1, 65536,
                     "RAM for receive buffering in MiB, allocated at start: the receive ring plus "
                     "the write blocks (--write-buffers x --write-block-kb)");
  add_bounded_option(app, "--fec-buffer-mb", cfg.fec_buffer_mb, 1, 4096,
                     "Memory for FEC windows, kept until their parity arrives (allocated at the "
                     "first FEC packet), MiB");
  add_bounded_option(app, "--compress-buffer-mb", cfg.compress_buffer_mb, 4, 4096,
                     "Memory for compressed blocks (sender --compress) gathered until their last "
                     "piece comes; past it the oldest is dropped, MiB (at least 4)");
  add_bounded_option(app, "--max-packet-size", cfg.max_packet_size, common::kMinPacketSize,
                     common::kMaxDatagramSize, "Largest datagram accepted, bytes");
  add_bounded_option(app, "--report-mb", cfg.report_mb, 1, size_t{1} << 30,
                     "A Rcvd: line every this many MB of a file");
}

// How files are written: durability, collisions, timeouts, blocks, writers and the receive batch.
void add_write_options(CLI::App& app, ReceiverConfig& cfg) {
  add_choice_option(
      app, "--write-mode", cfg.write_mode,
      common::named_choices({WriteMode::kBuffered, WriteMode::kDataSync, WriteMode::kFullSync},
                            write_mode_name),
      "rwd (default): a file's data is synced, then it is renamed and its folder synced, before it "
      "is logged Passed (many files share one flush); rws: the same with all its metadata (mtime, "
      "mode) synced too; rw: no sync at all, faster, but files logged Passed can be lost or empty "
      "after a power cut");
  add_choice_option(app, "--on-collision", cfg.on_collision,
                    common::named_choices({CollisionPolicy::kRename, CollisionPolicy::kOverwrite,
                                           CollisionPolicy::kReject},
                                          collision_policy_name),
                    "Same name exists: rename (keep the old one as name.N.ext), overwrite, reject");
  add_bounded_option(app, "--file-timeout", cfg.file_timeout_s, 0.1, 86400.0,
                     "Seconds without a packet of a file before it fails (counted from the "
                     "latest heartbeat saying the sender sleeps, when later)");
  add_bounded_option(app, "--journal-hours", cfg.journal_hours, 0.01, 24.0 * 366,
                     "How long the journal (STATE/outcomes) remembers each file delivered "
                     "or named, across sender sessions and restarts, so that what a sender repeats "
                     "(file lists, its history) is not named twice");
  add_bounded_option(app, "--journal-mb", cfg.journal_mb, 1, size_t{1} << 20,
                     "The journal's size bound, MiB: past it the oldest lines go (with a warning)");
  add_bounded_option(app, "--write-block-kb", cfg.write_block_kb, 64, 65536,
                     "Write block size in KiB");
  add_bounded_option(app, "--write-buffers", cfg.write_buffers, 4, 4096,
                     "Write blocks in the pool");
  add_bounded_option(app, "--queue-depth", cfg.queue_depth, 1, 4096,
                     "Writes in flight per writer (io_uring queue depth)");
  add_bounded_option(app, "--writers", cfg.writers, 1, 64,
                     "Threads writing blocks to disk, each with its own queue; 1 writes from the "
                     "writer thread itself (dd_iotest --test write finds the best value)");
  add_bounded_option(app, "--workers", cfg.workers, 0, 64,
                     "Threads checking and opening (--key-file) datagrams side by side, the writer "
                     "thread included; 0: one per core beyond two, at most 4, at least 1");
  add_choice_option<common::IoEngine>(app, "--io-engine", cfg.io_engine,
                                      {{"auto", common::IoEngine::kAuto},
                                       {"uring", common::IoEngine::kUring},
                                       {"pwrite", common::IoEngine::kPwrite}},
                                      "auto (io_uring, else pwrite), uring, pwrite");
  add_choice_option<bool>(
      app, "--sink", cfg.null_sink, {{"disk", false}, {"null", true}},
      "disk, or null: do everything but write (verification included), to measure the link and the "
      "receiver without the disk. --output is optional then; without it the replay state "
      "(--key-file) is kept in memory only and a failed file's Error line is its only record");
  add_bounded_option(app, "--socket-buffer-mb", cfg.socket_buffer_mb, 0, 2048,
                     "Socket receive buffer, MiB");
  common::add_offload_option(
      app, "--gro", cfg.gro,
      "UDP receive offload: auto lets the kernel hand over runs of datagrams as one bundle when it "
      "can (one trip up the stack for many); off receives them one by one");
  add_bounded_option(app, "--batch", cfg.batch, 1, 1024, "Datagrams per recvmmsg call");
  add_choice_option(
      app, "--direct-io", cfg.direct_io,
      common::named_choices({DirectIo::kAuto, DirectIo::kOn, DirectIo::kOff}, direct_io_name),
      "Write whole blocks with O_DIRECT, past the page cache, so the disk works during the "
      "transfer and not at the final sync: auto (where the file system allows it), on (warn where "
      "it does not), off");
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
  add_bounded_option(app, "--max-files-in-flight", cfg.max_files_in_flight, 2, 100000,
                     "Files receiving at once; an announce beyond it fails the oldest of them "
                     "(files finishing their writes do not count)");
  add_bounded_option(app, "--max-senders", cfg.max_senders, 1, 64,
                     "Senders followed at once, each its own session (a sender beyond them is "
                     "refused, named in the log, until one is quiet or finished)");
  add_bounded_option(app, "--max-path-length", cfg.path_limits.max_length, 1, common::kMaxPathSize,
                     "Refuse announced paths longer than this, bytes");
  add_bounded_option(
      app, "--max-path-depth", cfg.path_limits.max_depth, 1, 2048,
      "Refuse announced paths with more components (folders and the name) than this");
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
                 "DDFT_PATH, DDFT_REL_PATH, DDFT_SIZE, DDFT_KEY, DDFT_SESSION, DDFT_CHANNEL, "
                 "DDFT_SENDER, DDFT_FEC_REBUILT, DDFT_REPEAT_FILLED in the environment. "
                 "Its exit status is logged; whatever it does, the file stays delivered");
  add_bounded_option(app, "--on-complete-timeout", cfg.on_complete_timeout_s, 0.1, 86400.0,
                     "Seconds an --on-complete command may run; then its process group is killed "
                     "(SIGTERM, SIGKILL 5 s later)");
  add_bounded_option(app, "--on-complete-jobs", cfg.on_complete_jobs, 1, 64,
                     "--on-complete commands running at once");
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
  const bool udp = cfg.transport == common::TransportKind::kUdp;
  if (udp) {
    if (cfg.listens.empty()) throw CLI::RequiredError("--listen");
  } else {
    common::require_devices(cfg.devices);
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
    if (!common::add_consecutive_ports(&cfg.listens, cfg.lanes_option)) {
      const size_t first = cfg.listens.front().port;
      throw CLI::ValidationError("--lanes", fmt::format("ports {} to {} are not all valid ports",
                                                        first, first + cfg.lanes_option - 1));
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

// The state folder: the default one, or --state-dir checked against --output; the default failed
// folder within it. An output folder that cannot be seen is left for the receiver's start to name.
void finalize_state_dir(ReceiverConfig& cfg) {
  if (cfg.state_dir.empty()) {
    cfg.state_dir = default_state_dir(cfg.output);
  } else if (struct stat out{}; ::stat(cfg.output.c_str(), &out) == 0) {
    // The folder, or the nearest of its parents that exists (it is made at start).
    const std::filesystem::path wanted =
        std::filesystem::absolute(cfg.state_dir).lexically_normal();
    std::filesystem::path at = wanted;
    struct stat st {};
    while (::stat(at.c_str(), &st) != 0 && at.has_relative_path()) at = at.parent_path();
    if (st.st_dev != out.st_dev) {
      throw CLI::ValidationError(
          "--state-dir", fmt::format("'{}' is not on the file system of --output '{}' (the "
                                     "receiver moves its failed files and its state by rename)",
                                     cfg.state_dir, cfg.output));
    }
    if (at == wanted && st.st_ino == out.st_ino) {
      throw CLI::ValidationError(
          "--state-dir",
          fmt::format("'{}' is the output folder: the state needs a folder of its own",
                      cfg.state_dir));
    }
  }
  if (cfg.failed_dir.empty()) cfg.failed_dir = default_failed_dir(cfg.state_dir);
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
  finalize_lanes(cfg);
  if (cfg.output.empty()) {
    // --sink null writes nothing: it may run without a folder (OutputDir then keeps no state
    // and no records on disk). Anything else needs one.
    if (!cfg.null_sink) throw CLI::RequiredError("--output");
    for (const auto& [name, value] :
         {std::pair{"--failed-dir", &cfg.failed_dir}, std::pair{"--state-dir", &cfg.state_dir}}) {
      if (!value->empty()) {
        throw CLI::ValidationError(name, "needs --output (it must be on its file system)");
      }
    }
  } else {
    finalize_state_dir(cfg);
  }
  cfg.filter = common::path_filter_option(cfg.includes, cfg.excludes);
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
  for (const std::string& f : cfg.key_files) cfg.keys.push_back(common::load_key_option(f));
}

}  // namespace ddft::receiver
