// dd_file_send settings, and the CLI11 options that fill them (also from a --config file).
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/logging.hpp"
#include "common/protocol.hpp"
#include "common/transport.hpp"

namespace ddft::sender {

struct SenderConfig {
  std::vector<std::string> sources;  // files and folders; "dir/" sends the folder's contents only
  common::Endpoint dest;
  std::string dest_text;
  size_t packet_size = common::kDefaultPacketSize;  // whole datagram, header included
  // MB/s (1 MB = 2^20 bytes) on the wire; 0 = unlimited. The default is safe on loopback on a
  // 2-core machine (measured loss-free up to 500) and well under a 10 Gb/s diode's line rate.
  double rate_mb = 250;
  common::VerifyType verify = common::VerifyType::kB2B;
  std::string verify_text = "b2b";
  unsigned control_repeat = 3;        // copies of each announce / end / abort / final heartbeat
  size_t read_block_kb = 1024;        // reader block size
  size_t read_buffers = 16;           // blocks in the reader's pool (back-pressure bound)
  size_t socket_buffer_mb = 32;       // SO_SNDBUF request
  size_t batch = 32;                  // datagrams per sendmmsg
  unsigned heartbeat_ms = 1000;       // heartbeat when idle
  unsigned buff_full_delay_ms = 1;    // wait before retrying when the link buffer is full
  common::LogConfig log;
  // Test hook: the data packet with this 0-based index in the session is built and given its
  // sequence number but not sent, as if the link lost it. -1 = off. Hidden from --help.
  long long test_drop_data = -1;
};

// Registers every option on `app`, bound to `cfg`, including --config for a TOML/INI file.
void add_sender_options(CLI::App& app, SenderConfig& cfg);

// Checks and derives fields after parsing. Throws CLI::ValidationError with a one-line reason.
void finalize_sender_config(SenderConfig& cfg);

}  // namespace ddft::sender
