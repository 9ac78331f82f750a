// The sender pipeline.
//
//   sources ──> [reader thread "dd-read"] ──(bounded queue of WorkItem, slot handles)──>
//               reads blocks into a         blocks when full: back-pressure
//               recycled buffer pool,
//               hashes them (B2B/SHA256)
//
//   ──> [transmit thread "dd-tx"] ──> DatagramSink (UDP sendmmsg / device)
//        packetises into a batch arena, paces (token bucket on absolute deadlines),
//        repeats control packets, sends heartbeats when idle, returns buffers to the pool
//
// Every file is: announce x N, data..., end x N (with the digest), or abort x N when the file
// could not be read to its end; with --repeat R, all of that R times (copies), the file read
// again for each. Among its data, after every max(1 MiB, 1024 x announce size) bytes of a copy,
// one repeated announce (kFlagRepeat; at most 1/1024 of the bytes) for a receiver that joined
// mid-file. With --fec, parity packets follow every window of packets and close it at the end of
// each file. Heartbeats go out when idle and between files. Every 5 s or 256 finished files, a
// file list x N names the files finished or aborted since the last one (their digests
// included). The session closes with its complete file list x N (or, past 100,000 files or in a
// hot folder, the files since the last list) and a final heartbeat x N.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/file_list.hpp"
#include "sender/send_status.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

// Runs one sending session over `sink`: every file of `files`, then the final heartbeat.
// `clock` paces; both must outlive the call. Thread-safe to construct; run() once.
class Sender {
 public:
  Sender(const SenderConfig& cfg, common::DatagramSink& sink, common::Clock& clock);
  // `o` hears of every file (from the transmit thread); it must outlive run(). Before run().
  void add_observer(SendObserver* o) { observers_.add(o); }
  // Sends every file `files` gives until it gives none; returns then or when `stop` is requested
  // (the file in progress is then aborted on the wire). Files that could not be read are counted
  // in files_failed.
  SendTotals run(FileSource& files, std::stop_token stop);
  SendTotals run(const std::vector<SourceFile>& files, std::stop_token stop);
  uint64_t session_id() const { return session_id_; }
  // Publishes this session's numbers into `status` (must outlive run()). Call before run().
  void set_status(SendStatus* status) { status_ = status; }

 private:
  const SenderConfig& cfg_;
  common::DatagramSink& sink_;
  common::Clock& clock_;
  uint64_t session_id_;
  ObserverList observers_;
  SendStatus* status_ = nullptr;
};

// The reader's block size: --read-block-kb rounded down to whole data chunks, so that no data
// packet spans two blocks (at least one chunk).
size_t reader_block_size(const SenderConfig& cfg);

// A random 64-bit session id (never 0).
uint64_t new_session_id();

}  // namespace ddft::sender
