// Fuzz harness: the datagram decoder and every payload decoder of common/protocol.hpp.
//
// Input: one control byte, then a datagram. Control bit 0 set: before decoding, the header's
// magic, version and payload_len are made to fit and the checksum is recomputed (reseal, or
// reseal_header for a sealed datagram), so that mutations reach the payload decoders instead of
// all failing the checksum. The payload
// decoders also run straight on the bytes after the header, whatever the header says.
//
// Checked: nothing is read outside the datagram (ASan), a decoded packet's payload is exactly
// the bytes after the header, and whatever a decoder accepts, its encoder writes back to a
// datagram that decodes to the same fields (same bytes, for announces, which have no reserved
// field). kFileList: every entry's path lies inside the payload and the entries fill it.
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/history_wire.hpp"
#include "common/protocol.hpp"
#include "common/status_wire.hpp"
#include "fuzz_support.hpp"

namespace ddft::fuzz {
namespace {
using namespace ddft::common;
using Bytes = std::span<const uint8_t>;

bool same_header(const Header& a, const Header& b) {
  return a.version == b.version && a.type == b.type && a.payload_len == b.payload_len &&
         a.session_id == b.session_id && a.seq == b.seq && a.flags == b.flags &&
         a.fec_pos == b.fec_pos;
}

// Decodes a datagram the encoders just wrote; it must pass and carry `h`.
Packet decode_encoded(Bytes datagram, const Header& h, PacketType type) {
  Packet p;
  require(decode_packet(datagram, &p) == DecodeStatus::kOk, "an encoded datagram does not decode");
  Header want = h;
  want.type = type;
  want.payload_len = static_cast<uint16_t>(datagram.size() - kHeaderSize);
  require(same_header(p.header, want), "the header changed through encode and decode");
  return p;
}

// kZData: whatever decode_zdata() accepts keeps its bounds and encodes back to the same fields.
void round_trip_zdata(const Header& h, Bytes payload, std::vector<uint8_t>& buf) {
  ZDataHeader z;
  Bytes piece;
  if (decode_zdata(payload, &z, &piece) != DecodeStatus::kOk) return;
  require(piece.data() == payload.data() + kZDataHeaderSize &&
              piece.size() + kZDataHeaderSize == payload.size(),
          "a compressed piece is not the rest of its payload");
  require(z.codec == kCodecZstd && z.raw_len >= 1 && z.raw_len <= kMaxZBlockSize &&
              z.frame_len >= 1 && z.frame_len <= z.raw_len && z.frame_off < z.frame_len &&
              piece.size() >= 1 && piece.size() <= z.frame_len - z.frame_off,
          "a compressed piece out of its bounds was accepted");
  std::memcpy(buf.data() + kHeaderSize + kZDataHeaderSize, piece.data(), piece.size());
  require(encode_zdata_in_place(h, z, piece.size(), buf) == buf.size(),
          "a decoded compressed piece does not encode");
  const Packet p = decode_encoded(buf, h, PacketType::kZData);
  ZDataHeader z2;
  Bytes piece2;
  require(decode_zdata(p.payload, &z2, &piece2) == DecodeStatus::kOk && z2.file_id == z.file_id &&
              z2.offset == z.offset && z2.copy == z.copy && z2.raw_len == z.raw_len &&
              z2.frame_len == z.frame_len && z2.frame_off == z.frame_off &&
              piece2.size() == piece.size() &&
              std::memcmp(piece2.data(), piece.data(), piece.size()) == 0,
          "a compressed piece changed through decode and encode");
}

// Runs the decoder of `type` on `payload`; when it accepts, encodes the result again with `h`
// and decodes that.
void round_trip(PacketType type, const Header& sent, Bytes payload) {
  // The encoders write plain datagrams: sealing (common/seal.hpp) is a layer above them.
  Header h = sent;
  h.flags = static_cast<uint16_t>(h.flags & ~(kFlagAuth | kFlagEncrypt));
  // Exactly the size the datagram must have again: ASan sees an encoder that writes past it.
  std::vector<uint8_t> buf(kHeaderSize + payload.size());
  switch (type) {
    case PacketType::kAnnounce: {
      Announce a;
      if (decode_announce(payload, &a) != DecodeStatus::kOk) return;
      require(a.path.size() + kAnnounceFixedSize == payload.size() &&
                  reinterpret_cast<const uint8_t*>(a.path.data()) ==
                      payload.data() + kAnnounceFixedSize,
              "an announce's path is not the rest of its payload");
      require(a.chunk_size >= kMinChunkSize && a.chunk_size <= kMaxDatagramSize,
              "an announce with a chunk size out of range was accepted");
      require(encode_announce(h, a, buf) == buf.size(), "a decoded announce does not encode");
      const Packet p = decode_encoded(buf, h, type);
      require(std::memcmp(p.payload.data(), payload.data(), payload.size()) == 0,
              "an announce changed through decode and encode");
      break;
    }
    case PacketType::kData: {
      DataHeader d;
      Bytes data;
      if (decode_data(payload, &d, &data) != DecodeStatus::kOk) return;
      require(data.data() == payload.data() + kDataHeaderSize &&
                  data.size() + kDataHeaderSize == payload.size(),
              "a data packet's data is not the rest of its payload");
      if (!data.empty())
        std::memcpy(buf.data() + kHeaderSize + kDataHeaderSize, data.data(), data.size());
      require(encode_data_in_place(h, d, data.size(), buf) == buf.size(),
              "a decoded data packet does not encode");
      const Packet p = decode_encoded(buf, h, type);
      DataHeader d2;
      Bytes data2;
      require(decode_data(p.payload, &d2, &data2) == DecodeStatus::kOk && d2.file_id == d.file_id &&
                  d2.offset == d.offset && d2.copy == d.copy && data2.size() == data.size() &&
                  (data.empty() || std::memcmp(data2.data(), data.data(), data.size()) == 0),
              "a data packet changed through decode and encode");
      break;
    }
    case PacketType::kZData:
      round_trip_zdata(h, payload, buf);
      break;
    case PacketType::kEnd: {
      End e;
      if (decode_end(payload, &e) != DecodeStatus::kOk) return;
      require(e.key_len == digest_size(e.verify) && e.copy < e.copies,
              "an end packet with a bad key length or copy was accepted");
      require(encode_end(h, e, buf) == buf.size(), "a decoded end packet does not encode");
      const Packet p = decode_encoded(buf, h, type);
      End e2;
      require(decode_end(p.payload, &e2) == DecodeStatus::kOk && e2.file_id == e.file_id &&
                  e2.verify == e.verify && e2.size == e.size && e2.key_len == e.key_len &&
                  e2.copy == e.copy && e2.copies == e.copies && e2.key == e.key,
              "an end packet changed through decode and encode");
      break;
    }
    case PacketType::kAbort: {
      Abort a;
      if (decode_abort(payload, &a) != DecodeStatus::kOk) return;
      require(
          a.reason.size() <= kMaxAbortReason && a.reason.size() + kAbortFixedSize == payload.size(),
          "an abort's reason is not the rest of its payload");
      require(encode_abort(h, a, buf) == buf.size(), "a decoded abort does not encode");
      const Packet p = decode_encoded(buf, h, type);
      Abort a2;
      require(decode_abort(p.payload, &a2) == DecodeStatus::kOk && a2.file_id == a.file_id &&
                  a2.reason == a.reason,
              "an abort changed through decode and encode");
      break;
    }
    case PacketType::kHeartbeat: {
      Heartbeat hb;
      if (decode_heartbeat(payload, &hb) != DecodeStatus::kOk) return;
      require(encode_heartbeat(h, hb, buf) == buf.size(), "a decoded heartbeat does not encode");
      const Packet p = decode_encoded(buf, h, type);
      Heartbeat hb2;
      require(decode_heartbeat(p.payload, &hb2) == DecodeStatus::kOk && hb2.flags == hb.flags &&
                  hb2.interval_ms == hb.interval_ms && hb2.packets_sent == hb.packets_sent &&
                  hb2.files_announced == hb.files_announced,
              "a heartbeat changed through decode and encode");
      break;
    }
    case PacketType::kSenderInfo: {
      SenderInfo si;
      if (decode_sender_info(payload, &si) != DecodeStatus::kOk) return;
      require(!si.host.empty() && si.host.size() <= kMaxLanes &&
                  kSenderInfoFixedSize + si.host.size() <= payload.size(),
              "a sender info with a bad lane count was accepted");
      for (size_t k = 0; k < si.host.size(); ++k) {
        require(si.host[k] <= k && si.host[si.host[k]] == si.host[k],
                "a sender info with a bad host was accepted");
      }
      // The bytes after the hosts (the status) are kept as they came.
      const size_t n = encode_sender_info(h, si, buf);
      require(n == kHeaderSize + payload.size(), "a decoded sender info does not encode");
      SenderStatus status;
      if (!si.tail.empty() && decode_sender_status(si.tail, &status) == DecodeStatus::kOk) {
        std::vector<uint8_t> again(si.tail.size());
        const size_t m = encode_sender_status(status, again);
        require(m > 0 && m <= si.tail.size(), "a decoded sender status does not encode");
      }
      const Packet p = decode_encoded(std::span(buf).first(n), h, type);
      SenderInfo si2;
      require(decode_sender_info(p.payload, &si2) == DecodeStatus::kOk &&
                  si2.sender_id == si.sender_id && si2.host == si.host,
              "a sender info changed through decode and encode");
      break;
    }
    case PacketType::kHistory: {
      HistoryBundle b;
      if (decode_history(payload, &b) != DecodeStatus::kOk) return;
      require(!b.records.empty(), "a history of no entries was accepted");
      // Packed again (perhaps with the other codec) it decodes to the same entries.
      size_t taken = 0;
      const std::vector<uint8_t> again =
          pack_history(b.sender_id, b.records, kMaxDatagramSize - kHeaderSize, &taken);
      if (taken == 0) return;  // entries that compressed better than they ever will again
      HistoryBundle b2;
      require(decode_history(again, &b2) == DecodeStatus::kOk && b2.sender_id == b.sender_id &&
                  b2.records.size() == taken &&
                  std::equal(b2.records.begin(), b2.records.end(), b.records.begin()),
              "a history changed through decode and pack");
      break;
    }
    case PacketType::kResend: {
      Resend r;
      if (decode_resend(payload, &r) != DecodeStatus::kOk) return;
      require(r.of.digest.size() == 2 * digest_size(r.of.verify),
              "a resend whose digest does not fit its verify was accepted");
      // Bytes after the key are not kept: the encoding is the payload up to it.
      const size_t n = encode_resend(h, r, buf);
      require(n == kHeaderSize + kResendFixedSize + digest_size(r.of.verify),
              "a decoded resend does not encode");
      const Packet p = decode_encoded(std::span(buf).first(n), h, type);
      Resend r2;
      require(decode_resend(p.payload, &r2) == DecodeStatus::kOk && r2.file_id == r.file_id &&
                  r2.of == r.of,
              "a resend changed through decode and encode");
      break;
    }
    case PacketType::kParity: {
      Parity pa;
      Bytes shard;
      if (decode_parity(payload, &pa, &shard) != DecodeStatus::kOk) return;
      require(!shard.empty() && shard.data() == payload.data() + kParityHeaderSize &&
                  shard.size() + kParityHeaderSize == payload.size(),
              "a parity packet's shard is not the rest of its payload");
      require(pa.k >= 1 && pa.m >= 1 && pa.k + pa.m <= 255 && pa.interleave >= 1 && pa.count >= 1 &&
                  pa.count <= pa.k * pa.interleave && pa.group < pa.interleave && pa.index < pa.m,
              "a parity packet with a bad window geometry was accepted");
      require(encode_parity(h, pa, shard, buf) == buf.size(), "a decoded parity does not encode");
      const Packet p = decode_encoded(buf, h, type);
      Parity pa2;
      Bytes shard2;
      require(decode_parity(p.payload, &pa2, &shard2) == DecodeStatus::kOk &&
                  pa2.window_seq == pa.window_seq && pa2.count == pa.count && pa2.k == pa.k &&
                  pa2.m == pa.m && pa2.interleave == pa.interleave && pa2.group == pa.group &&
                  pa2.index == pa.index && shard2.size() == shard.size() &&
                  std::memcmp(shard2.data(), shard.data(), shard.size()) == 0,
              "a parity packet changed through decode and encode");
      break;
    }
    case PacketType::kFileList: {
      FileList list;
      if (decode_file_list(payload, &list) != DecodeStatus::kOk) return;
      size_t bytes = kFileListFixedSize;
      for (const FileListEntry& e : list.entries) {
        const auto* path = reinterpret_cast<const uint8_t*>(e.path.data());
        require(!e.path.empty() && e.path.size() <= kMaxPathSize &&
                    e.key_len == (e.aborted ? 0 : digest_size(e.verify)) &&
                    path == payload.data() + bytes + kFileListEntryFixedSize + e.key_len &&
                    path + e.path.size() <= payload.data() + payload.size(),
                "a file list with a bad entry was accepted");
        bytes += kFileListEntryFixedSize + e.key_len + e.path.size();
      }
      require(!list.entries.empty() && list.entries.size() <= 0xFFFF && bytes == payload.size(),
              "a file list's entries do not fill its payload");
      // The same entries encode to a payload of the same size, all in one datagram.
      size_t taken = 0;
      require(encode_file_list(h, list.flags, list.entries, buf, &taken) == buf.size() &&
                  taken == list.entries.size(),
              "a decoded file list does not encode");
      const Packet p = decode_encoded(buf, h, type);
      FileList list2;
      require(decode_file_list(p.payload, &list2) == DecodeStatus::kOk &&
                  list2.flags == list.flags && list2.entries.size() == list.entries.size(),
              "a file list changed through decode and encode");
      for (size_t i = 0; i < list.entries.size(); ++i) {
        const FileListEntry& a = list.entries[i];
        const FileListEntry& b = list2.entries[i];
        require(a.file_id == b.file_id && a.size == b.size && a.verify == b.verify &&
                    a.aborted == b.aborted && a.key_len == b.key_len && a.key == b.key &&
                    a.path == b.path,
                "a file list entry changed through decode and encode");
      }
      break;
    }
  }
}

constexpr PacketType kTypes[] = {PacketType::kAnnounce, PacketType::kData,      PacketType::kEnd,
                                 PacketType::kAbort,    PacketType::kHeartbeat, PacketType::kParity,
                                 PacketType::kFileList};

}  // namespace
}  // namespace ddft::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddft::common;
  using ddft::fuzz::require;
  if (size < 1) return 0;
  const bool fix = (data[0] & 1) != 0;
  // A copy of exactly the datagram's size: ASan then catches any read past its end.
  std::vector<uint8_t> dgram(data + 1, data + size);
  const bool fixed = fix && dgram.size() >= kHeaderSize && dgram.size() - kHeaderSize <= 0xFFFF;
  if (fixed) ddft::fuzz::fix_header(dgram);
  Packet p;
  const DecodeStatus st = decode_packet(dgram, &p);
  require(!decode_status_name(st).empty(), "a decode status has no name");
  if (st == DecodeStatus::kOk) {
    require(dgram.size() >= kHeaderSize && p.payload.data() == dgram.data() + kHeaderSize &&
                p.payload.size() == dgram.size() - kHeaderSize &&
                p.header.payload_len == p.payload.size(),
            "a decoded payload is not the rest of the datagram");
    ddft::fuzz::round_trip(p.header.type, p.header, p.payload);
  } else if (fixed) {
    require(st == DecodeStatus::kBadType,
            "a resealed datagram failed for another reason than its type");
  }
  // The payload decoders on their own, on whatever follows the header (or the whole input when
  // it is shorter than a header).
  const std::span<const uint8_t> rest = dgram.size() > kHeaderSize
                                            ? std::span<const uint8_t>(dgram).subspan(kHeaderSize)
                                            : std::span<const uint8_t>(dgram);
  if (rest.size() <= 0xFFFF) {
    for (const PacketType t : ddft::fuzz::kTypes) ddft::fuzz::round_trip(t, Header{}, rest);
  }
  return 0;
}
