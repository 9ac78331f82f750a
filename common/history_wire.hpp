// The sender's history on the wire (kHistory, type 10): files a sender put wholly on the wire,
// each sent again on a spaced schedule, so that a receiver that was not receiving at the time
// can name what it missed.
//
//  kHistory payload
//  +---------------------------------------------------------------+
//  |                 sender_id (u64; 0: the sender has none)       |  0
//  |                                                               |
//  +-------------------------------+---------------+---------------+
//  |          count (>= 1)         | codec (0 / 1) |     rsvd      |  8
//  +-------------------------------+---------------+---------------+
//  |       raw_len: the entries' bytes (1..kMaxHistoryRaw)         | 12
//  +---------------------------------------------------------------+
//  |  body: codec 0, the entries (raw_len bytes); codec 1, one     | 16
//  |  zstd frame that decompresses to exactly them                 |
//  +---------------------------------------------------------------+
//  each entry, back to back (offsets from its start; 34 bytes + key + path):
//  +---------------------------------------------------------------+
//  |                  session (u64): the session that sent it      |  0
//  |                                                               |
//  +---------------------------------------------------------------+
//  |                            file_id                            |  8
//  +---------------------------------------------------------------+
//  |                          size (u64)                           | 12
//  |                                                               |
//  +---------------------------------------------------------------+
//  |          sent_ns (i64): when its last end went out (wall)     | 20
//  |                                                               |
//  +---------------+---------------+---------------+---------------+
//  | verify (enum) |     lane      |    key_len    |     rsvd      | 28
//  +---------------+---------------+-------------------------------+
//  |           path_len            |                                 32
//  +-------------------------------+-------------------------------+
//  |  key: key_len bytes (digest_size(verify)), then path: path_len| 34
//  |  bytes (1..kMaxPathSize)                                      |
//  +---------------------------------------------------------------+
//  lane: as a file list entry's (0 not said, k + 1 lane k of that session, 0xFF striped).
//
// Sent once per repeat (not control_repeat times: the schedule is the redundancy), FEC-covered
// and sealed like every datagram of the session, on every lane. A receiver before this type
// refuses it (kBadType): it counts it as rejected, and its sequence number as lost.
//
//  kResend payload: the file this session announces next as `file_id` is a copy of the file
//  `of_file_id` of session `of_session` (a resend: --resend-after, --resend-request)
//  +---------------------------------------------------------------+
//  |        file_id: the copy's id in this session                 |  0
//  +---------------------------------------------------------------+
//  |        of_file_id: the file's id where it was first sent      |  4
//  +---------------------------------------------------------------+
//  |        of_session (u64): the session it was first sent in     |  8
//  |                                                               |
//  +---------------+---------------+-------------------------------+
//  | verify (enum) |    key_len    |             rsvd              | 16
//  +---------------+---------------+-------------------------------+
//  |  key: key_len bytes (digest_size(verify)): the file's digest  | 20
//  +---------------------------------------------------------------+
//  Sent control_repeat times just before the copy's announce, on each lane that announces it.
//  A receiver that delivered the file skips the copy without writing it; one that failed or
//  missed it delivers the copy under its name and marks the failure resolved. A receiver before
//  this type refuses it (kBadType) and takes the copy for a new file.
//
// Pure functions over the caller's buffers: no I/O, any thread. A malformed payload is a
// DecodeStatus, and an entry that cannot go on the wire is left out (pack_history()) or makes 0
// bytes (encode_resend()): nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/file_identity.hpp"
#include "common/protocol.hpp"

namespace ddft::common {

inline constexpr size_t kHistoryFixedSize = 16;
inline constexpr size_t kHistoryEntryFixedSize = 34;
// The most entry bytes one kHistory datagram may decompress to.
inline constexpr size_t kMaxHistoryRaw = size_t{256} << 10;
inline constexpr uint8_t kHistoryRaw = 0;
inline constexpr uint8_t kHistoryZstd = 1;

// One file of the history.
struct HistoryRecord {
  FileIdentity file;  // session, file id, path, size, verify and digest (hex) as sent
  int64_t sent_ns = 0;
  int lane = kLaneUnsaid;  // the lane that carried it, kLaneAll, or kLaneUnsaid

  bool operator==(const HistoryRecord&) const = default;
};

struct HistoryBundle {
  uint64_t sender_id = 0;
  std::vector<HistoryRecord> records;
};

// A kHistory payload of records[0..], as many as fit in `max_payload` bytes once compressed
// (codec 1, or codec 0 when compression does not shrink them): *taken says how many. Empty (and
// *taken 0) when `records` is empty or records[0] cannot go on the wire (its path empty or
// longer than kMaxPathSize, its digest not digest_size(verify) bytes of hex, or too long for
// `max_payload`). Wrap it in a datagram with encode_payload().
std::vector<uint8_t> pack_history(uint64_t sender_id, std::span<const HistoryRecord> records,
                                  size_t max_payload, size_t* taken);
// The fields of a kResend datagram.
struct Resend {
  uint32_t file_id = 0;
  FileIdentity of;  // session, file id, verify and digest (hex) of the first send; no path/size
};
inline constexpr size_t kResendFixedSize = 20;
// One whole kResend datagram into `buf`; 0 when it does not fit, or the digest is not
// digest_size(verify) bytes of hex.
size_t encode_resend(const Header& h, const Resend& r, std::span<uint8_t> buf);
// Checks a known verify and key_len == digest_size(verify); bytes after the key are ignored.
[[nodiscard]] DecodeStatus decode_resend(std::span<const uint8_t> payload, Resend* out);

// Checks the header (count >= 1, a known codec, raw_len 1..kMaxHistoryRaw), that the body is
// (or decompresses to) exactly raw_len bytes, and that `count` entries fill them, each with a
// known verify, key_len == digest_size(verify) and path_len 1..kMaxPathSize. Unknown bits and
// reserved bytes are ignored. On kOk, *out holds the bundle.
[[nodiscard]] DecodeStatus decode_history(std::span<const uint8_t> payload, HistoryBundle* out);

}  // namespace ddft::common
