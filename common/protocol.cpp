#include "common/protocol.hpp"

#include <xxhash.h>
#if defined(__x86_64__)
// Debian's libxxhash picks the widest vector unit at run time (AVX2, AVX-512) behind these names;
// the plain ones are built for the baseline x86-64 (SSE2) and hash at about half the speed.
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstring>

namespace ddft::common {
namespace {

using namespace layout;

uint32_t compute_checksum(const uint8_t* header, const uint8_t* payload, size_t payload_len) {
  const uint64_t seed = XXH3_64bits(header, kHeaderSansChecksumSize);
  return static_cast<uint32_t>(XXH3_64bits_withSeed(payload, payload_len, seed));
}

void write_header(const Header& h, uint16_t payload_len, uint8_t* p) {
  store_le32(p + kMagicAt, kMagic);
  p[kVersionAt] = h.version;
  p[kTypeAt] = static_cast<uint8_t>(h.type);
  store_le16(p + kPayloadLenAt, payload_len);
  store_le64(p + kSessionIdAt, h.session_id);
  store_le64(p + kSeqAt, h.seq);
  store_le16(p + kFlagsAt, h.flags);
  store_le16(p + kFecPosAt, h.fec_pos);
  store_le32(p + kChecksumAt, compute_checksum(p, p + kHeaderSize, payload_len));
}

// Writes header + payload of `payload_len` bytes already placed at buf[kHeaderSize...].
size_t seal(const Header& h, size_t payload_len, std::span<uint8_t> buf) {
  if (payload_len > 0xFFFF || kHeaderSize + payload_len > buf.size()) return 0;
  write_header(h, static_cast<uint16_t>(payload_len), buf.data());
  return kHeaderSize + payload_len;
}

bool valid_verify(uint8_t v) { return v <= static_cast<uint8_t>(VerifyType::kSha256); }

// The key length a file-list entry must carry: none for an aborted file (it has no digest) or
// without verification, else the full digest.
size_t list_key_len(VerifyType v, bool aborted) { return aborted ? 0 : digest_size(v); }

bool valid_list_entry(const FileListEntry& e) {
  return !e.path.empty() && e.path.size() <= kMaxPathSize &&
         valid_verify(static_cast<uint8_t>(e.verify)) &&
         e.key_len == list_key_len(e.verify, e.aborted);
}

}  // namespace

std::string_view verify_type_name(VerifyType v) {
  switch (v) {
    case VerifyType::kNone:
      return "NONE";
    case VerifyType::kB2B:
      return "B2B";
    case VerifyType::kSha256:
      return "SHA256";
  }
  return "UNKNOWN";
}

bool parse_verify_type(std::string_view text, VerifyType* out) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "none") {
    *out = VerifyType::kNone;
  } else if (lower == "b2b") {
    *out = VerifyType::kB2B;
  } else if (lower == "sha256") {
    *out = VerifyType::kSha256;
  } else {
    return false;
  }
  return true;
}

size_t digest_size(VerifyType v) {
  switch (v) {
    case VerifyType::kNone:
      return 0;
    case VerifyType::kB2B:
      return 16;
    case VerifyType::kSha256:
      return 32;
  }
  return 0;
}

std::string_view decode_status_name(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::kOk:
      return "ok";
    case DecodeStatus::kTooShort:
      return "too short";
    case DecodeStatus::kBadMagic:
      return "bad magic";
    case DecodeStatus::kBadVersion:
      return "bad version";
    case DecodeStatus::kBadLength:
      return "bad length";
    case DecodeStatus::kBadChecksum:
      return "bad checksum";
    case DecodeStatus::kBadType:
      return "bad type";
    case DecodeStatus::kBadPayload:
      return "bad payload";
  }
  return "unknown";
}

DecodeStatus decode_packet(std::span<const uint8_t> datagram, Packet* out) {
  if (datagram.size() < kHeaderSize) return DecodeStatus::kTooShort;
  const uint8_t* p = datagram.data();
  if (!has_magic(p)) return DecodeStatus::kBadMagic;
  if (peek_version(p) != kProtocolVersion) return DecodeStatus::kBadVersion;
  const uint16_t payload_len = peek_payload_len(p);
  if (kHeaderSize + payload_len != datagram.size()) return DecodeStatus::kBadLength;
  // A sealed datagram's checksum (--key-file, common/seal.hpp) covers its header only: the GCM
  // tag covers every bit, and the receiver checks it before it trusts anything past the header.
  const bool sealed = (peek_flags(p) & kFlagAuth) != 0;
  if (load_le32(p + kChecksumAt) !=
      compute_checksum(p, p + kHeaderSize, sealed ? 0 : payload_len)) {
    return DecodeStatus::kBadChecksum;
  }
  const uint8_t type = peek_type(p);
  if (!known_packet_type(type)) return DecodeStatus::kBadType;
  out->header.version = peek_version(p);
  out->header.type = static_cast<PacketType>(type);
  out->header.payload_len = payload_len;
  out->header.session_id = peek_session_id(p);
  out->header.seq = peek_seq(p);
  out->header.flags = peek_flags(p);
  out->header.fec_pos = peek_fec_pos(p);
  out->payload = datagram.subspan(kHeaderSize);
  return DecodeStatus::kOk;
}

DecodeStatus decode_announce(std::span<const uint8_t> payload, Announce* out) {
  if (payload.size() < kAnnounceFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const uint16_t path_len = load_le16(p + kAnnouncePathLenAt);
  if (path_len == 0 || path_len > kMaxPathSize || kAnnounceFixedSize + path_len != payload.size() ||
      !valid_verify(p[4])) {
    return DecodeStatus::kBadPayload;
  }
  out->file_id = load_le32(p);
  out->verify = static_cast<VerifyType>(p[4]);
  out->pause_s = p[5];
  out->size = load_le64(p + 8);
  out->mtime_ns = static_cast<int64_t>(load_le64(p + 16));
  out->mode = load_le32(p + 24);
  out->chunk_size = load_le32(p + 28);
  if (out->chunk_size < kMinChunkSize || out->chunk_size > kMaxDatagramSize) {
    return DecodeStatus::kBadPayload;
  }
  out->path = std::string_view(reinterpret_cast<const char*>(p + kAnnounceFixedSize), path_len);
  return DecodeStatus::kOk;
}

DecodeStatus decode_data(std::span<const uint8_t> payload, DataHeader* out,
                         std::span<const uint8_t>* data) {
  if (payload.size() < kDataHeaderSize) return DecodeStatus::kBadPayload;
  out->file_id = load_le32(payload.data() + kDataFileIdAt);
  out->copy = payload[kDataCopyAt];
  out->offset = load_le64(payload.data() + kDataOffsetAt);
  *data = payload.subspan(kDataHeaderSize);
  return DecodeStatus::kOk;
}

DecodeStatus decode_zdata(std::span<const uint8_t> payload, ZDataHeader* out,
                          std::span<const uint8_t>* piece) {
  if (payload.size() <= kZDataHeaderSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  out->file_id = load_le32(p);
  out->copy = p[4];
  out->codec = p[5];
  out->offset = load_le64(p + 8);
  out->raw_len = load_le32(p + 16);
  out->frame_len = load_le32(p + 20);
  out->frame_off = load_le32(p + 24);
  *piece = payload.subspan(kZDataHeaderSize);
  if (out->codec != kCodecZstd || out->raw_len == 0 || out->raw_len > kMaxZBlockSize ||
      out->frame_len == 0 || out->frame_len > out->raw_len || out->frame_off >= out->frame_len ||
      piece->size() > out->frame_len - out->frame_off) {
    return DecodeStatus::kBadPayload;
  }
  return DecodeStatus::kOk;
}

DecodeStatus decode_end(std::span<const uint8_t> payload, End* out) {
  if (payload.size() < kEndFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const uint8_t key_len = p[5];
  if (!valid_verify(p[4]) || key_len != digest_size(static_cast<VerifyType>(p[4])) ||
      kEndFixedSize + key_len != payload.size()) {
    return DecodeStatus::kBadPayload;
  }
  out->file_id = load_le32(p);
  out->verify = static_cast<VerifyType>(p[4]);
  out->key_len = key_len;
  out->copy = p[6];
  out->copies = std::max<uint8_t>(1, p[7]);
  if (out->copy >= out->copies) return DecodeStatus::kBadPayload;
  out->size = load_le64(p + 8);
  out->key.fill(0);
  std::memcpy(out->key.data(), p + kEndFixedSize, key_len);
  return DecodeStatus::kOk;
}

DecodeStatus decode_abort(std::span<const uint8_t> payload, Abort* out) {
  if (payload.size() < kAbortFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const uint16_t reason_len = load_le16(p + 4);
  if (reason_len > kMaxAbortReason || kAbortFixedSize + reason_len != payload.size()) {
    return DecodeStatus::kBadPayload;
  }
  out->file_id = load_le32(p);
  out->reason = std::string_view(reinterpret_cast<const char*>(p + kAbortFixedSize), reason_len);
  return DecodeStatus::kOk;
}

DecodeStatus decode_heartbeat(std::span<const uint8_t> payload, Heartbeat* out) {
  if (payload.size() != kHeartbeatSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  out->flags = load_le32(p);
  out->interval_ms = load_le32(p + 4);
  out->packets_sent = load_le64(p + 8);
  out->files_announced = load_le32(p + 16);
  out->lane = load_le16(p + 20);
  // 0 from a sender before lanes: one lane.
  out->lanes = std::max<uint16_t>(1, load_le16(p + 22));
  return DecodeStatus::kOk;
}

namespace {
bool hosts_valid(std::span<const uint8_t> host) {
  if (host.empty() || host.size() > kMaxLanes) return false;
  for (size_t k = 0; k < host.size(); ++k) {
    if (host[k] > k || host[host[k]] != host[k]) return false;
  }
  return true;
}
}  // namespace

DecodeStatus decode_sender_info(std::span<const uint8_t> payload, SenderInfo* out) {
  if (payload.size() < kSenderInfoFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const size_t lanes = load_le16(p + 8);
  if (payload.size() < kSenderInfoFixedSize + lanes) return DecodeStatus::kBadPayload;
  const std::span<const uint8_t> host = payload.subspan(kSenderInfoFixedSize, lanes);
  if (!hosts_valid(host)) return DecodeStatus::kBadPayload;
  out->sender_id = load_le64(p);
  out->host.assign(host.begin(), host.end());
  out->tail = payload.subspan(kSenderInfoFixedSize + lanes);
  return DecodeStatus::kOk;
}

size_t encode_sender_info(const Header& h, const SenderInfo& si, std::span<uint8_t> buf) {
  if (!hosts_valid(si.host)) return 0;
  const size_t payload_len = kSenderInfoFixedSize + si.host.size() + si.tail.size();
  if (kHeaderSize + payload_len > buf.size() || payload_len > UINT16_MAX) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le64(p, si.sender_id);
  store_le16(p + 8, static_cast<uint16_t>(si.host.size()));
  store_le16(p + 10, 0);
  std::copy(si.host.begin(), si.host.end(), p + kSenderInfoFixedSize);
  std::copy(si.tail.begin(), si.tail.end(), p + kSenderInfoFixedSize + si.host.size());
  Header hh = h;
  hh.type = PacketType::kSenderInfo;
  return seal(hh, payload_len, buf);
}

size_t encode_payload(const Header& h, std::span<const uint8_t> payload, std::span<uint8_t> buf) {
  if (kHeaderSize + payload.size() > buf.size()) return 0;
  if (!payload.empty()) std::memcpy(buf.data() + kHeaderSize, payload.data(), payload.size());
  return seal(h, payload.size(), buf);
}

size_t encode_announce(const Header& h, const Announce& a, std::span<uint8_t> buf) {
  if (a.path.empty() || a.path.size() > kMaxPathSize) return 0;
  const size_t payload_len = kAnnounceFixedSize + a.path.size();
  if (kHeaderSize + payload_len > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le32(p, a.file_id);
  p[4] = static_cast<uint8_t>(a.verify);
  p[5] = a.pause_s;
  store_le16(p + kAnnouncePathLenAt, static_cast<uint16_t>(a.path.size()));
  store_le64(p + 8, a.size);
  store_le64(p + 16, static_cast<uint64_t>(a.mtime_ns));
  store_le32(p + 24, a.mode);
  store_le32(p + 28, a.chunk_size);
  std::memcpy(p + kAnnounceFixedSize, a.path.data(), a.path.size());
  Header hh = h;
  hh.type = PacketType::kAnnounce;
  return seal(hh, payload_len, buf);
}

size_t encode_end(const Header& h, const End& e, std::span<uint8_t> buf) {
  if (e.key_len > kMaxKeySize) return 0;
  const size_t payload_len = kEndFixedSize + e.key_len;
  if (kHeaderSize + payload_len > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le32(p, e.file_id);
  p[4] = static_cast<uint8_t>(e.verify);
  p[5] = e.key_len;
  p[6] = e.copy;
  p[7] = e.copies;
  store_le64(p + 8, e.size);
  std::memcpy(p + kEndFixedSize, e.key.data(), e.key_len);
  Header hh = h;
  hh.type = PacketType::kEnd;
  return seal(hh, payload_len, buf);
}

size_t encode_abort(const Header& h, const Abort& a, std::span<uint8_t> buf) {
  const size_t reason_len = std::min(a.reason.size(), kMaxAbortReason);
  const size_t payload_len = kAbortFixedSize + reason_len;
  if (kHeaderSize + payload_len > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le32(p, a.file_id);
  store_le16(p + 4, static_cast<uint16_t>(reason_len));
  store_le16(p + 6, 0);
  std::memcpy(p + kAbortFixedSize, a.reason.data(), reason_len);
  Header hh = h;
  hh.type = PacketType::kAbort;
  return seal(hh, payload_len, buf);
}

size_t encode_heartbeat(const Header& h, const Heartbeat& hb, std::span<uint8_t> buf) {
  if (kHeaderSize + kHeartbeatSize > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le32(p, hb.flags);
  store_le32(p + 4, hb.interval_ms);
  store_le64(p + 8, hb.packets_sent);
  store_le32(p + 16, hb.files_announced);
  store_le16(p + 20, hb.lane);
  // One lane is written as 0, as a sender before lanes wrote it: the same bytes on the wire.
  store_le16(p + 22, hb.lanes <= 1 ? 0 : hb.lanes);
  Header hh = h;
  hh.type = PacketType::kHeartbeat;
  return seal(hh, kHeartbeatSize, buf);
}

DecodeStatus decode_parity(std::span<const uint8_t> payload, Parity* out,
                           std::span<const uint8_t>* shard) {
  if (payload.size() <= kParityHeaderSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  out->window_seq = load_le64(p);
  out->count = load_le16(p + 8);
  out->k = p[10];
  out->m = p[11];
  out->interleave = p[12];
  out->group = p[13];
  out->index = p[14];
  if (out->k == 0 || out->m == 0 || out->k + out->m > 255 || out->interleave == 0 ||
      out->count == 0 || out->count > out->k * out->interleave || out->group >= out->interleave ||
      out->group >= out->count || out->index >= out->m) {
    return DecodeStatus::kBadPayload;
  }
  *shard = payload.subspan(kParityHeaderSize);
  return DecodeStatus::kOk;
}

size_t encode_parity(const Header& h, const Parity& pa, std::span<const uint8_t> shard,
                     std::span<uint8_t> buf) {
  const size_t payload_len = kParityHeaderSize + shard.size();
  if (shard.empty() || kHeaderSize + payload_len > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le64(p, pa.window_seq);
  store_le16(p + 8, pa.count);
  p[10] = pa.k;
  p[11] = pa.m;
  p[12] = pa.interleave;
  p[13] = pa.group;
  p[14] = pa.index;
  p[15] = 0;
  std::memcpy(p + kParityHeaderSize, shard.data(), shard.size());
  Header hh = h;
  hh.type = PacketType::kParity;
  return seal(hh, payload_len, buf);
}

DecodeStatus decode_file_list(std::span<const uint8_t> payload, FileList* out) {
  if (payload.size() < kFileListFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const uint16_t count = load_le16(p + 2);
  if (count == 0) return DecodeStatus::kBadPayload;
  out->flags = load_le16(p);
  out->entries.clear();
  // `count` comes from the wire: reserve no more than the payload could hold (an entry is at
  // least its fixed part and a 1-byte path), so a forged count costs no memory.
  const size_t room = (payload.size() - kFileListFixedSize) / (kFileListEntryFixedSize + 1);
  out->entries.reserve(std::min<size_t>(count, room));
  size_t pos = kFileListFixedSize;
  for (uint16_t i = 0; i < count; ++i) {
    if (payload.size() - pos < kFileListEntryFixedSize) return DecodeStatus::kBadPayload;
    const uint8_t* e = p + pos;
    if (!valid_verify(e[12])) return DecodeStatus::kBadPayload;
    FileListEntry entry;
    entry.file_id = load_le32(e);
    entry.size = load_le64(e + 4);
    entry.verify = static_cast<VerifyType>(e[12]);
    entry.aborted = (e[13] & kListAborted) != 0;
    entry.resend = (e[13] & kListResend) != 0;
    entry.key_len = e[14];
    entry.lane = e[15] == 0 ? kLaneUnsaid : e[15] == kListStripedByte ? kLaneAll : e[15] - 1;
    const uint16_t path_len = load_le16(e + 16);
    if (entry.key_len != list_key_len(entry.verify, entry.aborted) || path_len == 0 ||
        path_len > kMaxPathSize ||
        payload.size() - pos - kFileListEntryFixedSize < size_t{entry.key_len} + path_len) {
      return DecodeStatus::kBadPayload;
    }
    std::memcpy(entry.key.data(), e + kFileListEntryFixedSize, entry.key_len);
    entry.path = std::string_view(
        reinterpret_cast<const char*>(e + kFileListEntryFixedSize + entry.key_len), path_len);
    out->entries.push_back(entry);
    pos += kFileListEntryFixedSize + entry.key_len + path_len;
  }
  // The entries must fill the payload: trailing bytes mean a count or a length is wrong.
  if (pos != payload.size()) return DecodeStatus::kBadPayload;
  return DecodeStatus::kOk;
}

size_t encode_file_list(const Header& h, uint16_t flags, std::span<const FileListEntry> entries,
                        std::span<uint8_t> buf, size_t* taken) {
  *taken = 0;
  if (buf.size() < kHeaderSize + kFileListFixedSize) return 0;
  // The payload length is a u16 in the header.
  const size_t limit = std::min(buf.size() - kHeaderSize, size_t{0xFFFF});
  uint8_t* p = buf.data() + kHeaderSize;
  size_t pos = kFileListFixedSize;
  size_t n = 0;
  while (n < entries.size() && n < 0xFFFF) {
    const FileListEntry& e = entries[n];
    if (!valid_list_entry(e)) break;
    const size_t len = kFileListEntryFixedSize + e.key_len + e.path.size();
    if (limit - pos < len) break;
    uint8_t* q = p + pos;
    store_le32(q, e.file_id);
    store_le64(q + 4, e.size);
    q[12] = static_cast<uint8_t>(e.verify);
    q[13] = static_cast<uint8_t>((e.aborted ? kListAborted : 0) | (e.resend ? kListResend : 0));
    q[14] = e.key_len;
    q[15] = list_lane_byte(e.lane);
    store_le16(q + 16, static_cast<uint16_t>(e.path.size()));
    std::memcpy(q + kFileListEntryFixedSize, e.key.data(), e.key_len);
    std::memcpy(q + kFileListEntryFixedSize + e.key_len, e.path.data(), e.path.size());
    pos += len;
    ++n;
  }
  if (n == 0) return 0;
  store_le16(p, flags);
  store_le16(p + 2, static_cast<uint16_t>(n));
  store_le32(p + 4, 0);
  Header hh = h;
  hh.type = PacketType::kFileList;
  *taken = n;
  return seal(hh, pos, buf);
}

size_t encode_data_in_place(const Header& h, const DataHeader& d, size_t data_len,
                            std::span<uint8_t> buf) {
  const size_t payload_len = kDataHeaderSize + data_len;
  if (kHeaderSize + payload_len > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le32(p + kDataFileIdAt, d.file_id);
  store_le32(p + kDataCopyAt, d.copy);  // copy u8 and three reserved zero bytes
  store_le64(p + kDataOffsetAt, d.offset);
  Header hh = h;
  hh.type = PacketType::kData;
  return seal(hh, payload_len, buf);
}

size_t encode_zdata_in_place(const Header& h, const ZDataHeader& z, size_t piece_len,
                             std::span<uint8_t> buf) {
  const size_t payload_len = kZDataHeaderSize + piece_len;
  if (kHeaderSize + payload_len > buf.size()) return 0;
  uint8_t* p = buf.data() + kHeaderSize;
  store_le32(p, z.file_id);
  p[4] = z.copy;
  p[5] = z.codec;
  store_le16(p + 6, 0);
  store_le64(p + 8, z.offset);
  store_le32(p + 16, z.raw_len);
  store_le32(p + 20, z.frame_len);
  store_le32(p + 24, z.frame_off);
  Header hh = h;
  hh.type = PacketType::kZData;
  return seal(hh, payload_len, buf);
}

void reseal_header(std::span<uint8_t> datagram) {
  uint8_t* p = datagram.data();
  store_le32(p + kChecksumAt, compute_checksum(p, p + kHeaderSize, 0));
}

void reseal(std::span<uint8_t> datagram) {
  uint8_t* p = datagram.data();
  const size_t payload_len = datagram.size() - kHeaderSize;
  store_le32(p + kChecksumAt, compute_checksum(p, p + kHeaderSize, payload_len));
}

}  // namespace ddft::common
