// dd_file_receive settings, and the CLI11 options that fill them (also from a --config file).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/block_io.hpp"
#include "common/logging.hpp"
#include "common/path_filter.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"
#include "common/write_mode.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

// --direct-io: whole blocks written with O_DIRECT where the file system allows it (auto), with a
// warning where it does not (on), or never (off).
enum class DirectIo { kAuto, kOn, kOff };
// "auto", "on" or "off", as --direct-io spells it.
std::string_view direct_io_name(DirectIo mode);

// --write-mode is the common one (the disk self-test times the same syncs).
using common::write_mode_name;
using common::WriteMode;
// "rename", "overwrite" or "reject", as --on-collision spells it.
std::string_view collision_policy_name(CollisionPolicy policy);

struct ReceiverConfig {
  // The links received from (at least 1).
  // (A config made in code with `listen` or `device` alone has one.)
  size_t lanes() const {
    return std::max<size_t>(
        1, transport == common::TransportKind::kDevice ? devices.size() : listens.size());
  }
  // "127.0.0.1:5000", "device /dev/owl1".
  std::string lane_name(size_t lane) const;

  common::TransportKind transport = common::TransportKind::kUdp;  // --transport
  std::string device;       // --device PATH with --transport device (the first lane's)
  common::Endpoint listen;  // the first lane's --listen
  // Lanes (--listen or --device given several times, or --lanes N with consecutive ports): one
  // link each, one receive thread and ring each, one file table. Lane k receives the sender's
  // lane k (in the order of the sender's --dest). With --lanes, finalize_receiver_config() adds
  // the ports after the one --listen.
  std::vector<common::Endpoint> listens;
  std::vector<std::string> devices;
  size_t lanes_option = 0;  // --lanes N (0: not given)
  std::string output;       // "" only with --sink null: no folder at all (OutputDir)
  // The receiver's state folder (receiver/delivery/state_dir.hpp names what it holds): --state-dir,
  // else OUTPUT/.ddft, as finalize_receiver_config() leaves it ("" without an output folder).
  // Whatever else the receiver keeps goes in it too.
  std::string state_dir;
  std::string failed_dir;  // default STATE/failed ("" without an output folder)
  // --channel-dir NAME=PATH: a channel's files land below PATH instead of OUTPUT/NAME/.
  std::vector<std::pair<std::string, std::string>> channel_dirs;
  size_t buffer_mb = 1024;        // the receive ring
  size_t max_packet_size = 9216;  // larger datagrams are dropped as bad length
  size_t report_mb = 100;         // a Rcvd: line every report_mb MB (2^20) of a file
  // Durable by default: Passed means on disk (receiver/delivery/committer.hpp).
  WriteMode write_mode = WriteMode::kDataSync;
  CollisionPolicy on_collision = CollisionPolicy::kRename;
  double file_timeout_s = 30;  // no packet of a file for this long: it fails
  double journal_hours = 25;   // what the journal remembers (receiver/delivery/outcome_log.hpp)
  size_t journal_mb = 256;     // and how big it may grow
  size_t fec_buffer_mb = 64;   // FEC windows kept until their parity comes
  // Compressed blocks gathered until whole (receiver/assembly/zframes.hpp).
  size_t compress_buffer_mb = 64;
  size_t write_block_kb = 1024;                            // assembly / write block size
  size_t write_buffers = 64;                               // blocks in the write pool
  unsigned queue_depth = common::kDefaultWriteQueueDepth;  // io_uring queue depth, per writer
  unsigned writers = 1;  // IO threads writing (1: the writer thread itself)
  // Threads decoding and opening datagrams, the writer thread included (UnsealPool); 0: from the
  // core count (default_open_workers).
  unsigned workers = 0;
  // --io-engine auto|uring|pwrite; kNull with --sink null (finalize_receiver_config()).
  common::IoEngine io_engine = common::IoEngine::kAuto;
  DirectIo direct_io = DirectIo::kAuto;
  bool null_sink = false;         // --sink null: everything but the disk write
  size_t socket_buffer_mb = 256;  // SO_RCVBUF request
  size_t batch = 64;              // datagrams per recvmmsg (16 bundles with GRO)
  // --gro auto: the kernel hands over runs of datagrams as bundles (UDP_GRO) when it can.
  bool gro = true;
  bool once = false;          // exit when the first sender session has finished
  bool lock_memory = false;   // mlock the ring
  bool keep_partial = false;  // keep leftovers' data in the failed folder
  // Security (--key-file): every datagram must be sealed with a pre-shared key; two during a key
  // rotation (the old and the new one).
  std::vector<std::string> key_files;
  std::vector<common::Key> keys;  // loaded by finalize_receiver_config()
  // Limits on what a sender may make the receiver hold.
  uint64_t max_file_size = 0;       // bytes; 0: no limit but the free space
  size_t max_files_in_flight = 32;  // files open at once; more fail the oldest
  size_t max_senders = 8;           // sender sessions followed side by side
  PathLimits path_limits;           // --max-path-length, --max-path-depth
  std::string metrics;              // --metrics ADDR:PORT (Prometheus over HTTP); empty: off
  // Receive filters (--include, --exclude GLOB, repeatable): a file they refuse is logged,
  // counted and dropped at its announce; it is policy, so nothing goes to the failed folder.
  std::vector<std::string> includes;
  std::vector<std::string> excludes;
  common::PathFilter filter;  // built from them by finalize_receiver_config()
  // --on-complete CMD: run on each delivered file, off the receive path
  // (receiver/delivery/hook_runner.hpp).
  std::string on_complete;             // empty: none
  double on_complete_timeout_s = 300;  // then its process group is killed
  unsigned on_complete_jobs = 1;       // hooks running at once
  common::LogConfig log;
  // Test hook: the writer stalls once for this many seconds after test_stall_after_mb MiB were
  // written (0 = off). Hidden from --help.
  double test_stall_writer_s = 0;
  size_t test_stall_after_mb = 0;
};

// Registers every option on `app`, bound to `cfg`, including --config for a TOML/INI file. The
// parse writes each value into its typed field and refuses a bad one with its one line.
void add_receiver_options(CLI::App& app, ReceiverConfig& cfg);
// After the parse, once: checks what depends on more than one option (the lanes and --lanes,
// --output and --sink, the memory, ...), derives the lanes, the folders, the filter and the keys.
// Throws CLI::ValidationError / CLI::RequiredError with a one-line reason.
void finalize_receiver_config(ReceiverConfig& cfg);

}  // namespace ddft::receiver
