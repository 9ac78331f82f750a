// The sender's numbers: a session's totals, and the live counters --metrics and the progress
// display read while it runs.
//
// SendTotals is a plain value. SendStatus's atomics are written by the transmit threads (relaxed,
// no lock) and read by any thread; the program owns the one SendStatus its Senders share.
#pragma once

#include <atomic>
#include <cstdint>

namespace ddft::sender {

// What one session sent, returned by Sender::run().
struct SendTotals {
  uint64_t files_sent = 0;
  uint64_t files_failed = 0;
  uint64_t bytes = 0;  // file bytes
  uint64_t datagrams = 0;
  uint64_t wire_bytes = 0;
  uint64_t history_bytes = 0;  // of wire_bytes, the history's repeats (kHistory)
  uint64_t session_id = 0;
};

// Live numbers for --metrics, written by the transmit threads (one per lane, adding up) with
// relaxed atomics (no lock on the send path) and read by any thread. Give the same one to every
// Sender of a program: the totals add up over its sessions.
struct SendStatus {
  std::atomic<uint64_t> files_sent{0};
  std::atomic<uint64_t> files_failed{0};  // aborted on the wire, or never read (no file id)
  std::atomic<uint64_t> bytes{0};         // file bytes packetised (every --repeat copy)
  std::atomic<uint64_t> datagrams{0};
  std::atomic<uint64_t> wire_bytes{0};
  std::atomic<uint64_t> history_bytes{0};    // of wire_bytes, the history's repeats
  std::atomic<uint64_t> history_waiting{0};  // history entries due, not sent yet
  // The file being sent (with lanes: the one a lane began or sent a block of last): bytes of it
  // that lane packetised, and its size (0 between files).
  std::atomic<uint64_t> file_bytes{0};
  std::atomic<uint64_t> file_size{0};
  std::atomic<int64_t> last_send_ns{0};  // Clock time of the last batch sent, 0 before
  std::atomic<uint64_t> session_id{0};   // the current session, 0 before the first
  // Lanes of the current session whose links still send (--lane-down continue takes a failed
  // one out); 0 before the first session.
  std::atomic<uint64_t> lanes_up{0};
  std::atomic<uint64_t> lanes_up_mask{0};  // the same, bit k for lane k
  // Files that could not be opened or read to their end (since the program started), and files
  // left out by rule (a path too long for the wire; a hot folder counts its own).
  std::atomic<uint64_t> read_failures{0};
  std::atomic<uint64_t> files_refused{0};
  // --compress (sender/read/compressor.hpp): blocks tried and those sent as frames; the bytes of
  // the blocks tried and what they took as data on the wire (frames, and the blocks sent raw).
  std::atomic<uint64_t> compress_blocks{0};
  std::atomic<uint64_t> compress_blocks_compressed{0};
  std::atomic<uint64_t> compress_in_bytes{0};
  std::atomic<uint64_t> compress_out_bytes{0};
};

}  // namespace ddft::sender
