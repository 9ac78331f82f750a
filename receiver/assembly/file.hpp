// One file in flight: what its announce said, what has arrived, and where it is in its life.
// The file table (receiver/assembly/file_table.hpp) owns every File and is the one place a File
// ends; the other units get a File& for the length of one call, or a pointer the table keeps alive
// (a write's block, the committer's cookie) while the file has I/O or a step in progress.
//
// Writer thread only. The functions over a File are pure; nothing here throws.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.hpp"
#include "common/file_identity.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "receiver/delivery/file_repairs.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

struct Block;

// kReceiving: packets arrive (the temporary file may still be being created); kEnding: all
// data and the end are in, writes finish; kVerifying: read back on the pool; kCommitting: with
// the committer (flush, rename, folder sync); kFailing: its record is being written.
enum class FileState { kReceiving, kEnding, kVerifying, kCommitting, kFailing, kDone };

struct File {
  uint64_t session = 0;
  uint32_t id = 0;
  std::string path;
  common::VerifyType verify = common::VerifyType::kNone;
  uint8_t pause_s = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint64_t chunk_size = 0;
  uint64_t chunks_total = 0;
  uint64_t chunks_received = 0;
  uint64_t bytes_received = 0;
  std::vector<uint64_t> bitmap;
  std::map<uint64_t, Block*> blocks;  // resident blocks by block index
  std::set<uint64_t> evicted;         // block indexes written out early (partial)
  uint64_t hash_next = 0;             // next block index to hash
  bool hash_stream = true;            // false: verify by reading the file back
  std::unique_ptr<common::Hasher> hasher;
  TempFile tmp;
  FileState state = FileState::kReceiving;
  int ops_pending = 0;
  int io_error = 0;
  std::string fail_reason;
  bool end_seen = false;
  common::Clock::time_point end_seen_at{};
  common::End end;
  common::Clock::time_point announced{};
  common::Clock::time_point first_data{};
  common::Clock::time_point last_packet{};
  uint64_t next_report = 0;
  uint8_t last_copy = 0;    // --repeat: the copy whose data came last
  uint64_t ring_drops = 0;  // its packets dropped in a full receive buffer
  FileRepairs repairs;      // what FEC and later copies filled in (FileTable::store_chunk())
  // Lanes (receiver/assembly/file_lanes.hpp): the lane that announced it first; a striped file
  // (kFlagStriped) comes down every lane. open_lanes: bit k set while lane k holds it open (it
  // announced the file and neither announced a later one nor sent the file's last end);
  // lanes_seen: every lane that announced it.
  size_t lane = 0;
  bool striped = false;
  // Its channel (kFlagChannel: its path's first component), "" without one: a lane announcing a
  // later file closes it only when that file is of the same channel.
  std::string channel;
  std::string sender;  // its sender as the metrics label it: SenderSession::label()
  uint64_t open_lanes = 0;
  uint64_t lanes_seen = 0;
  bool superseded = false;  // every lane that carried it has moved on (a later file, its end)
  common::Clock::time_point superseded_at{};
  bool tmp_ready = false;    // its temporary file exists (created on the pool)
  bool joined_late = false;  // announced by a repeat: its start went before this receiver
  // A resend (kResend): the file it is a copy of (session, id, digest), which failed or was
  // missed here; delivering it resolves that failure.
  std::optional<common::FileIdentity> resend_of;
  bool record_posted = false;  // its failure record is being written
  bool sync_failed = false;    // a flush or folder sync failed: its data is not to be kept
  // Failed with nothing received: whether its record and Error line fit the budget, decided
  // when it failed (FileTable::fail), so that files take the budget in the order they fail and
  // not in the order their temporary files happen to be made.
  std::optional<bool> record_slot;

  bool has_chunk(uint64_t i) const { return (bitmap[i / 64] >> (i % 64)) & 1; }
  void set_chunk(uint64_t i) { bitmap[i / 64] |= uint64_t{1} << (i % 64); }
  uint64_t block_count(size_t block_size) const {
    return size / block_size + (size % block_size != 0);
  }
};

// Files in flight by (session, file id), owned by the file table: a restarted sender reuses ids
// while the old session's failed files may still be finishing their I/O.
using FilesInFlight = std::map<std::pair<uint64_t, uint32_t>, std::unique_ptr<File>>;

// The session with the largest count in `counts` (a session's files or blocks), 0 when every
// count is 0.
inline uint64_t busiest_session(const std::map<uint64_t, size_t>& counts) {
  uint64_t busiest = 0;
  size_t most = 0;
  for (const auto& [s, n] : counts) {
    if (n > most) {
      most = n;
      busiest = s;
    }
  }
  return busiest;
}

// The sender's digest of `f`, from its end packet (size 0 before its end came, or with kNone).
common::Digest sent_key(const File& f);
// `f` as its sender named it; the digest once its end came.
common::FileIdentity identity_of(const File& f);

// The byte ranges [start, end) of `f` that have not arrived, at most `limit` of them; *total
// gets how many there are in all.
std::vector<std::pair<uint64_t, uint64_t>> missing_ranges(const File& f, size_t limit,
                                                          uint64_t* total);

}  // namespace ddft::receiver
