// The ddft wire format: every datagram that crosses the diode, defined once.
//
// All integers are little-endian and written byte by byte (never by casting a struct), so the
// format does not depend on the host's endianness, alignment or padding.
//
// Datagram = header (32 bytes) + payload (payload_len bytes). Nothing follows the payload (a
// sealed datagram's trailer is part of its payload: drawn below).
//
//   0               1               2               3
//   0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7 0 1 2 3 4 5 6 7
//  +---------------------------------------------------------------+
//  |                 magic "DDFT" (0x54464444)                     |  0
//  +---------------+---------------+-------------------------------+
//  |    version    |     type      |          payload_len          |  4
//  +---------------+---------------+-------------------------------+
//  |                   session_id (u64, random per sender start)   |  8
//  |                                                               |
//  +---------------------------------------------------------------+
//  |              seq (u64, +1 per datagram of the session)        | 16
//  |                                                               |
//  +-------------------------------+-------------------------------+
//  |            flags              |   fec_pos (0 without FEC)     | 24
//  +-------------------------------+-------------------------------+
//  |   checksum: low 32 bits of XXH3_64(payload, seed=XXH3_64(     | 28
//  |             header bytes 0..27))                              |
//  +---------------------------------------------------------------+
//
// flags bit 0 (kFlagFec): the datagram is a source of a forward-error-correction window and
// fec_pos is its place in that window: the window starts at seq - fec_pos. Parity datagrams
// (kParity) follow each window; they take sequence numbers but no window place.
// flags bits 1 and 2 (kFlagAuth, kFlagEncrypt): the datagram is sealed with a key
// (--key-file): the trailer is drawn below, common/seal.hpp says what the tag covers. A sealed
// datagram's checksum covers its header only (as if its payload were empty): the tag covers every
// bit. flags bit 3 (kFlagRepeat), on an announce only: a repeated announce, sent once mid-file
// after every R bytes of the file's data (per copy), R = max(1 MiB, 1024 x the announce datagram's
// size), so that a receiver that joined mid-file can name the file whose data follows. Same
// fields as the file's first announce but pause_s = 0. Costs at most 1/1024 of the file's bytes;
// a file of R bytes or fewer gets none; never before the file's first data packet or after its
// end.
//
// The checksum covers the header and the payload, so a datagram damaged anywhere is dropped and
// never written; the file hash (B2B) then still covers the file end to end.
//
// Payloads by type. Offsets are from the start of the payload (add 32 for the datagram); a field
// wider than its box continues on the next row; "rsvd" bytes are sent as zero and ignored.
//
//  kAnnounce (type 1): a file begins
//  +---------------------------------------------------------------+
//  |                            file_id                            |  0
//  +---------------+---------------+-------------------------------+
//  | verify (enum) |    pause_s    |            path_len           |  4
//  +---------------+---------------+-------------------------------+
//  |                          size (u64)                           |  8
//  |                                                               |
//  +---------------------------------------------------------------+
//  |                 mtime_ns (i64, ns since the epoch)            | 16
//  |                                                               |
//  +---------------------------------------------------------------+
//  |                         mode (st_mode)                        | 24
//  +---------------------------------------------------------------+
//  |                           chunk_size                          | 28
//  +---------------------------------------------------------------+
//  |  path: path_len bytes (1..kMaxPathSize), UTF-8, '/'-separated | 32
//  |  and relative, no NUL; the payload ends with it               |
//  +---------------------------------------------------------------+
//
//  kData (type 2): chunk_size bytes of a file (the last chunk fewer)
//  +---------------------------------------------------------------+
//  |                            file_id                            |  0
//  +---------------+-----------------------------------------------+
//  |     copy      |                     rsvd                      |  4
//  +---------------+-----------------------------------------------+
//  |                   offset (u64, in the file)                   |  8
//  |                                                               |
//  +---------------------------------------------------------------+
//  |  data: payload_len - 16 bytes                                 | 16
//  +---------------------------------------------------------------+
//
//  kEnd (type 3): a file (or one copy of it) ends
//  +---------------------------------------------------------------+
//  |                            file_id                            |  0
//  +---------------+---------------+---------------+---------------+
//  | verify (enum) |    key_len    |     copy      |    copies     |  4
//  +---------------+---------------+---------------+---------------+
//  |                          size (u64)                           |  8
//  |                                                               |
//  +---------------------------------------------------------------+
//  |  key: key_len bytes = digest_size(verify), the full digest    | 16
//  +---------------------------------------------------------------+
//
//  kAbort (type 4): the sender gave a file up
//  +---------------------------------------------------------------+
//  |                            file_id                            |  0
//  +-------------------------------+-------------------------------+
//  |   reason_len (<= 512)         |             rsvd              |  4
//  +-------------------------------+-------------------------------+
//  |  reason: reason_len bytes, UTF-8                              |  8
//  +---------------------------------------------------------------+
//
//  kHeartbeat (type 5): payload exactly 24 bytes
//  +---------------------------------------------------------------+
//  |  flags (bit 0 kHeartbeatFinal: finished; bit 1                |  0
//  |  kHeartbeatSleeping: sent in a DFTS sleep; the others are 0)  |
//  +---------------------------------------------------------------+
//  |                          interval_ms                          |  4
//  +---------------------------------------------------------------+
//  |                     packets_sent (u64)                        |  8
//  |                                                               |
//  +---------------------------------------------------------------+
//  |                        files_announced                        | 16
//  +-------------------------------+-------------------------------+
//  |     lane (0-based)            |  lanes (0 from a sender before| 20
//  |                               |  lanes: read as 1)            |
//  +-------------------------------+-------------------------------+
//  lane / lanes: the sender drives `lanes` links as one session (--dest given several times);
//  this heartbeat went down its lane number `lane`. Every lane has its own seq numbering, FEC
//  windows, heartbeats and (sealed) its own salt, so its own key and replay window.
//
//  kParity (type 6): one Reed-Solomon parity shard of an FEC window
//  +---------------------------------------------------------------+
//  |                       window_seq (u64)                        |  0
//  |                                                               |
//  +-------------------------------+---------------+---------------+
//  |             count             |       k       |       m       |  8
//  +---------------+---------------+---------------+---------------+
//  |  interleave   |     group     |     index     |     rsvd      | 12
//  +---------------+---------------+---------------+---------------+
//  |  shard: payload_len - 16 bytes (at least 1)                   | 16
//  +---------------------------------------------------------------+
//
//  kFileList (type 7): files of the session, `count` entries back to back that fill the payload
//  +-------------------------------+-------------------------------+
//  |  flags (bit 0 kListComplete)  |          count (>= 1)         |  0
//  +-------------------------------+-------------------------------+
//  |                              rsvd                             |  4
//  +---------------------------------------------------------------+
//  |  entries                                                      |  8
//  +---------------------------------------------------------------+
//  each entry (offsets from its start; 18 bytes + key + path):
//  +---------------------------------------------------------------+
//  |                            file_id                            |  0
//  +---------------------------------------------------------------+
//  |                          size (u64)                           |  4
//  |                                                               |
//  +---------------+---------------+---------------+---------------+
//  | verify (enum) | entry_flags   |    key_len    |     lane      | 12
//  +---------------+---------------+---------------+---------------+
//  |           path_len            |                                 16
//  +-------------------------------+-------------------------------+
//  |  key: key_len bytes, then path: path_len bytes (1..kMaxPath-  | 18
//  |  Size); the next entry follows at once                        |
//  +---------------------------------------------------------------+
//  entry_flags bit 0 kListAborted: the sender aborted the file; bit 1 kListResend: the file is a
//  resend, a copy of one sent before (which its own entry names). key_len is digest_size(verify),
//  or 0 when the file was aborted or verify is NONE. lane: which of the session's lanes carried
//  the file: 0 not said (a sender before lanes), k + 1 lane k, 0xFF striped over every lane.

//
//  kZData (type 8): one piece of a compressed block of a file (--compress)
//  +---------------------------------------------------------------+
//  |                            file_id                            |  0
//  +---------------+---------------+-------------------------------+
//  |     copy      |  codec (1)    |             rsvd              |  4
//  +---------------+---------------+-------------------------------+
//  |        offset (u64, in the file: where the block's bytes go)  |  8
//  |                                                               |
//  +---------------------------------------------------------------+
//  |          raw_len: the block's bytes, 1..kMaxZBlockSize        | 16
//  +---------------------------------------------------------------+
//  |          frame_len: the compressed frame's bytes, 1..raw_len  | 20
//  +---------------------------------------------------------------+
//  |          frame_off: this piece's place in the frame           | 24
//  +---------------------------------------------------------------+
//  |  piece: payload_len - 28 bytes of the frame                   | 28
//  +---------------------------------------------------------------+
//  A block is raw_len bytes of the file from offset (a multiple of the announce's chunk_size;
//  raw_len a multiple of it too, but for the block that ends the file), compressed as one
//  frame (codec 1: a zstd frame with its content checksum) and cut into pieces of
//  zdata_piece_size(chunk_size) bytes (the last one fewer), each at frame_off, a multiple of
//  that size. The receiver gathers a block's pieces (from any copy: a block's frame is the same
//  in every copy), decompresses it to exactly raw_len bytes and takes those as the data packets
//  of its chunks: the end's digest is of the file's own bytes. A block that does not shrink by
//  kZMinSaving goes as kData packets; one file mixes both.
//
//  kSenderInfo (type 9): who the sender is and where its lanes go
//  +---------------------------------------------------------------+
//  |                 sender_id (u64; 0: the sender has none)       |  0
//  |                                                               |
//  +-------------------------------+-------------------------------+
//  |     lanes (1..kMaxLanes)      |             rsvd              |  8
//  +-------------------------------+-------------------------------+
//  |  host: `lanes` bytes; host[k] is the lowest lane number whose | 12
//  |  destination is on lane k's host (so host[k] <= k)            |
//  +---------------------------------------------------------------+
//  Then the sender's status (common/status_wire.hpp; a reader that does not know it ignores it).
//  On every lane, FEC-covered, sealed: control_repeat times with the session's first heartbeat
//  and every kSenderInfoIntervalS, once every kStatusIntervalS and on a change that matters. A
//  receiver draining some lanes of a host learns from it which of the sender's lanes went to that
//  host unheard. A receiver before this type refuses it (kBadType): rejected, its seq lost.
//
//  kHistory (type 10): files the sender sent earlier, repeated on a schedule, and kResend
//  (type 11): the file announced next is a copy of one sent earlier; both drawn in
//  common/history_wire.hpp.
//
// A sealed datagram (--key-file, flags kFlagAuth, see common/seal.hpp for the keys and what the
// tag covers): the inner datagram's payload (the "body", encrypted with kFlagEncrypt) is
// followed by a 32-byte trailer that payload_len counts:
//  +---------------------------------------------------------------+
//  |  header (32 bytes; payload_len = body + 32; checksum over     |  0
//  |  the header only)                                             |
//  +---------------------------------------------------------------+
//  |  body: payload_len - 32 bytes                                 | 32
//  +---------------------------------------------------------------+
//  |  salt (16 bytes: session start_ns u64 | 8 random bytes)       | 32 + body
//  +---------------------------------------------------------------+
//  |  tag (16 bytes: the AES-256-GCM tag)                          | 48 + body
//  +---------------------------------------------------------------+
//
// The file list (kFileList): the files of the session that were announced on the wire and are
// finished (their end sent, with the digest of their end packet) or aborted; files that could
// not be read never get an announce and are not listed. Sent like announces (each datagram
// control_repeat times, FEC-covered, sealed): every 5 s or 256 finished files, whichever comes
// first, the files finished since the previous list (flags 0); at the end of a session, before
// its final heartbeat, the complete list (kListComplete) when the session finished at most
// 100,000 files, else again only those since the previous list. A list longer than one datagram
// is split over several, each self-contained.
//
// FEC (--fec K:M, --fec-interleave D): a window is `count` (at most K x D) consecutive source
// datagrams from window_seq on. Source number p of the window belongs to group p % D, as that
// group's member p / D; each group is K shards (members past the window's end are zeros) plus M
// Reed-Solomon parity shards. A shard is a whole source datagram, zero-padded to the longest of
// its group; a rebuilt datagram's own header gives its length and its checksum proves it.
// copy / copies (--repeat N): a file sent N times; copy is 0-based, copies is N (0 means 1).
//
// Lanes (--dest several times): whole files go down one lane each. A file over --stripe-mb is
// striped: its announce (with kFlagStriped, flags bit 4) and its end go down every lane of the
// session, and each range of its data (at most 4 MiB: the sender's choice, which a receiver does
// not depend on) down one of them; the end's digest is of the whole file, in file order, as for
// any other file.
//
// Channels (sender --channel): an announce with kFlagChannel (flags bit 6) is of a channel, its
// path's first component ("urgent/report.pdf"); a lane's next announce closes only that
// channel's files before it, so channels interleave. What older receivers do: docs/wire.md.
//
// Data packets of a file carry chunk_size bytes each (the last one fewer) at offsets that are
// multiples of chunk_size, so a receiver can index them with a bitmap.
//
// Encoding and decoding are pure functions over the caller's buffers: no I/O, any thread. A
// datagram that does not decode is a DecodeStatus, never an exception; an encoder given what
// does not fit returns 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/le_bytes.hpp"

namespace ddft::common {

inline constexpr uint32_t kMagic = 0x54464444;  // "DDFT" as bytes in memory order
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kHeaderSize = 32;
inline constexpr size_t kAnnounceFixedSize = 32;
inline constexpr size_t kDataHeaderSize = 16;
inline constexpr size_t kEndFixedSize = 16;
inline constexpr size_t kAbortFixedSize = 8;
inline constexpr size_t kHeartbeatSize = 24;
inline constexpr size_t kParityHeaderSize = 16;
inline constexpr size_t kFileListFixedSize = 8;
inline constexpr size_t kFileListEntryFixedSize = 18;
inline constexpr size_t kZDataHeaderSize = 28;
// kZData codecs.
inline constexpr uint8_t kCodecZstd = 1;
// The largest block a kZData frame may decompress to: what a receiver sets aside per block.
inline constexpr size_t kMaxZBlockSize = size_t{4} << 20;
// A block goes compressed only when its frame saves at least 1/kZMinSavingDiv of it (3.1%).
inline constexpr size_t kZMinSavingDiv = 32;
inline constexpr size_t zdata_frame_limit(size_t raw_len) {
  return raw_len - raw_len / kZMinSavingDiv - 1;
}
// Frame bytes per kZData piece, for an announce's chunk_size (data bytes per kData packet).
inline constexpr size_t zdata_piece_size(size_t chunk_size) {
  return chunk_size - (kZDataHeaderSize - kDataHeaderSize);
}
static_assert(kHeaderSize + kParityHeaderSize == 48);
// A parity datagram is its header and parity header plus a shard as long as the longest source
// datagram of its group: with FEC on, sources are kept this much shorter than the packet size.
inline constexpr size_t kFecOverhead = kHeaderSize + kParityHeaderSize;
inline constexpr uint16_t kFlagFec = 1;
inline constexpr uint16_t kFlagAuth = 2;      // sealed (common/seal.hpp): salt and GCM tag trail
inline constexpr uint16_t kFlagEncrypt = 4;   // sealed, and the payload is encrypted
inline constexpr uint16_t kFlagRepeat = 8;    // a repeated announce, mid-file
inline constexpr uint16_t kFlagStriped = 16;  // an announce: the file is striped over every lane
// An announce: the file is a copy of one sent before (a kResend before it says which).
inline constexpr uint16_t kFlagResend = 32;
inline constexpr uint16_t kFlagChannel = 64;  // an announce: its path's first part is a channel
// The most lanes one session drives (a lane's number fits a file list entry's byte).
inline constexpr size_t kMaxLanes = 64;
// FileListEntry::lane when the entry does not say (a sender before lanes), and when the file was
// striped over every lane.
inline constexpr int kLaneUnsaid = -1;
inline constexpr int kLaneAll = -2;
inline constexpr uint8_t kListStripedByte = 0xFF;
// A file list entry's lane byte for FileListEntry::lane.
inline constexpr uint8_t list_lane_byte(int lane) {
  return lane == kLaneAll ? kListStripedByte : lane < 0 ? 0 : static_cast<uint8_t>(lane + 1);
}
// The trailer of a sealed datagram (kFlagAuth): the session salt, then the GCM tag.
inline constexpr size_t kSaltSize = 16;
inline constexpr size_t kTagSize = 16;
inline constexpr size_t kSealOverhead = kSaltSize + kTagSize;
inline constexpr size_t kMaxKeySize = 32;     // SHA-256
inline constexpr size_t kMaxPathSize = 4096;  // PATH_MAX
inline constexpr size_t kMaxAbortReason = 512;
// UDP payload limit over IPv4; the device transport uses the same bound.
inline constexpr size_t kMaxDatagramSize = 65507;
// Default datagram size: fits one Ethernet frame of a 9000-byte MTU over IPv6 (9000 - 40 - 8)
// and therefore over IPv4 too.
inline constexpr size_t kDefaultPacketSize = 8952;
// Smallest datagram the sender accepts: an announce with a long path must still fit.
inline constexpr size_t kMinPacketSize = 512;
// Smallest chunk (data bytes per data packet) an announce may declare: what the smallest packet
// carries. Bounds the receiver's per-file chunk bitmap.
// With FEC a data packet is kFecOverhead (48) shorter (room for the parity header), and with a
// key kSealOverhead (32) shorter (the seal's salt and tag).
inline constexpr size_t kMinChunkSize =
    kMinPacketSize - kHeaderSize - kDataHeaderSize - kFecOverhead - kSealOverhead;
inline constexpr uint32_t kHeartbeatFinal = 1u;
inline constexpr uint32_t kHeartbeatSleeping = 2u;  // the lane's files wait while these come
inline constexpr size_t kSenderInfoFixedSize = 12;
inline constexpr uint32_t kSenderInfoIntervalS = 30;  // its control_repeat copies' period
// kFileList flags: the list (with the other datagrams of the same list) names every file of the
// session so far; without it, the files finished since the previous list.
inline constexpr uint16_t kListComplete = 1;
// kFileList entry_flags: the sender aborted the file (its key_len is 0).
inline constexpr uint8_t kListAborted = 1;
// kFileList entry_flags: the file is a resend, a copy of one sent before (named on its own).
inline constexpr uint8_t kListResend = 2;

// File ids: a session numbers its files 1, 2, 3 and so on; 0 names no file. Past 2^32 - 1 the
// numbering wraps to 1, never to 0. The id after `id`:
inline constexpr uint32_t next_file_id(uint32_t id) { return id == UINT32_MAX ? 1 : id + 1; }
// Whether file id `a` was numbered before `b`, across a wrap (serial number arithmetic, as in
// RFC 1982: of two ids less than 2^31 apart, the one behind the other came first).
inline constexpr bool file_id_before(uint32_t a, uint32_t b) {
  return a != b && static_cast<uint32_t>(b - a) < (uint32_t{1} << 31);
}

enum class PacketType : uint8_t {
  kAnnounce = 1,
  kData = 2,
  kEnd = 3,
  kAbort = 4,
  kHeartbeat = 5,
  kParity = 6,
  kFileList = 7,
  kZData = 8,
  kSenderInfo = 9,
  kHistory = 10,  // the sender's history: common/history_wire.hpp
  kResend = 11,   // the next file is a copy of one sent before: common/history_wire.hpp
};
// The highest PacketType value; decode_packet() refuses a type above it (kBadType).
inline constexpr uint8_t kMaxPacketType = static_cast<uint8_t>(PacketType::kResend);

// How a file is verified end to end. Values are on the wire.
enum class VerifyType : uint8_t {
  kNone = 0,
  kB2B = 1,     // XXH3-128 of the whole file
  kSha256 = 2,  // SHA-256 of the whole file
};

// Name as printed in the receive log ("B2B Passed") and accepted on the command line (lowercase).
std::string_view verify_type_name(VerifyType v);
// Parses "none", "b2b", "sha256" (any case). Returns false when the text names no type.
[[nodiscard]] bool parse_verify_type(std::string_view text, VerifyType* out);
// Digest length in bytes of a verification type (0 for kNone).
size_t digest_size(VerifyType v);

struct Header {
  uint8_t version = kProtocolVersion;
  PacketType type = PacketType::kHeartbeat;
  uint16_t payload_len = 0;
  uint64_t session_id = 0;
  uint64_t seq = 0;
  uint16_t flags = 0;
  uint16_t fec_pos = 0;  // place in the FEC window when flags has kFlagFec
};

struct Announce {
  uint32_t file_id = 0;
  VerifyType verify = VerifyType::kB2B;
  uint8_t pause_s = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint32_t chunk_size = 0;
  std::string_view path;  // points into the datagram (decode) or the caller's string (encode)
};

struct DataHeader {
  uint32_t file_id = 0;
  uint64_t offset = 0;
  uint8_t copy = 0;  // --repeat: which copy of the file (0-based)
};

// The fields of a kZData datagram (one piece of a compressed block).
struct ZDataHeader {
  uint32_t file_id = 0;
  uint64_t offset = 0;  // of the block in the file
  uint8_t copy = 0;
  uint8_t codec = kCodecZstd;
  uint32_t raw_len = 0;    // the block's bytes
  uint32_t frame_len = 0;  // its compressed frame's bytes
  uint32_t frame_off = 0;  // this piece's place in the frame
};

struct End {
  uint32_t file_id = 0;
  VerifyType verify = VerifyType::kB2B;
  uint64_t size = 0;
  uint8_t key_len = 0;
  uint8_t copy = 0;    // --repeat: which copy this end closes (0-based)
  uint8_t copies = 1;  // --repeat: how many copies the sender sends
  std::array<uint8_t, kMaxKeySize> key{};
};

struct Abort {
  uint32_t file_id = 0;
  std::string_view reason;
};

// The heartbeat interval a receiver assumes for a session until one of its heartbeats gives
// interval_ms (it warns after 3 intervals without a packet).
inline constexpr uint32_t kAssumedHeartbeatMs = 1000;

struct Heartbeat {
  uint32_t flags = 0;
  uint32_t interval_ms = 0;
  uint64_t packets_sent = 0;
  uint32_t files_announced = 0;
  uint16_t lane = 0;   // the lane this heartbeat went down
  uint16_t lanes = 1;  // lanes of the session
};

// The fields of a kSenderInfo datagram.
struct SenderInfo {
  uint64_t sender_id = 0;
  // host[k]: the lowest lane going to lane k's host; one entry per lane of the session.
  std::vector<uint8_t> host;
  std::span<const uint8_t> tail;  // after the hosts (the status): on decode, into the payload
};

struct Parity {
  uint64_t window_seq = 0;
  uint16_t count = 0;
  uint8_t k = 0;
  uint8_t m = 0;
  uint8_t interleave = 1;
  uint8_t group = 0;
  uint8_t index = 0;
};

// One file of a kFileList datagram.
struct FileListEntry {
  uint32_t file_id = 0;
  uint64_t size = 0;
  VerifyType verify = VerifyType::kB2B;
  bool aborted = false;  // kListAborted: the sender aborted the file; key_len is 0
  bool resend = false;   // kListResend: a copy of a file sent before
  uint8_t key_len = 0;   // digest_size(verify), or 0 when aborted or verify is kNone
  std::array<uint8_t, kMaxKeySize> key{};  // the full digest, as in the file's kEnd
  int lane = kLaneUnsaid;  // the lane that carried it (0-based), kLaneAll, or kLaneUnsaid
  std::string_view path;   // points into the datagram (decode) or the caller's string (encode)
};

struct FileList {
  uint16_t flags = 0;                  // kListComplete, or 0; unknown bits are kept and ignored
  std::vector<FileListEntry> entries;  // their paths point into the decoded payload
};

// Why a datagram was rejected. kOk means it was accepted.
enum class DecodeStatus : uint8_t {
  kOk = 0,
  kTooShort,  // shorter than a header
  kBadMagic,
  kBadVersion,
  kBadLength,  // payload_len disagrees with the datagram's length
  kBadChecksum,
  kBadType,
  kBadPayload,  // the payload of a known type is malformed
};
inline constexpr size_t kDecodeStatusCount = 8;
std::string_view decode_status_name(DecodeStatus s);

// A checked datagram: header plus the payload bytes, which point into the caller's buffer.
struct Packet {
  Header header;
  std::span<const uint8_t> payload;
};

// Checks magic, version, length and checksum of `datagram` and splits it. `out->payload` points
// into `datagram`, which must outlive it. Never reads outside `datagram`.
[[nodiscard]] DecodeStatus decode_packet(std::span<const uint8_t> datagram, Packet* out);

// Payload decoders: validate sizes and field ranges; string views point into the payload.
[[nodiscard]] DecodeStatus decode_announce(std::span<const uint8_t> payload, Announce* out);
[[nodiscard]] DecodeStatus decode_data(std::span<const uint8_t> payload, DataHeader* out,
                                       std::span<const uint8_t>* data);
// Checks codec (kCodecZstd), 1 <= raw_len <= kMaxZBlockSize, 1 <= frame_len <= raw_len and
// that the piece (at least one byte) lies inside the frame; not the file's bounds.
[[nodiscard]] DecodeStatus decode_zdata(std::span<const uint8_t> payload, ZDataHeader* out,
                                        std::span<const uint8_t>* piece);
[[nodiscard]] DecodeStatus decode_end(std::span<const uint8_t> payload, End* out);
[[nodiscard]] DecodeStatus decode_abort(std::span<const uint8_t> payload, Abort* out);
[[nodiscard]] DecodeStatus decode_heartbeat(std::span<const uint8_t> payload, Heartbeat* out);
// Checks 1 <= lanes <= kMaxLanes, that the hosts follow, and host[k] <= k with host[host[k]] ==
// host[k]; the bytes after the hosts are out->tail, unchecked.
[[nodiscard]] DecodeStatus decode_sender_info(std::span<const uint8_t> payload, SenderInfo* out);
// Checks the window geometry (k, m >= 1, k + m <= 255, interleave >= 1, count <= k x interleave,
// group < interleave, index < m) and that a shard follows.
[[nodiscard]] DecodeStatus decode_parity(std::span<const uint8_t> payload, Parity* out,
                                         std::span<const uint8_t>* shard);
// Checks count >= 1, that the `count` entries fill the payload exactly, and each entry's fields:
// path_len 1..kMaxPathSize, a known verify, key_len == digest_size(verify) (0 when aborted or
// verify is kNone). Reserved fields and unknown flag bits are ignored. On kOk, out->entries
// holds the entries (replacing what it held) and their paths point into `payload`, which must
// outlive them; on failure *out is unspecified.
[[nodiscard]] DecodeStatus decode_file_list(std::span<const uint8_t> payload, FileList* out);

// Encoders write one whole datagram (header with checksum, then payload) into `buf` and return its
// size, or 0 when `buf` is too small. They fill header.payload_len themselves.
size_t encode_announce(const Header& h, const Announce& a, std::span<uint8_t> buf);
size_t encode_end(const Header& h, const End& e, std::span<uint8_t> buf);
size_t encode_abort(const Header& h, const Abort& a, std::span<uint8_t> buf);
size_t encode_heartbeat(const Header& h, const Heartbeat& hb, std::span<uint8_t> buf);
// Returns 0 too when si.host is empty, longer than kMaxLanes, or not as decode_sender_info()
// requires.
size_t encode_sender_info(const Header& h, const SenderInfo& si, std::span<uint8_t> buf);
size_t encode_parity(const Header& h, const Parity& pa, std::span<const uint8_t> shard,
                     std::span<uint8_t> buf);
// Encodes a kFileList datagram of entries[0..], as many as fit in `buf` (at most 65535), in
// order: *taken says how many went in. Returns 0 (and *taken = 0) when not even entries[0] fits
// or `entries` is empty. Stops before the first entry that decode_file_list() would refuse (path
// empty or longer than kMaxPathSize, unknown verify, key_len other than digest_size(verify), or
// other than 0 when aborted or verify is kNone): when that is entries[0], returns 0 too. Split a
// long list by calling again with entries.subspan(*taken).
size_t encode_file_list(const Header& h, uint16_t flags, std::span<const FileListEntry> entries,
                        std::span<uint8_t> buf, size_t* taken);
// A datagram of type h.type whose payload is `payload`, as it is (for payloads packed elsewhere:
// common/history_wire.hpp). Returns 0 when it does not fit `buf` or 65535 bytes.
size_t encode_payload(const Header& h, std::span<const uint8_t> payload, std::span<uint8_t> buf);
// Data is encoded in place: the caller has put `data_len` bytes at buf[kHeaderSize +
// kDataHeaderSize], which avoids a copy on the hot path. Returns the datagram size, or 0 when it
// does not fit.
size_t encode_data_in_place(const Header& h, const DataHeader& d, size_t data_len,
                            std::span<uint8_t> buf);

// The same for a kZData piece of `piece_len` bytes at buf[kHeaderSize + kZDataHeaderSize].
size_t encode_zdata_in_place(const Header& h, const ZDataHeader& z, size_t piece_len,
                             std::span<uint8_t> buf);

// Recomputes the checksum of an encoded datagram after its header was changed (used by senders
// that re-stamp seq on repeats). `datagram` must be a whole encoded datagram.
void reseal(std::span<uint8_t> datagram);
// The checksum of a sealed datagram (kFlagAuth set): over the header only.
void reseal_header(std::span<uint8_t> datagram);

// Where the fields sit: the diagrams at the top as numbers. Private to protocol.{hpp,cpp}: other
// code reads and writes fields through the accessors below, never by offset.
namespace layout {
// Header (from the start of the datagram).
inline constexpr size_t kMagicAt = 0;
inline constexpr size_t kVersionAt = 4;
inline constexpr size_t kTypeAt = 5;
inline constexpr size_t kPayloadLenAt = 6;
inline constexpr size_t kSessionIdAt = 8;
inline constexpr size_t kSeqAt = 16;
inline constexpr size_t kFlagsAt = 24;
inline constexpr size_t kFecPosAt = 26;
inline constexpr size_t kChecksumAt = 28;
static_assert(kChecksumAt + 4 == kHeaderSize);
// kData payload (from the start of the payload).
inline constexpr size_t kDataFileIdAt = 0;
inline constexpr size_t kDataCopyAt = 4;
inline constexpr size_t kDataOffsetAt = 8;
// kAnnounce payload (from the start of the payload).
inline constexpr size_t kAnnouncePathLenAt = 6;
}  // namespace layout

}  // namespace ddft::common

// The in-place field accessors (peek_*, poke_*) and the regions and sizes of a datagram, in
// headers of their own.
#include "common/protocol_peek.hpp"     // IWYU pragma: export
#include "common/protocol_regions.hpp"  // IWYU pragma: export
