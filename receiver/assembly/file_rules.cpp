#include "receiver/assembly/file_rules.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>

#include "common/log_format.hpp"

namespace ddft::receiver {
using namespace std::chrono;

namespace {
// Bounds on what one announce may make the receiver hold: 2^60 bytes, and a chunk bitmap of
// 16 MiB (1.2 TB at the smallest chunk, 1.1 PB at the default one).
constexpr uint64_t kMaxFileSize = uint64_t{1} << 60;
constexpr uint64_t kMaxBitmapWords = (uint64_t{16} << 20) / 8;
// Files in flight (receiving, finishing their writes, waiting for the committer's flush): at
// least this multiple of --max-files-in-flight, and as many as the descriptor limit allows (two
// descriptors each, a third while O_DIRECT writes run), up to kMaxFilesInFlight. A slow flush
// (hundreds of small files a batch under rws) must not make later files be refused.
constexpr size_t kFinishingPerBound = 16;
constexpr size_t kMaxFilesInFlight = 8192;
constexpr size_t kDescriptorsKept = 256;  // for the ring, the log, sockets, hooks...
}  // namespace

size_t files_in_flight_bound(size_t max_receiving) {
  rlimit rl{};
  size_t by_fds = 0;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur > kDescriptorsKept) {
    by_fds = (static_cast<size_t>(rl.rlim_cur) - kDescriptorsKept) / 3;
  } else if (rl.rlim_cur == RLIM_INFINITY) {
    by_fds = kMaxFilesInFlight;
  }
  return std::max(kFinishingPerBound * max_receiving, std::min(kMaxFilesInFlight, by_fds));
}

std::unique_ptr<File> file_from_announce(const common::Announce& a, uint64_t session,
                                         common::Clock::time_point now, uint64_t report_bytes) {
  auto f = std::make_unique<File>();
  f->session = session;
  f->id = a.file_id;
  f->path = std::string(a.path);
  f->verify = a.verify;
  f->pause_s = a.pause_s;
  f->size = a.size;
  f->mtime_ns = a.mtime_ns;
  f->mode = a.mode;
  f->chunk_size = a.chunk_size;
  // No "+ chunk - 1": a hostile size near 2^64 must not wrap to zero chunks.
  f->chunks_total = a.size / a.chunk_size + (a.size % a.chunk_size != 0);
  f->announced = f->last_packet = now;
  f->next_report = report_bytes;
  return f;
}

std::optional<std::string> size_refusal(const ReceiverConfig& cfg, uint64_t size,
                                        uint64_t chunks_total, uint64_t promised, uint64_t free) {
  const uint64_t bitmap_words = chunks_total / 64 + 1;
  if (cfg.max_file_size > 0 && size > cfg.max_file_size) {
    return fmt::format("announced size {} bytes is over --max-file-size {}",
                       common::with_commas(size), common::with_commas(cfg.max_file_size));
  }
  if (size > kMaxFileSize || bitmap_words > kMaxBitmapWords) {
    return fmt::format("announced size {} is larger than this receiver accepts", size);
  }
  if (free != UINT64_MAX && size > 0 && size + promised > free) {
    return fmt::format(
        "not enough free space: {} bytes announced, {} free on the output "
        "folder's file system{}",
        common::with_commas(size), common::with_commas(free),
        promised ? fmt::format(" ({} promised to files in flight)", common::with_commas(promised))
                 : "");
  }
  return std::nullopt;
}

Origin origin_of(const File& f, std::string sender) {
  Origin o;
  o.file = identity_of(f);
  o.file.digest.clear();  // the end has not come
  o.mtime_ns = f.mtime_ns;
  o.mode = f.mode;
  o.chunk_size = static_cast<uint32_t>(f.chunk_size);
  o.sender = std::move(sender);
  o.announced_ns = duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
  return o;
}

File named_file(const common::FileIdentity& id) {
  File f;
  f.session = id.session;
  f.id = id.file_id;
  f.path = id.path;
  f.size = id.size;
  f.verify = id.verify;
  return f;
}

FailureRecord refusal_record(const File& f, uint64_t session, const std::string& reason) {
  FailureRecord rec;
  rec.file = identity_of(f);
  rec.file.session = session;
  rec.reason = "refused: " + reason;
  return rec;
}

FailureRecord unannounced_record(const common::FileListEntry& e, uint64_t session) {
  FailureRecord rec;
  rec.file = {session, e.file_id, std::string(e.path), e.size, e.verify, {}};
  if (e.size > 0) {
    rec.missing.emplace_back(0, e.size);
    rec.missing_ranges_total = 1;
  }
  rec.reason = e.aborted ? "never announced: all its packets were lost (and the sender aborted it)"
                         : "never announced: all its packets were lost";
  if (e.key_len > 0) {
    common::Digest d;
    d.type = e.verify;
    d.size = e.key_len;
    d.bytes = e.key;
    rec.file.digest = d.hex();
  }
  return rec;
}

std::optional<std::string> expiry_reason(const File& f, common::Clock::time_point now,
                                         nanoseconds timeout, double timeout_s, bool final_due,
                                         common::Clock::time_point sleep_heard) {
  const bool last_copy = f.end.copy + 1u >= f.end.copies;
  // A striped file's end came down one lane while others still hold it open (their data may
  // still be on its way): their ends, or their next files, settle it.
  if (f.end_seen && last_copy && f.open_lanes == 0 && now - f.end_seen_at >= kEndGrace) {
    return fmt::format("incomplete at its end packet: {} of {} bytes received (packets lost{})",
                       f.bytes_received, f.size,
                       f.end.copies > 1 ? fmt::format(" in all {} copies", f.end.copies) : "");
  }
  if (f.superseded && now - f.superseded_at >= kEndGrace) {
    return fmt::format("the sender went on to the next file before this one was complete: {}",
                       f.end_seen ? "data lost" : "its end packet was lost");
  }
  if (sleep_heard > f.last_packet) {
    // At the moment the lane's own silence makes it gone (SenderSession::done()), so that this
    // reason, which says more, is the one given.
    if (now - sleep_heard >= timeout) {
      return fmt::format(
          "no packet for {:.1f} s after the sender's last heartbeat saying it was sleeping: the "
          "sender stopped or the link went down before the file's end",
          timeout_s);
    }
  } else if (now - f.last_packet > timeout + seconds(f.pause_s)) {
    return fmt::format(
        "no packet for {:.1f} s: the sender stopped or the link went down before "
        "the file's end",
        timeout_s);
  }
  if (final_due) return "the sender finished without completing the file (end packet lost?)";
  return std::nullopt;
}

bool zdata_fits(const File& f, const common::ZDataHeader& z, size_t piece_len) {
  const uint64_t piece = common::zdata_piece_size(f.chunk_size);
  // Written so that nothing wraps, whatever the announce claimed.
  return z.offset % f.chunk_size == 0 && z.offset < f.size && z.raw_len <= f.size - z.offset &&
         (z.raw_len % f.chunk_size == 0 || z.raw_len == f.size - z.offset) &&
         z.frame_off % piece == 0 &&
         piece_len == std::min<uint64_t>(piece, z.frame_len - z.frame_off);
}

}  // namespace ddft::receiver
