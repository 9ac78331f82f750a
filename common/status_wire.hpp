// The sender's status on the wire: what the low side holds and how it is, carried across the diode
// at the end of each kSenderInfo datagram (common/protocol.hpp: "Bytes after the hosts are
// ignored"), so that receivers that know kSenderInfo but not the status skip it.
//
//  status block (offsets from its start, which is the byte after the kSenderInfo's hosts)
//  +-------------------------------+---------------+---------------+
//  |  status_len: the block's bytes|  format (1)   |  flags        |  0
//  +-------------------------------+---------------+---------------+
//  |  seq: the session's status number (+1 per new status)         |  4
//  +---------------------------------------------------------------+
//  |  interval_s: seconds between two statuses when nothing changes|  8
//  +---------------------------------------------------------------+
//  |  oldest_wait_s: how long the oldest file waiting has waited   | 12
//  +---------------------------------------------------------------+
//  |  queued_files (u64): files waiting to be sent                 | 16
//  |  queued_bytes (u64): their bytes                              | 24
//  |  read_failures (u64): files it could not read since it started| 32
//  |  files_refused (u64): files it left out since it started      | 40
//  |  retention_bytes (u64): what its retention folder holds       | 48
//  |  retention_limit (u64): --sent-keep-gb in bytes, 0 none       | 56
//  |  watch_free (u64), watch_size (u64): the watched folder's     | 64
//  |      file system (size 0: no hot folder)                      |
//  |  retention_free (u64), retention_size (u64): the retention    | 80
//  |      folder's file system (size 0: none)                      |
//  |  lanes_up (u64): bit k set while lane k sends                 | 96
//  |  rate_limit (u64): --rate in bytes per second, 0 unlimited    |104
//  +---------------+---------------+-------------------------------+
//  |  version_len  | channel_count |  version: version_len bytes,  |112
//  +---------------+---------------+  then the channels            |
//  each channel (21 bytes + name): name_len (u8, 1..64), queued_files (u64), queued_bytes (u64),
//  oldest_wait_s (u32), name (name_len bytes)
//
// flags bit 0 (kStatusHotFolder): the sender watches a hot folder (the queue is its backlog);
// bit 1 (kStatusChannelsCut): the sender has more channels than fitted the datagram.
// A later format only adds fields after the channels, inside status_len: a reader takes the fields
// it knows and skips to status_len. Every copy of a status (control_repeat, every lane) has the
// same seq; a receiver takes a status once, the first time it sees a seq above the last.
//
// Pure functions over the caller's buffers: no I/O, any thread; nothing thrown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/protocol.hpp"

namespace ddft::common {

inline constexpr size_t kStatusFixedSize = 114;
inline constexpr size_t kStatusChannelFixedSize = 21;
inline constexpr size_t kMaxStatusVersion = 32;
inline constexpr uint8_t kStatusFormat = 1;
inline constexpr uint8_t kStatusHotFolder = 1;
inline constexpr uint8_t kStatusChannelsCut = 2;
// How often a sender sends its status when nothing that matters changes.
inline constexpr uint32_t kStatusIntervalS = 10;

struct SenderStatusChannel {
  std::string name;
  uint64_t queued_files = 0;
  uint64_t queued_bytes = 0;
  uint32_t oldest_wait_s = 0;
  bool operator==(const SenderStatusChannel&) const = default;
};

struct SenderStatus {
  uint32_t seq = 0;
  uint32_t interval_s = kStatusIntervalS;
  bool hot_folder = false;
  bool channels_cut = false;
  uint32_t oldest_wait_s = 0;
  uint64_t queued_files = 0;
  uint64_t queued_bytes = 0;
  uint64_t read_failures = 0;
  uint64_t files_refused = 0;
  uint64_t retention_bytes = 0;
  uint64_t retention_limit = 0;
  uint64_t watch_free = 0;
  uint64_t watch_size = 0;
  uint64_t retention_free = 0;
  uint64_t retention_size = 0;
  uint64_t lanes_up = 0;
  uint64_t rate_limit = 0;
  std::string version;  // at most kMaxStatusVersion bytes
  std::vector<SenderStatusChannel> channels;
  bool operator==(const SenderStatus&) const = default;
};

// What a receiver warns of, and a sender sends at once as it changes.
inline constexpr uint32_t kBacklogWarnS = 600;  // the oldest file waiting has waited this long
inline constexpr double kLowFreeRatio = 0.10;   // a file system with less free than this
struct StatusAlarms {
  bool backlog = false;        // oldest_wait_s >= kBacklogWarnS
  bool watch_low = false;      // the watched file system below kLowFreeRatio free
  bool retention_low = false;  // the retention folder's file system below kLowFreeRatio free
  // retention_bytes above a limit: pruning cannot keep the folder to it (files too young to go)
  bool retention_full = false;
  bool operator==(const StatusAlarms&) const = default;
};
StatusAlarms status_alarms(const SenderStatus& s);

// Writes `s` into `out`: the fixed part and the version, then as many channels as fit (in order;
// when some do not, kStatusChannelsCut is set). Returns the bytes written, or 0 when not even the
// fixed part and the version fit, or the version is longer than kMaxStatusVersion, or a channel's
// name is empty or longer than 64 bytes.
size_t encode_sender_status(const SenderStatus& s, std::span<uint8_t> out);

// Reads a status block from `tail` (the bytes after a kSenderInfo's hosts). kBadPayload when the
// block is shorter than its status_len says, status_len is shorter than its fields, or a channel
// entry does not fit; on kOk, *out holds it (and bytes past its fields within status_len were
// skipped).
[[nodiscard]] DecodeStatus decode_sender_status(std::span<const uint8_t> tail, SenderStatus* out);

}  // namespace ddft::common
