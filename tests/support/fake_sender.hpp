// A fake sender: the datagrams dd_file_send would send for one session, built with the real
// encoders of common/protocol.hpp. Shared by the receiver's unit tests and the fuzz seed maker
// (tests/fuzz/make_seeds.cpp), so both speak what a real sender speaks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/hash.hpp"
#include "common/history_wire.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"

namespace ddft::testing {

using Datagram = std::vector<uint8_t>;

// Builds the datagrams of one sender session, numbering them from sequence 0 in the order they
// are built. Every datagram is whole (checksummed, unsealed). Not thread-safe.
class FakeSender {
 public:
  // The announces' mtime when the caller gives none.
  static constexpr int64_t kDefaultMtimeNs = 1'600'000'000'000'000'000;

  // `chunk`: data bytes per data packet (the announces' chunk_size); `mtime_ns`: every announce's.
  explicit FakeSender(uint64_t session, size_t chunk = 1000, int64_t mtime_ns = kDefaultMtimeNs)
      : session_(session), chunk_(chunk), mtime_ns_(mtime_ns) {}

  // A file's announce (mode 0640), `pause_s` the pause the sender promises after the file.
  Datagram announce(uint32_t id, const std::string& path, uint64_t size,
                    common::VerifyType v = common::VerifyType::kB2B, uint8_t pause_s = 0);
  // The announce the sender repeats mid-file (kFlagRepeat), which tells a receiver that started
  // after the first one which file the data that follows belongs to.
  Datagram repeat_announce(uint32_t id, const std::string& path, uint64_t size,
                           common::VerifyType v = common::VerifyType::kB2B);
  // The announce of a file striped over every lane (kFlagStriped), as each lane sends it.
  Datagram striped_announce(uint32_t id, const std::string& path, uint64_t size,
                            common::VerifyType v = common::VerifyType::kB2B);
  // The announce of a file of a channel (kFlagChannel): `path`'s first component names it.
  Datagram channel_announce(uint32_t id, const std::string& path, uint64_t size,
                            common::VerifyType v = common::VerifyType::kB2B);
  // The data packets of content[from, to) (`from` a multiple of the chunk size), copy `copy`.
  std::vector<Datagram> data(uint32_t id, const std::string& content, uint8_t copy = 0,
                             size_t from = 0, size_t to = std::string::npos);
  // The kZData pieces of `frame` (any bytes; a zstd frame when real) standing for `raw_len` bytes
  // of the file at `offset`, cut as dd_file_send cuts them (zdata_piece_size of the chunk size).
  std::vector<Datagram> zframe(uint32_t id, uint64_t offset, uint32_t raw_len,
                               const std::string& frame, uint8_t copy = 0);
  // `content` in blocks of `block` bytes (a multiple of the chunk size), each sent as a zstd
  // frame (level 3, with its checksum) as --compress zstd sends it, however little it shrinks.
  std::vector<Datagram> zdata(uint32_t id, const std::string& content, size_t block,
                              uint8_t copy = 0);
  // The end packet of `content`, with its key under `v`; copy `copy` of `copies`.
  Datagram end(uint32_t id, const std::string& content,
               common::VerifyType v = common::VerifyType::kB2B, uint8_t copy = 0,
               uint8_t copies = 1);
  Datagram abort(uint32_t id, const std::string& reason);
  // A heartbeat (the final one with `final`) announcing `interval_ms` to the next; it goes down
  // the sender's lane `lane` of `lanes`.
  Datagram heartbeat(bool final, uint32_t interval_ms = 1000, uint16_t lane = 0,
                     uint16_t lanes = 1);
  // A heartbeat sent during a DFTS sleep (kHeartbeatSleeping), down the sender's lane `lane` of
  // `lanes`.
  Datagram sleeping_heartbeat(uint16_t lane = 0, uint16_t lanes = 1, uint32_t interval_ms = 1000);
  // The sender's kSenderInfo: its id, and for each of its lanes the lowest lane on the same host.
  Datagram sender_info(uint64_t sender_id, const std::vector<uint8_t>& host);

  // A kHistory datagram of `records`, all of them (throws std::runtime_error when they do not
  // fit in one).
  Datagram history(uint64_t sender_id, const std::vector<common::HistoryRecord>& records);
  // A kResend: the file announced next as `id` is a copy of `of` (its session, id and digest).
  Datagram resend(uint32_t id, const common::FileIdentity& of);

  // A file as the sender's file list names it: finished (with the key of `content` under
  // `verify`) or aborted (no key).
  struct Listed {
    uint32_t id;
    std::string path;
    std::string content;
    common::VerifyType verify = common::VerifyType::kB2B;
    bool aborted = false;
    int lane = common::kLaneUnsaid;  // the lane that carried it
  };
  // One kFileList datagram naming all of `files`; `flags` kListComplete for the complete list the
  // sender sends at the end of a session. Throws std::runtime_error when they do not fit in one.
  Datagram file_list(const std::vector<Listed>& files, uint16_t flags = 0);

  // A whole file: announce, data, end.
  std::vector<Datagram> file(uint32_t id, const std::string& path, const std::string& content,
                             common::VerifyType v = common::VerifyType::kB2B);

  uint64_t session() const { return session_; }
  // The next sequence number; callers that add datagrams of their own (parity) move it on.
  uint64_t* seq() { return &seq_; }

 private:
  Datagram announce_with(uint32_t id, const std::string& path, uint64_t size, common::VerifyType v,
                         uint8_t pause_s, uint16_t flags);
  Datagram heartbeat_flagged(uint32_t flags, uint32_t interval_ms, uint16_t lane, uint16_t lanes);
  common::Header next();

  uint64_t session_;
  size_t chunk_;
  int64_t mtime_ns_;
  uint64_t seq_ = 0;
};

// `in` (a whole datagram) sealed by `sealer`, as the sender seals what it sends (--key-file).
Datagram sealed(common::Sealer& sealer, const Datagram& in);

}  // namespace ddft::testing
