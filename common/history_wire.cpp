#include "common/history_wire.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "common/hash.hpp"
#include "common/le_bytes.hpp"

namespace ddft::common {
namespace {

// Compression level of a kHistory body: small bodies, where a higher level gains little.
constexpr int kHistoryLevel = 3;

// The digest of `f` as bytes into `out`; false when it is not digest_size(verify) bytes of hex.
bool digest_bytes(const FileIdentity& f, std::vector<uint8_t>* out) {
  Digest d;
  if (!parse_digest(f.verify, f.digest, &d)) return false;
  out->assign(d.bytes.begin(), d.bytes.begin() + d.size);
  return true;
}

// The hex of `n` digest bytes at `p`.
std::string hex_of(const uint8_t* p, size_t n) {
  Digest d;
  d.size = static_cast<uint8_t>(n);
  std::copy(p, p + n, d.bytes.begin());
  return d.hex();
}

// Appends the entry of `r` to `raw`; false when it cannot go on the wire.
bool append_entry(const HistoryRecord& r, std::vector<uint8_t>* raw) {
  std::vector<uint8_t> key;
  if (r.file.path.empty() || r.file.path.size() > kMaxPathSize || !digest_bytes(r.file, &key)) {
    return false;
  }
  const size_t at = raw->size();
  raw->resize(at + kHistoryEntryFixedSize + key.size() + r.file.path.size());
  uint8_t* e = raw->data() + at;
  store_le64(e, r.file.session);
  store_le32(e + 8, r.file.file_id);
  store_le64(e + 12, r.file.size);
  store_le64(e + 20, static_cast<uint64_t>(r.sent_ns));
  e[28] = static_cast<uint8_t>(r.file.verify);
  e[29] = list_lane_byte(r.lane);
  e[30] = static_cast<uint8_t>(key.size());
  e[31] = 0;
  store_le16(e + 32, static_cast<uint16_t>(r.file.path.size()));
  std::copy(key.begin(), key.end(), e + kHistoryEntryFixedSize);
  std::memcpy(e + kHistoryEntryFixedSize + key.size(), r.file.path.data(), r.file.path.size());
  return true;
}

// The payload of the first `count` entries of `raw` (`ends[i]`: where entry i ends), compressed
// when that shrinks it; empty when it is longer than `max_payload`.
std::vector<uint8_t> payload_of(uint64_t sender_id, const std::vector<uint8_t>& raw,
                                const std::vector<size_t>& ends, size_t count, size_t max_payload) {
  const size_t raw_len = ends[count - 1];
  std::vector<uint8_t> out(kHistoryFixedSize + ZSTD_compressBound(raw_len));
  const size_t z = ZSTD_compress(out.data() + kHistoryFixedSize, out.size() - kHistoryFixedSize,
                                 raw.data(), raw_len, kHistoryLevel);
  uint8_t codec = kHistoryZstd;
  size_t body = z;
  if (ZSTD_isError(z) || z >= raw_len) {
    codec = kHistoryRaw;
    body = raw_len;
    std::memcpy(out.data() + kHistoryFixedSize, raw.data(), raw_len);
  }
  if (kHistoryFixedSize + body > max_payload) return {};
  out.resize(kHistoryFixedSize + body);
  store_le64(out.data(), sender_id);
  store_le16(out.data() + 8, static_cast<uint16_t>(count));
  out[10] = codec;
  out[11] = 0;
  store_le32(out.data() + 12, static_cast<uint32_t>(raw_len));
  return out;
}

}  // namespace

size_t encode_resend(const Header& h, const Resend& r, std::span<uint8_t> buf) {
  std::vector<uint8_t> key;
  if (!digest_bytes(r.of, &key)) return 0;
  std::vector<uint8_t> payload(kResendFixedSize + key.size());
  uint8_t* p = payload.data();
  store_le32(p, r.file_id);
  store_le32(p + 4, r.of.file_id);
  store_le64(p + 8, r.of.session);
  p[16] = static_cast<uint8_t>(r.of.verify);
  p[17] = static_cast<uint8_t>(key.size());
  store_le16(p + 18, 0);
  std::copy(key.begin(), key.end(), p + kResendFixedSize);
  Header hh = h;
  hh.type = PacketType::kResend;
  return encode_payload(hh, payload, buf);
}

DecodeStatus decode_resend(std::span<const uint8_t> payload, Resend* out) {
  if (payload.size() < kResendFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const uint8_t verify = p[16];
  const size_t key_len = p[17];
  if (verify > static_cast<uint8_t>(VerifyType::kSha256) ||
      key_len != digest_size(static_cast<VerifyType>(verify)) ||
      payload.size() < kResendFixedSize + key_len) {
    return DecodeStatus::kBadPayload;
  }
  Resend r;
  r.file_id = load_le32(p);
  r.of.file_id = load_le32(p + 4);
  r.of.session = load_le64(p + 8);
  r.of.verify = static_cast<VerifyType>(verify);
  r.of.digest = hex_of(p + kResendFixedSize, key_len);
  *out = std::move(r);
  return DecodeStatus::kOk;
}

std::vector<uint8_t> pack_history(uint64_t sender_id, std::span<const HistoryRecord> records,
                                  size_t max_payload, size_t* taken) {
  *taken = 0;
  // The entries that may go, raw: up to what a body could hold (compression rarely shrinks them
  // by more than 4 times).
  const size_t raw_cap = std::min(kMaxHistoryRaw, 4 * max_payload);
  std::vector<uint8_t> raw;
  std::vector<size_t> ends;
  for (const HistoryRecord& r : records) {
    if (ends.size() == 0xFFFF) break;
    const size_t before = raw.size();
    if (!append_entry(r, &raw)) break;
    if (raw.size() > raw_cap) {
      raw.resize(before);
      break;
    }
    ends.push_back(raw.size());
  }
  // Fewer and fewer entries until the payload fits.
  for (size_t count = ends.size(); count > 0;) {
    std::vector<uint8_t> out = payload_of(sender_id, raw, ends, count, max_payload);
    if (!out.empty()) {
      *taken = count;
      return out;
    }
    count = count * 3 / 4;
  }
  return {};
}

DecodeStatus decode_history(std::span<const uint8_t> payload, HistoryBundle* out) {
  if (payload.size() < kHistoryFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = payload.data();
  const size_t count = load_le16(p + 8);
  const uint8_t codec = p[10];
  const size_t raw_len = load_le32(p + 12);
  if (count == 0 || raw_len == 0 || raw_len > kMaxHistoryRaw) return DecodeStatus::kBadPayload;
  const std::span<const uint8_t> body = payload.subspan(kHistoryFixedSize);
  std::vector<uint8_t> raw;
  if (codec == kHistoryRaw) {
    if (body.size() != raw_len) return DecodeStatus::kBadPayload;
    raw.assign(body.begin(), body.end());
  } else if (codec == kHistoryZstd) {
    if (ZSTD_getFrameContentSize(body.data(), body.size()) != raw_len) {
      return DecodeStatus::kBadPayload;
    }
    raw.resize(raw_len);
    const size_t n = ZSTD_decompress(raw.data(), raw.size(), body.data(), body.size());
    if (ZSTD_isError(n) || n != raw_len) return DecodeStatus::kBadPayload;
  } else {
    return DecodeStatus::kBadPayload;
  }
  std::vector<HistoryRecord> records;
  size_t pos = 0;
  for (size_t i = 0; i < count; ++i) {
    if (raw.size() - pos < kHistoryEntryFixedSize) return DecodeStatus::kBadPayload;
    const uint8_t* e = raw.data() + pos;
    const uint8_t verify = e[28];
    const size_t key_len = e[30];
    const size_t path_len = load_le16(e + 32);
    if (verify > static_cast<uint8_t>(VerifyType::kSha256) ||
        key_len != digest_size(static_cast<VerifyType>(verify)) || path_len == 0 ||
        path_len > kMaxPathSize || raw.size() - pos - kHistoryEntryFixedSize < key_len + path_len) {
      return DecodeStatus::kBadPayload;
    }
    HistoryRecord r;
    r.file.session = load_le64(e);
    r.file.file_id = load_le32(e + 8);
    r.file.size = load_le64(e + 12);
    r.sent_ns = static_cast<int64_t>(load_le64(e + 20));
    r.file.verify = static_cast<VerifyType>(verify);
    r.lane = e[29] == 0 ? kLaneUnsaid : e[29] == kListStripedByte ? kLaneAll : e[29] - 1;
    r.file.digest = hex_of(e + kHistoryEntryFixedSize, key_len);
    r.file.path.assign(reinterpret_cast<const char*>(e + kHistoryEntryFixedSize + key_len),
                       path_len);
    records.push_back(std::move(r));
    pos += kHistoryEntryFixedSize + key_len + path_len;
  }
  if (pos != raw.size()) return DecodeStatus::kBadPayload;
  out->sender_id = load_le64(p);
  out->records = std::move(records);
  return DecodeStatus::kOk;
}

}  // namespace ddft::common
