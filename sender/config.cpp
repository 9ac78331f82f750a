#include "sender/config.hpp"

#include <fmt/format.h>

namespace ddft::sender {

void add_sender_options(CLI::App& app, SenderConfig& cfg) {
  app.set_config("--config", "", "Read options from this file (TOML or INI, option = value)");
  // A misspelt setting must stop the program, not be silently ignored.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("sources", cfg.sources,
                 "Files and folders to send; a folder is sent recursively under its own name, "
                 "'folder/' sends only its contents")
      ->required();
  app.add_option("--dest,-d", cfg.dest_text, "Receiver address HOST:PORT (simulator mode, UDP)")
      ->required();
  app.add_option("--packet-size", cfg.packet_size,
                 "Datagram size in bytes, header included (default fits a 9000-byte MTU)")
      ->check(CLI::Range(common::kMinPacketSize, common::kMaxDatagramSize))
      ->capture_default_str();
  app.add_option("--rate", cfg.rate_mb,
                 "Rate limit in MB/s on the wire (1 MB = 1,048,576 bytes); 0 = unlimited, which loses "
                 "packets whenever the receiver cannot keep up")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--verify", cfg.verify_text, "File verification: b2b (XXH3-128), sha256, none")
      ->check(CLI::IsMember({"b2b", "sha256", "none"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--control-repeat", cfg.control_repeat,
                 "Copies sent of each announce and end packet")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--read-block-kb", cfg.read_block_kb, "Reader block size in KiB")
      ->check(CLI::Range(size_t{4}, size_t{65536}))
      ->capture_default_str();
  app.add_option("--read-buffers", cfg.read_buffers, "Reader blocks in flight")
      ->check(CLI::Range(size_t{2}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--socket-buffer-mb", cfg.socket_buffer_mb, "Socket send buffer to ask for, MiB")
      ->check(CLI::Range(size_t{0}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--batch", cfg.batch, "Datagrams per sendmmsg call")
      ->check(CLI::Range(size_t{1}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--heartbeat-ms", cfg.heartbeat_ms, "Heartbeat interval when idle, ms")
      ->check(CLI::Range(10u, 3600000u))
      ->capture_default_str();
  app.add_option("--buff-full-delay", cfg.buff_full_delay_ms,
                 "ms to wait when the link buffer is full before retrying (BUFF_FULL_DELAY)")
      ->capture_default_str();
  app.add_option("--log-file", cfg.log.log_file, "Also write the log to this file");
  app.add_flag("--verbose,-v", cfg.log.verbose, "Debug lines too");
  app.add_flag("--quiet,-q", cfg.log.quiet, "No console output");
  app.add_option("--test-drop-data", cfg.test_drop_data)->group("");
}

void finalize_sender_config(SenderConfig& cfg) {
  std::string error;
  if (!common::parse_endpoint(cfg.dest_text, &cfg.dest, &error)) {
    throw CLI::ValidationError("--dest", error);
  }
  if (cfg.dest.port == 0) throw CLI::ValidationError("--dest", "port 0 is not a destination");
  if (!common::parse_verify_type(cfg.verify_text, &cfg.verify)) {
    throw CLI::ValidationError("--verify", "expected b2b, sha256 or none");
  }
  if (cfg.packet_size < common::kHeaderSize + common::kDataHeaderSize + 1) {
    throw CLI::ValidationError("--packet-size", "too small to carry data");
  }
}

}  // namespace ddft::sender
