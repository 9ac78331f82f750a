#include "support/fake_sender.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ddft::testing {
namespace {

common::Digest digest_of(common::VerifyType v, const std::string& content) {
  return common::hash_buffer(v, {reinterpret_cast<const uint8_t*>(content.data()), content.size()});
}

}  // namespace

common::Header FakeSender::next() {
  common::Header h;
  h.session_id = session_;
  h.seq = seq_++;
  return h;
}

Datagram FakeSender::announce_with(uint32_t id, const std::string& path, uint64_t size,
                                   common::VerifyType v, uint8_t pause_s, uint16_t flags) {
  common::Announce a;
  a.file_id = id;
  a.verify = v;
  a.pause_s = pause_s;
  a.size = size;
  a.mtime_ns = mtime_ns_;
  a.mode = 0640;
  a.chunk_size = static_cast<uint32_t>(chunk_);
  a.path = path;
  common::Header h = next();
  h.flags = flags;
  Datagram b(common::kHeaderSize + common::kAnnounceFixedSize + path.size());
  b.resize(common::encode_announce(h, a, b));
  return b;
}

Datagram FakeSender::announce(uint32_t id, const std::string& path, uint64_t size,
                              common::VerifyType v, uint8_t pause_s) {
  return announce_with(id, path, size, v, pause_s, 0);
}

Datagram FakeSender::repeat_announce(uint32_t id, const std::string& path, uint64_t size,
                                     common::VerifyType v) {
  return announce_with(id, path, size, v, 0, common::kFlagRepeat);
}

Datagram FakeSender::striped_announce(uint32_t id, const std::string& path, uint64_t size,
                                      common::VerifyType v) {
  return announce_with(id, path, size, v, 0, common::kFlagStriped);
}

Datagram FakeSender::channel_announce(uint32_t id, const std::string& path, uint64_t size,
                                      common::VerifyType v) {
  return announce_with(id, path, size, v, 0, common::kFlagChannel);
}

std::vector<Datagram> FakeSender::data(uint32_t id, const std::string& content, uint8_t copy,
                                       size_t from, size_t to) {
  std::vector<Datagram> out;
  const size_t stop = std::min(to, content.size());
  for (size_t off = from; off < stop; off += chunk_) {
    const size_t len = std::min(chunk_, content.size() - off);
    Datagram b(common::data_datagram_size(len));
    std::memcpy(common::data_bytes_of(b.data()), content.data() + off, len);
    b.resize(common::encode_data_in_place(next(), {id, off, copy}, len, b));
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<Datagram> FakeSender::zframe(uint32_t id, uint64_t offset, uint32_t raw_len,
                                         const std::string& frame, uint8_t copy) {
  std::vector<Datagram> out;
  const size_t piece = common::zdata_piece_size(chunk_);
  common::ZDataHeader z;
  z.file_id = id;
  z.copy = copy;
  z.offset = offset;
  z.raw_len = raw_len;
  z.frame_len = static_cast<uint32_t>(frame.size());
  for (size_t off = 0; off < frame.size(); off += piece) {
    const size_t len = std::min(piece, frame.size() - off);
    Datagram b(common::kHeaderSize + common::kZDataHeaderSize + len);
    std::memcpy(common::zdata_bytes_of(b.data()), frame.data() + off, len);
    z.frame_off = static_cast<uint32_t>(off);
    b.resize(common::encode_zdata_in_place(next(), z, len, b));
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<Datagram> FakeSender::zdata(uint32_t id, const std::string& content, size_t block,
                                        uint8_t copy) {
  std::vector<Datagram> out;
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  for (size_t off = 0; off < content.size(); off += block) {
    const size_t len = std::min(block, content.size() - off);
    std::string frame(ZSTD_compressBound(len), '\0');
    const size_t n = ZSTD_compress2(c, frame.data(), frame.size(), content.data() + off, len);
    if (ZSTD_isError(n)) {
      ZSTD_freeCCtx(c);
      throw std::runtime_error(ZSTD_getErrorName(n));
    }
    frame.resize(n);
    for (auto& d : zframe(id, off, static_cast<uint32_t>(len), frame, copy)) {
      out.push_back(std::move(d));
    }
  }
  ZSTD_freeCCtx(c);
  return out;
}

Datagram FakeSender::end(uint32_t id, const std::string& content, common::VerifyType v,
                         uint8_t copy, uint8_t copies) {
  const common::Digest d = digest_of(v, content);
  common::End e;
  e.file_id = id;
  e.verify = v;
  e.size = content.size();
  e.key_len = d.size;
  e.key = d.bytes;
  e.copy = copy;
  e.copies = copies;
  Datagram b(common::kHeaderSize + common::kEndFixedSize + common::kMaxKeySize);
  b.resize(common::encode_end(next(), e, b));
  return b;
}

Datagram FakeSender::abort(uint32_t id, const std::string& reason) {
  Datagram b(common::kHeaderSize + common::kAbortFixedSize + reason.size());
  b.resize(common::encode_abort(next(), common::Abort{id, reason}, b));
  return b;
}

Datagram FakeSender::heartbeat(bool final, uint32_t interval_ms, uint16_t lane, uint16_t lanes) {
  return heartbeat_flagged(final ? common::kHeartbeatFinal : 0u, interval_ms, lane, lanes);
}

Datagram FakeSender::sleeping_heartbeat(uint16_t lane, uint16_t lanes, uint32_t interval_ms) {
  return heartbeat_flagged(common::kHeartbeatSleeping, interval_ms, lane, lanes);
}

Datagram FakeSender::heartbeat_flagged(uint32_t flags, uint32_t interval_ms, uint16_t lane,
                                       uint16_t lanes) {
  // The heartbeat carries the sequence number it is sent with (read before next() moves it on).
  const common::Heartbeat hb{flags, interval_ms, seq_, 1, lane, lanes};
  Datagram b(common::kHeaderSize + common::kHeartbeatSize);
  b.resize(common::encode_heartbeat(next(), hb, b));
  return b;
}

Datagram FakeSender::sender_info(uint64_t sender_id, const std::vector<uint8_t>& host) {
  Datagram b(common::kHeaderSize + common::kSenderInfoFixedSize + host.size());
  b.resize(common::encode_sender_info(next(), {sender_id, host, {}}, b));
  return b;
}

Datagram FakeSender::history(uint64_t sender_id,
                             const std::vector<common::HistoryRecord>& records) {
  size_t taken = 0;
  const std::vector<uint8_t> payload = common::pack_history(
      sender_id, records, common::kMaxDatagramSize - common::kHeaderSize, &taken);
  if (taken != records.size()) throw std::runtime_error("history records do not fit a datagram");
  common::Header h = next();
  h.type = common::PacketType::kHistory;
  Datagram b(common::kHeaderSize + payload.size());
  b.resize(common::encode_payload(h, payload, b));
  return b;
}

Datagram FakeSender::resend(uint32_t id, const common::FileIdentity& of) {
  Datagram b(common::kHeaderSize + common::kResendFixedSize + common::kMaxKeySize);
  b.resize(common::encode_resend(next(), {id, of}, b));
  if (b.empty()) throw std::runtime_error("the resend's digest does not fit its verify");
  return b;
}

Datagram FakeSender::file_list(const std::vector<Listed>& files, uint16_t flags) {
  std::vector<common::FileListEntry> entries;
  for (const Listed& f : files) {
    common::FileListEntry e;
    e.file_id = f.id;
    e.size = f.content.size();
    e.verify = f.verify;
    e.aborted = f.aborted;
    e.lane = f.lane;
    if (!f.aborted) {
      const common::Digest d = digest_of(f.verify, f.content);
      e.key_len = d.size;
      e.key = d.bytes;
    }
    e.path = f.path;
    entries.push_back(e);
  }
  Datagram b(9000);
  size_t taken = 0;
  b.resize(common::encode_file_list(next(), flags, entries, b, &taken));
  if (taken != entries.size()) throw std::runtime_error("a fake file list does not fit");
  return b;
}

std::vector<Datagram> FakeSender::file(uint32_t id, const std::string& path,
                                       const std::string& content, common::VerifyType v) {
  std::vector<Datagram> out{announce(id, path, content.size(), v)};
  for (Datagram& d : data(id, content)) out.push_back(std::move(d));
  out.push_back(end(id, content, v));
  return out;
}

Datagram sealed(common::Sealer& sealer, const Datagram& in) {
  Datagram buf(in.size() + common::kSealOverhead);
  std::copy(in.begin(), in.end(), buf.begin());
  buf.resize(sealer.seal(buf, in.size()));
  return buf;
}

}  // namespace ddft::testing
