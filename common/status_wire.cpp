#include "common/status_wire.hpp"

#include <array>
#include <cstring>

#include "common/le_bytes.hpp"

namespace ddft::common {
namespace {

constexpr size_t kMaxChannelName = 64;
// Where the u64 fields start, in the order of SenderStatus's members.
constexpr size_t kU64At = 16;
constexpr size_t kU64Count = 12;
static_assert(kU64At + 8 * kU64Count + 2 == kStatusFixedSize);

// The u64 fields, in wire order.
std::array<uint64_t SenderStatus::*, kU64Count> u64_fields() {
  return {
      &SenderStatus::queued_files,   &SenderStatus::queued_bytes,    &SenderStatus::read_failures,
      &SenderStatus::files_refused,  &SenderStatus::retention_bytes, &SenderStatus::retention_limit,
      &SenderStatus::watch_free,     &SenderStatus::watch_size,      &SenderStatus::retention_free,
      &SenderStatus::retention_size, &SenderStatus::lanes_up,        &SenderStatus::rate_limit};
}

}  // namespace

StatusAlarms status_alarms(const SenderStatus& s) {
  const auto low = [](uint64_t free, uint64_t size) {
    return size > 0 && static_cast<double>(free) < kLowFreeRatio * static_cast<double>(size);
  };
  StatusAlarms a;
  a.backlog = s.queued_files > 0 && s.oldest_wait_s >= kBacklogWarnS;
  a.watch_low = low(s.watch_free, s.watch_size);
  a.retention_low = low(s.retention_free, s.retention_size);
  a.retention_full = s.retention_limit > 0 && s.retention_bytes > s.retention_limit;
  return a;
}

size_t encode_sender_status(const SenderStatus& s, std::span<uint8_t> out) {
  const size_t head = kStatusFixedSize + s.version.size();
  if (s.version.size() > kMaxStatusVersion || head > out.size()) return 0;
  uint8_t* p = out.data();
  uint8_t flags = s.hot_folder ? kStatusHotFolder : 0;
  if (s.channels_cut) flags |= kStatusChannelsCut;
  p[2] = kStatusFormat;
  store_le32(p + 4, s.seq);
  store_le32(p + 8, s.interval_s);
  store_le32(p + 12, s.oldest_wait_s);
  const auto fields = u64_fields();
  for (size_t i = 0; i < kU64Count; ++i) store_le64(p + kU64At + 8 * i, s.*fields[i]);
  p[112] = static_cast<uint8_t>(s.version.size());
  std::memcpy(p + kStatusFixedSize, s.version.data(), s.version.size());
  size_t at = head;
  size_t count = 0;
  for (const SenderStatusChannel& c : s.channels) {
    if (c.name.empty() || c.name.size() > kMaxChannelName) return 0;
    const size_t n = kStatusChannelFixedSize + c.name.size();
    if (at + n > out.size() || at + n > UINT16_MAX || count == UINT8_MAX) {
      flags |= kStatusChannelsCut;
      break;
    }
    uint8_t* e = p + at;
    e[0] = static_cast<uint8_t>(c.name.size());
    store_le64(e + 1, c.queued_files);
    store_le64(e + 9, c.queued_bytes);
    store_le32(e + 17, c.oldest_wait_s);
    std::memcpy(e + kStatusChannelFixedSize, c.name.data(), c.name.size());
    at += n;
    ++count;
  }
  p[113] = static_cast<uint8_t>(count);
  p[3] = flags;
  store_le16(p, static_cast<uint16_t>(at));
  return at;
}

DecodeStatus decode_sender_status(std::span<const uint8_t> tail, SenderStatus* out) {
  if (tail.size() < kStatusFixedSize) return DecodeStatus::kBadPayload;
  const uint8_t* p = tail.data();
  const size_t len = load_le16(p);
  const size_t version_len = p[112];
  const size_t count = p[113];
  if (len > tail.size() || len < kStatusFixedSize + version_len ||
      version_len > kMaxStatusVersion) {
    return DecodeStatus::kBadPayload;
  }
  out->hot_folder = (p[3] & kStatusHotFolder) != 0;
  out->channels_cut = (p[3] & kStatusChannelsCut) != 0;
  out->seq = load_le32(p + 4);
  out->interval_s = load_le32(p + 8);
  out->oldest_wait_s = load_le32(p + 12);
  const auto fields = u64_fields();
  for (size_t i = 0; i < kU64Count; ++i) out->*fields[i] = load_le64(p + kU64At + 8 * i);
  out->version.assign(reinterpret_cast<const char*>(p + kStatusFixedSize), version_len);
  out->channels.clear();
  size_t at = kStatusFixedSize + version_len;
  for (size_t i = 0; i < count; ++i) {
    if (at + kStatusChannelFixedSize > len) return DecodeStatus::kBadPayload;
    const uint8_t* e = p + at;
    const size_t name_len = e[0];
    if (name_len == 0 || name_len > kMaxChannelName ||
        at + kStatusChannelFixedSize + name_len > len) {
      return DecodeStatus::kBadPayload;
    }
    SenderStatusChannel c;
    c.queued_files = load_le64(e + 1);
    c.queued_bytes = load_le64(e + 9);
    c.oldest_wait_s = load_le32(e + 17);
    c.name.assign(reinterpret_cast<const char*>(e + kStatusChannelFixedSize), name_len);
    out->channels.push_back(std::move(c));
    at += kStatusChannelFixedSize + name_len;
  }
  return DecodeStatus::kOk;
}

}  // namespace ddft::common
