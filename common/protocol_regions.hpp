// Where the regions of a datagram lie and how long datagrams are: part of common/protocol.hpp,
// which includes this at its end (include that, not this).
//
// Offsets and sizes, inline, unchecked: any thread; nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/protocol.hpp"

namespace ddft::common {

// ---- Regions of a datagram --------------------------------------------------------------------
// The header bytes the checksum's seed and a seal's associated data cover: all but the checksum.
inline constexpr size_t kHeaderSansChecksumSize = layout::kChecksumAt;
// The payload of a datagram whose header starts at `d`.
inline uint8_t* payload_of(uint8_t* d) { return d + kHeaderSize; }
inline const uint8_t* payload_of(const uint8_t* d) { return d + kHeaderSize; }
// Where encode_data_in_place() expects the file's bytes, in a buffer that will hold a kData
// datagram (at least kHeaderSize + kDataHeaderSize bytes).
inline uint8_t* data_bytes_of(uint8_t* buf) { return buf + kHeaderSize + kDataHeaderSize; }
inline const uint8_t* data_bytes_of(const uint8_t* d) { return d + kHeaderSize + kDataHeaderSize; }
// Where encode_zdata_in_place() expects the piece's bytes.
inline uint8_t* zdata_bytes_of(uint8_t* buf) { return buf + kHeaderSize + kZDataHeaderSize; }

// Datagram sizes, for buffers and for budgets computed before encoding.
// A kData datagram of `data_len` file bytes.
inline constexpr size_t data_datagram_size(size_t data_len) {
  return kHeaderSize + kDataHeaderSize + data_len;
}
// An announce datagram with a path of `path_len` bytes.
inline constexpr size_t announce_datagram_size(size_t path_len) {
  return kHeaderSize + kAnnounceFixedSize + path_len;
}
// One kFileList entry with a key of `key_len` and a path of `path_len` bytes.
inline constexpr size_t file_list_entry_size(size_t key_len, size_t path_len) {
  return kFileListEntryFixedSize + key_len + path_len;
}
// Room for entries in a kFileList datagram of `datagram_size` bytes (at least kHeaderSize +
// kFileListFixedSize).
inline constexpr size_t file_list_room(size_t datagram_size) {
  return datagram_size - kHeaderSize - kFileListFixedSize;
}

// A sealed datagram (kFlagAuth) of `sealed_size` bytes (at least kHeaderSize + kSealOverhead):
// the length of its body (the inner payload), and where its salt and tag sit.
inline constexpr size_t sealed_body_len(size_t sealed_size) {
  return sealed_size - kHeaderSize - kSealOverhead;
}
inline uint8_t* sealed_salt(uint8_t* d, size_t sealed_size) {
  return d + kHeaderSize + sealed_body_len(sealed_size);
}
inline const uint8_t* sealed_salt(const uint8_t* d, size_t sealed_size) {
  return d + kHeaderSize + sealed_body_len(sealed_size);
}
inline uint8_t* sealed_tag(uint8_t* d, size_t sealed_size) {
  return sealed_salt(d, sealed_size) + kSaltSize;
}
inline const uint8_t* sealed_tag(const uint8_t* d, size_t sealed_size) {
  return sealed_salt(d, sealed_size) + kSaltSize;
}

}  // namespace ddft::common
