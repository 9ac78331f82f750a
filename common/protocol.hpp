// The ddft wire format: every datagram that crosses the diode, defined once.
//
// All integers are little-endian and written byte by byte (never by casting a struct), so the
// format does not depend on the host's endianness, alignment or padding.
//
// Datagram = header (32 bytes) + payload (payload_len bytes). Nothing follows the payload.
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
// (--key-file): see common/seal.hpp for the trailer and what the tag covers. A sealed datagram's
// checksum covers its header only (as if its payload were empty): the tag covers every bit.
// flags bit 3 (kFlagRepeat), on an announce only: a repeated announce, sent once mid-file after
// every R bytes of the file's data (per copy), R = max(1 MiB, 1024 x the announce datagram's
// size), so that a receiver that joined mid-file can name the file whose data follows. Same
// fields as the file's first announce but pause_s = 0. Costs at most 1/1024 of the file's bytes;
// a file of R bytes or fewer gets none; never before the file's first data packet or after its
// end.
//
// The checksum covers the header and the payload, so a datagram damaged anywhere is dropped and
// never written; the file hash (B2B) then still covers the file end to end.
//
// Payloads by type (offsets from the start of the payload):
//
//  kAnnounce   0 file_id u32 | 4 verify u8 | 5 pause_s u8 | 6 path_len u16 | 8 size u64 |
//              16 mtime_ns i64 | 24 mode u32 | 28 chunk_size u32 | 32 path (path_len bytes, UTF-8,
//              '/'-separated, relative; no NUL)
//  kData       0 file_id u32 | 4 copy u8 | 5 reserved (3 bytes) | 8 offset u64 |
//              16 data (payload_len - 16 bytes)
//  kEnd        0 file_id u32 | 4 verify u8 | 5 key_len u8 | 6 copy u8 | 7 copies u8 | 8 size u64 |
//              16 key (key_len bytes: the full digest)
//  kAbort      0 file_id u32 | 4 reason_len u16 | 6 reserved u16 | 8 reason (UTF-8)
//  kHeartbeat  0 flags u32 (bit 0: final, the sender has finished) | 4 interval_ms u32 |
//              8 packets_sent u64 | 16 files_announced u32 | 20 reserved u32
//  kParity     0 window_seq u64 | 8 count u16 | 10 k u8 | 11 m u8 | 12 interleave u8 |
//              13 group u8 | 14 index u8 | 15 reserved u8 | 16 shard (payload_len - 16 bytes)
//  kFileList   0 flags u16 (bit 0 kListComplete) | 2 count u16 (>= 1) | 4 reserved u32 |
//              8 entries: `count` of them back to back, filling the payload exactly, each
//                0 file_id u32 | 4 size u64 | 12 verify u8 | 13 entry_flags u8 (bit 0
//                kListAborted) | 14 key_len u8 | 15 reserved u8 | 16 path_len u16 |
//                18 key (key_len bytes) | path (path_len bytes, 1..kMaxPathSize)
//              key_len is digest_size(verify), or 0 when the file was aborted or verify is NONE.
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
// Data packets of a file carry chunk_size bytes each (the last one fewer) at offsets that are
// multiples of chunk_size, so a receiver can index them with a bitmap.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
static_assert(kHeaderSize + kParityHeaderSize == 48);
// A parity datagram is its header and parity header plus a shard as long as the longest source
// datagram of its group: with FEC on, sources are kept this much shorter than the packet size.
inline constexpr size_t kFecOverhead = kHeaderSize + kParityHeaderSize;
inline constexpr uint16_t kFlagFec = 1;
inline constexpr uint16_t kFlagAuth = 2;     // sealed (common/seal.hpp): salt and GCM tag trail
inline constexpr uint16_t kFlagEncrypt = 4;  // sealed, and the payload is encrypted
inline constexpr uint16_t kFlagRepeat = 8;   // a repeated announce, mid-file
inline constexpr size_t kMaxKeySize = 32;        // SHA-256
inline constexpr size_t kMaxPathSize = 4096;     // PATH_MAX
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
// key 32 shorter (the seal's salt and tag, common/seal.hpp).
inline constexpr size_t kMinChunkSize = kMinPacketSize - kHeaderSize - kDataHeaderSize - 48 - 32;
inline constexpr uint32_t kHeartbeatFinal = 1u;
// kFileList flags: the list (with the other datagrams of the same list) names every file of the
// session so far; without it, the files finished since the previous list.
inline constexpr uint16_t kListComplete = 1;
// kFileList entry_flags: the sender aborted the file (its key_len is 0).
inline constexpr uint8_t kListAborted = 1;

enum class PacketType : uint8_t {
  kAnnounce = 1,
  kData = 2,
  kEnd = 3,
  kAbort = 4,
  kHeartbeat = 5,
  kParity = 6,
  kFileList = 7,
};
// The highest PacketType value; decode_packet() refuses a type above it (kBadType).
inline constexpr uint8_t kMaxPacketType = static_cast<uint8_t>(PacketType::kFileList);

// How a file is verified end to end. Values are on the wire.
enum class VerifyType : uint8_t {
  kNone = 0,
  kB2B = 1,     // XXH3-128 of the whole file
  kSha256 = 2,  // SHA-256 of the whole file
};

// Name as printed in the receive log ("B2B Passed") and accepted on the command line (lowercase).
std::string_view verify_type_name(VerifyType v);
// Parses "none", "b2b", "sha256" (any case). Returns false when the text names no type.
bool parse_verify_type(std::string_view text, VerifyType* out);
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

struct Heartbeat {
  uint32_t flags = 0;
  uint32_t interval_ms = 0;
  uint64_t packets_sent = 0;
  uint32_t files_announced = 0;
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
  uint8_t key_len = 0;   // digest_size(verify), or 0 when aborted or verify is kNone
  std::array<uint8_t, kMaxKeySize> key{};  // the full digest, as in the file's kEnd
  std::string_view path;  // points into the datagram (decode) or the caller's string (encode)
};

struct FileList {
  uint16_t flags = 0;                  // kListComplete, or 0; unknown bits are kept and ignored
  std::vector<FileListEntry> entries;  // their paths point into the decoded payload
};

// Why a datagram was rejected. kOk means it was accepted.
enum class DecodeStatus : uint8_t {
  kOk = 0,
  kTooShort,     // shorter than a header
  kBadMagic,
  kBadVersion,
  kBadLength,    // payload_len disagrees with the datagram's length
  kBadChecksum,
  kBadType,
  kBadPayload,   // the payload of a known type is malformed
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
DecodeStatus decode_packet(std::span<const uint8_t> datagram, Packet* out);

// Payload decoders: validate sizes and field ranges; string views point into the payload.
DecodeStatus decode_announce(std::span<const uint8_t> payload, Announce* out);
DecodeStatus decode_data(std::span<const uint8_t> payload, DataHeader* out,
                         std::span<const uint8_t>* data);
DecodeStatus decode_end(std::span<const uint8_t> payload, End* out);
DecodeStatus decode_abort(std::span<const uint8_t> payload, Abort* out);
DecodeStatus decode_heartbeat(std::span<const uint8_t> payload, Heartbeat* out);
// Checks the window geometry (k, m >= 1, k + m <= 255, interleave >= 1, count <= k x interleave,
// group < interleave, index < m) and that a shard follows.
DecodeStatus decode_parity(std::span<const uint8_t> payload, Parity* out,
                           std::span<const uint8_t>* shard);
// Checks count >= 1, that the `count` entries fill the payload exactly, and each entry's fields:
// path_len 1..kMaxPathSize, a known verify, key_len == digest_size(verify) (0 when aborted or
// verify is kNone). Reserved fields and unknown flag bits are ignored. On kOk, out->entries
// holds the entries (replacing what it held) and their paths point into `payload`, which must
// outlive them; on failure *out is unspecified.
DecodeStatus decode_file_list(std::span<const uint8_t> payload, FileList* out);

// Encoders write one whole datagram (header with checksum, then payload) into `buf` and return its
// size, or 0 when `buf` is too small. They fill header.payload_len themselves.
size_t encode_announce(const Header& h, const Announce& a, std::span<uint8_t> buf);
size_t encode_end(const Header& h, const End& e, std::span<uint8_t> buf);
size_t encode_abort(const Header& h, const Abort& a, std::span<uint8_t> buf);
size_t encode_heartbeat(const Header& h, const Heartbeat& hb, std::span<uint8_t> buf);
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
// Data is encoded in place: the caller has put `data_len` bytes at buf[kHeaderSize +
// kDataHeaderSize], which avoids a copy on the hot path. Returns the datagram size, or 0 when it
// does not fit.
size_t encode_data_in_place(const Header& h, const DataHeader& d, size_t data_len,
                            std::span<uint8_t> buf);

// Recomputes the checksum of an encoded datagram after its header was changed (used by senders
// that re-stamp seq on repeats). `datagram` must be a whole encoded datagram.
void reseal(std::span<uint8_t> datagram);
// The checksum of a sealed datagram (kFlagAuth set): over the header only.
void reseal_header(std::span<uint8_t> datagram);

// Little-endian helpers, exposed for the tests and for tools that inspect datagrams.
inline void store_le16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t load_le16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t load_le32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace ddft::common
