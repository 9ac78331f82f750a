// dd_file_send settings, and the CLI11 options that fill them (also from a --config file).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/block_io.hpp"
#include "common/fec.hpp"
#include "common/logging.hpp"
#include "common/path_filter.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"
#include "sender/channel.hpp"
#include "sender/operations/progress.hpp"
#include "sender/source/file_list.hpp"
#include "sender/source/shard.hpp"

namespace ddft::sender {

enum class ReportOption { kSummary, kVerbose, kNone };  // REPORT_OPTION S, V, N

// --lane-down: what a lane whose link refuses a send (a device error, a UDP error other than a
// full buffer) does to the session.
enum class LaneDownPolicy {
  kStop,      // the session ends (with one lane, always)
  kContinue,  // the lane leaves the rotation, its files in flight fail, the other lanes go on
};

// --compress: off; zstd[:LEVEL] compresses every block; auto[:LEVEL] first tries a sample of each
// block and sends the block raw when the sample does not shrink (sender/read/compressor.hpp).
enum class CompressMode { kOff, kZstd, kAuto };

struct SenderConfig {
  std::vector<std::string> sources;  // files and folders; "dir/" sends the folder's contents only
  common::TransportKind transport = common::TransportKind::kUdp;  // --transport
  // Lanes: one session driven over several links, each its own sink, transmit thread
  // and --rate. Lane 0's link is also in `dest` / `device`, for code that knows of one.
  std::string device;                // lane 0's --device PATH with --transport device
  std::vector<std::string> devices;  // --device, once per lane (--transport device)
  common::Endpoint dest;             // lane 0's destination (--transport udp)
  // Every lane's destination: --dest, once per lane, then with --lanes the ports after the one
  // --dest (finalize_sender_config()).
  std::vector<common::Endpoint> dests;
  size_t lanes_opt = 0;  // --lanes N: ports PORT..PORT+N-1 of the one --dest; 0: not given
  // --stripe-mb: a file larger than this many MiB is striped over every lane (with 2 lanes or
  // more), in 4 MiB ranges (LaneRouter::kStripeUnit); 0: never striped. Not given, with lanes to
  // different hosts (they may end on different receivers, which cannot assemble a striped
  // file): 0, and stripe_note says so for the session's log.
  size_t stripe_mb = 64;
  bool stripe_given = false;
  std::string stripe_note;
  LaneDownPolicy lane_down = LaneDownPolicy::kStop;  // --lane-down
  size_t packet_size = common::kDefaultPacketSize;   // whole datagram, header included
  // MB/s (1 MB = 2^20 bytes) on the wire; 0 = unlimited. The default is safe on loopback on a
  // 2-core machine (docs/performance.md) and well under a 10 Gb/s diode's line rate.
  double rate_mb = 250;
  common::VerifyType verify = common::VerifyType::kB2B;  // --verify
  unsigned control_repeat = 3;  // copies of each announce / end / abort / list / heartbeat
  common::FecParams fec;        // --fec K:M, --fec-interleave D; off by default
  unsigned repeat = 1;          // --repeat N: each file sent N times
  // The id of the session's first file (common::next_file_id() numbers the rest). Not an
  // option: 1 in every run; tests start near the wrap.
  uint32_t first_file_id = 1;
  // The sender's identity on the wire (kSenderInfo); 0: none. From --sender-id, or kept in
  // --state-dir (sender/source/history.hpp).
  uint64_t sender_id = 0;
  std::string state_dir;      // --state-dir: the sender id and the history; "": neither
  double history_hours = 25;  // --history-hours: what the history keeps
  size_t history_mb = 64;     // --history-mb: and how big it may grow
  // --resend-request FILE: send again exactly the files it names
  // (sender/source/resend_request.hpp).
  std::string resend_request;
  // --resend-after: each file sent goes again after each of these
  // (sender/source/resend_schedule.hpp).
  std::vector<std::chrono::seconds> resend_after;
  // --history-repeat: when each file of the history goes on the wire again after it was sent
  // (sender/source/history_feed.hpp); empty ("none"): never.
  std::vector<std::chrono::seconds> history_repeats{std::chrono::minutes(1),
                                                    std::chrono::minutes(10), std::chrono::hours(1),
                                                    std::chrono::hours(6), std::chrono::hours(24)};
  CompressMode compress = CompressMode::kOff;  // --compress MODE[:LEVEL]
  int compress_level = 1;                      // zstd's level, 1..19 (docs/compression.md)
  unsigned compress_workers = 0;  // --compress-workers: dd-zstdN threads; 0 = one per core
  size_t read_block_kb = 1024;    // reader block size
  size_t read_buffers =
      common::kDefaultReadBuffers;  // blocks in the reader's pool (back-pressure bound)
  unsigned readers = 1;             // IO threads reading (1: the reader thread itself)
  unsigned read_queue_depth = common::kDefaultReadQueueDepth;  // reads in flight per reader
  size_t socket_buffer_mb = 32;                                // SO_SNDBUF request
  size_t batch = 32;                                           // datagrams per sendmmsg
  // --gso auto: UDP segmentation offload when the kernel takes it (common/udp_transport.hpp).
  bool gso = true;
  unsigned heartbeat_ms = 1000;     // heartbeat when idle
  unsigned buff_full_delay_ms = 1;  // BUFF_FULL_DELAY: wait before retrying a full link buffer
  // DFTS pacing (seed 004); all off by default for dd_file_send itself.
  unsigned intra_pkt_interval = 0;  // INTRA_PKT_INTERVAL
  unsigned intra_pkt_delay_ms = 0;  // INTRA_PKT_DELAY
  unsigned fs_interval_mb = 0;      // -fsinterval
  unsigned fs_delay_ms = 0;         // -fsdelay
  bool sleep_alg = false;           // --sleep-alg on, -NOSLEEPALG off
  unsigned eof_delay_ms = 0;        // EOF_DELAY
  bool file_lock = false;           // FILE_LOCK=Y: shared lock on each source while it is read
  double lock_timeout_s = 30;       // how long FILE_LOCK waits for a writer's lock
  std::string key_file;             // --key-file: seal every datagram (common/seal.hpp)
  bool auth_only = false;           // --auth-only: authenticate, do not encrypt
  std::optional<common::Key> key;   // loaded by finalize_sender_config()
  ReportOption report = ReportOption::kSummary;  // --report S|V|N, either case
  size_t report_mb = 100;  // REPORT_OPTION V: a progress line every this many MB
  std::string metrics;     // --metrics ADDR:PORT (Prometheus over HTTP); empty: off
  common::LogConfig log;
  // --progress auto|on|off (sender/operations/progress.hpp).
  ProgressMode progress = ProgressMode::kAuto;
  std::string manifest;  // --manifest FILE: JSON lines (sender/operations/manifest.hpp)
  // Hot folder (--watch, sender/source/hot_folder.hpp) and the globs of both modes.
  std::string watch_dir;  // --watch DIR: send what lands there; no sources then
  // --channel (sender/channel.hpp): the channels, each its own hot folder or sources, instead of
  // --watch or the sources; empty without channels.
  std::vector<ChannelSpec> channels;
  std::string sent_dir;               // --sent-dir: move sent files there (default: delete)
  double sent_keep_hours = 0;         // --sent-keep-hours: prune sent_dir past this; 0: never
  double sent_keep_gb = 0;            // --sent-keep-gb: and past this size; 0: no bound
  double settle_s = 5;                // --settle: seconds a file must stay unchanged
  std::string watch_journal;          // --watch-journal (default DIR/.ddft-watch-journal)
  std::vector<std::string> includes;  // --include GLOB
  std::vector<std::string> excludes;  // --exclude GLOB
  common::PathFilter filter;          // built from both by finalize_sender_config()
  Shard shard;                        // --shard K/N; not given: not sharded
  // --symlinks: links inside the folders sent (sender/source/file_list.hpp); the hot folder never
  // follows one (follow is refused with --watch).
  SymlinkMode symlinks = SymlinkMode::kSkip;
  // Test hook: SIGKILL itself after this many hot-folder "sent" records, before removing the
  // file (the restart path, for real). 0 = off. Hidden from --help.
  unsigned test_crash_after_sent = 0;
  // Test hook: the data packet with this 0-based index in the session (in each lane, counted per
  // lane) is built and given its sequence number but not sent, as if the link lost it. -1 = off.
  // Hidden from --help.
  long long test_drop_data = -1;

  // Whether the session sends hot folders (--watch, or channels with watch=): open-ended.
  bool hot_folder() const {
    return !watch_dir.empty() || (!channels.empty() && !channels.front().watch_dir.empty());
  }
  // The lanes of the session: --dest (or --device) given several times, or --lanes. At least 1,
  // also for a config never finalized (tests).
  size_t lanes() const;
  // For each lane k of lanes(), the lowest lane whose destination is on lane k's host (the same
  // --dest address; each device lane is a host of its own): what kSenderInfo tells receivers.
  std::vector<uint8_t> lane_hosts() const;
  // How the logs name lane `i` (< lanes()): "127.0.0.1:5000", "device /dev/x".
  std::string lane_name(size_t i) const;
};

// The longest datagram but parity: the packet size, less with FEC the room the parity header
// needs (a parity datagram carries a whole source datagram and must fit the packet size too),
// less with --key-file the seal's trailer (salt and tag).
size_t source_datagram_size(const SenderConfig& cfg);
// Data bytes per data packet: a source datagram less its headers.
size_t data_chunk_size(const SenderConfig& cfg);

// Registers every option on `app`, bound to `cfg`, including --config for a TOML/INI file. The
// parse writes each value into its typed field and refuses a bad one with its one line.
void add_sender_options(CLI::App& app, SenderConfig& cfg);

// --channel (sender/channel_config.cpp), in `group` of the help.
void add_channel_option(CLI::App& app, SenderConfig& cfg, const std::string& group);
// Checks the channels together and against --watch, the sources and the options that cannot go
// with them. Throws CLI::ValidationError with a one-line reason.
void finalize_channel_config(SenderConfig& cfg);

// After the parse, once: checks what depends on more than one option (the lanes and --lanes,
// --watch and the sources, --compress and the block size, ...), derives the lanes, the filter
// and the key. Throws CLI::ValidationError / CLI::RequiredError with a one-line reason.
void finalize_sender_config(SenderConfig& cfg);

// Rewrites DFTS's single-dash spellings, as owlDftsSend passes them, into this program's options:
// "-fsinterval N" (and seed 004's typo "-fsinternal N") -> "--fsinterval N", "-fsdelay N" ->
// "--fsdelay N", "-NOSLEEPALG" -> "--no-sleep-alg". Everything after "--" is left alone.
std::vector<std::string> translate_dfts_args(int argc, const char* const* argv);

}  // namespace ddft::sender
