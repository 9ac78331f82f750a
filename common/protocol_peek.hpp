// Reading and patching an encoded datagram in place: part of common/protocol.hpp, which includes
// this at its end (include that, not this).
//
// One load or store each, inline, unchecked: any thread; nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/protocol.hpp"

namespace ddft::common {

// ---- Reading and patching an encoded datagram in place ----------------------------------------
// For the per-datagram paths that must look at a field before (or instead of) a full
// decode_packet(): each is one load or store, inline, with no check of anything else. The caller
// guarantees the bytes are there: `d` points at least at kHeaderSize bytes, but for the four
// that a stream reader uses to find a frame (magic, version, type, payload_len), which need only
// kHeaderPrefixSize.

// Bytes from the start of a datagram up to and including payload_len.
inline constexpr size_t kHeaderPrefixSize = layout::kPayloadLenAt + 2;

// True when `d` starts with the magic "DDFT".
inline bool has_magic(const uint8_t* d) { return load_le32(d + layout::kMagicAt) == kMagic; }
inline uint8_t peek_version(const uint8_t* d) { return d[layout::kVersionAt]; }
// The type byte as it came: not necessarily a PacketType (see known_packet_type()).
inline uint8_t peek_type(const uint8_t* d) { return d[layout::kTypeAt]; }
inline uint16_t peek_payload_len(const uint8_t* d) { return load_le16(d + layout::kPayloadLenAt); }
// The datagram's length as its header states it: header plus payload_len.
inline size_t peek_datagram_size(const uint8_t* d) { return kHeaderSize + peek_payload_len(d); }
inline uint64_t peek_session_id(const uint8_t* d) { return load_le64(d + layout::kSessionIdAt); }
inline uint64_t peek_seq(const uint8_t* d) { return load_le64(d + layout::kSeqAt); }
inline uint16_t peek_flags(const uint8_t* d) { return load_le16(d + layout::kFlagsAt); }
inline uint16_t peek_fec_pos(const uint8_t* d) { return load_le16(d + layout::kFecPosAt); }
// True when `type` is one of PacketType's values (what decode_packet() accepts).
inline constexpr bool known_packet_type(uint8_t type) {
  return type >= static_cast<uint8_t>(PacketType::kAnnounce) && type <= kMaxPacketType;
}
// True when the first kHeaderPrefixSize bytes at `d` could start a datagram of ours: the magic,
// this protocol version and a known type. Says nothing of the length or the checksum.
inline bool plausible_header_prefix(const uint8_t* d) {
  return has_magic(d) && peek_version(d) == kProtocolVersion && known_packet_type(peek_type(d));
}
// The file_id of a kData datagram, read in place: `d` holds at least kHeaderSize +
// kDataHeaderSize bytes and its type is kData (not checked; an encrypted payload gives noise).
inline uint32_t peek_data_file_id(const uint8_t* d) {
  return load_le32(d + kHeaderSize + layout::kDataFileIdAt);
}
// The offset of a kData datagram, read in place (as peek_data_file_id()).
inline uint64_t peek_data_offset(const uint8_t* d) {
  return load_le64(d + kHeaderSize + layout::kDataOffsetAt);
}

// Header stores in place. Each leaves the checksum stale: the caller reseals (reseal() or
// reseal_header()) before the datagram leaves.
inline void poke_magic(uint8_t* d) { store_le32(d + layout::kMagicAt, kMagic); }
inline void poke_version(uint8_t* d, uint8_t version) { d[layout::kVersionAt] = version; }
// Any byte, known type or not (tests forge unknown ones).
inline void poke_type(uint8_t* d, uint8_t type) { d[layout::kTypeAt] = type; }
inline void poke_session_id(uint8_t* d, uint64_t id) { store_le64(d + layout::kSessionIdAt, id); }
inline void poke_payload_len(uint8_t* d, uint16_t len) {
  store_le16(d + layout::kPayloadLenAt, len);
}
inline void poke_seq(uint8_t* d, uint64_t seq) { store_le64(d + layout::kSeqAt, seq); }
inline void poke_flags(uint8_t* d, uint16_t flags) { store_le16(d + layout::kFlagsAt, flags); }
inline void poke_fec_pos(uint8_t* d, uint16_t pos) { store_le16(d + layout::kFecPosAt, pos); }
// Payload stores in place, for tests that forge what the encoders refuse to write: a kData
// datagram's offset, an announce payload's path_len (`payload` from payload_of()).
inline void poke_data_offset(uint8_t* d, uint64_t offset) {
  store_le64(d + kHeaderSize + layout::kDataOffsetAt, offset);
}
inline void poke_announce_path_len(uint8_t* payload, uint16_t len) {
  store_le16(payload + layout::kAnnouncePathLenAt, len);
}

}  // namespace ddft::common
