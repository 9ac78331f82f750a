#include "sender/transmit/status_report.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "common/version.hpp"

namespace ddft::sender {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;

struct FsSpace {
  uint64_t free = 0;
  uint64_t size = 0;
};

// The space of the file system holding `path`; size 0 when it cannot be read.
FsSpace space_of(const std::string& path) {
  struct statvfs v {};
  if (path.empty() || ::statvfs(path.c_str(), &v) != 0) return {};
  return {static_cast<uint64_t>(v.f_bavail) * v.f_frsize,
          static_cast<uint64_t>(v.f_blocks) * v.f_frsize};
}

// Of two file systems, the one with the smaller share free (a known one before an unknown one).
FsSpace tighter(FsSpace a, FsSpace b) {
  if (a.size == 0) return b;
  if (b.size == 0) return a;
  return static_cast<double>(b.free) / static_cast<double>(b.size) <
                 static_cast<double>(a.free) / static_cast<double>(a.size)
             ? b
             : a;
}

uint32_t seconds_since(common::Clock::time_point since, common::Clock::time_point now) {
  if (now <= since) return 0;
  return static_cast<uint32_t>(
      std::min<int64_t>(duration_cast<seconds>(now - since).count(), UINT32_MAX));
}

void mix(uint64_t* h, uint64_t v) { *h = (*h ^ v) * 0x100000001b3ull; }

}  // namespace

uint64_t status_mattering(const common::SenderStatus& s) {
  const common::StatusAlarms a = common::status_alarms(s);
  uint64_t h = 0xcbf29ce484222325ull;
  mix(&h, s.lanes_up);
  mix(&h, s.read_failures);
  mix(&h, s.files_refused);
  mix(&h, s.queued_files == 0);
  mix(&h, (uint64_t{a.backlog} << 0) | (uint64_t{a.watch_low} << 1) |
              (uint64_t{a.retention_low} << 2) | (uint64_t{a.retention_full} << 3));
  return h;
}

StatusReport::StatusReport(const SenderConfig& cfg, const SendStatus& status,
                           std::vector<const HotFolder*> folders)
    : cfg_(cfg), status_(status), folders_(std::move(folders)) {}

void StatusReport::session_started(
    const std::vector<std::pair<std::string, const FileSource*>>& channels, size_t lanes,
    time_point now) {
  std::lock_guard lock(mu_);
  channels_ = channels;
  started_ = now;
  lanes_.assign(lanes, LaneSent{});
  last_.reset();
}

common::SenderStatus StatusReport::sample(time_point now) const {
  common::SenderStatus s;
  s.interval_s = common::kStatusIntervalS;
  s.version = common::kVersion;
  s.hot_folder = !folders_.empty();
  for (const auto& [name, source] : channels_) {
    common::SenderStatusChannel c;
    c.name = name;
    if (const std::optional<Backlog> b = source->backlog()) {
      c.queued_files = b->files;
      c.queued_bytes = b->bytes;
      // A source that cannot tell since when: its files wait since the session began.
      if (b->files > 0) c.oldest_wait_s = seconds_since(b->oldest.value_or(started_), now);
    }
    s.queued_files += c.queued_files;
    s.queued_bytes += c.queued_bytes;
    s.oldest_wait_s = std::max(s.oldest_wait_s, c.oldest_wait_s);
    if (!name.empty()) s.channels.push_back(std::move(c));
  }
  s.read_failures = status_.read_failures.load(std::memory_order_relaxed);
  s.files_refused = status_.files_refused.load(std::memory_order_relaxed);
  FsSpace watch;
  FsSpace kept;
  for (const HotFolder* f : folders_) {
    const HotFolder::FolderStatus fs = f->folder_status();
    s.files_refused += fs.refused;
    s.retention_bytes += fs.retention_bytes;
    s.retention_limit += fs.retention_limit;
    watch = tighter(watch, space_of(fs.dir));
    kept = tighter(kept, space_of(fs.sent_dir));
  }
  s.watch_free = watch.free;
  s.watch_size = watch.size;
  s.retention_free = kept.free;
  s.retention_size = kept.size;
  s.lanes_up = status_.lanes_up_mask.load(std::memory_order_relaxed);
  // --rate is each lane's.
  s.rate_limit = static_cast<uint64_t>(cfg_.rate_mb * 1024.0 * 1024.0) * lanes_.size();
  return s;
}

common::SenderStatus& StatusReport::current_locked(time_point now, bool fresh) {
  if (fresh || !last_ || now - sampled_at_ >= seconds(1) || now < sampled_at_) {
    common::SenderStatus s = sample(now);
    // Each sample a number of its own, changed or not: a receiver takes each as news of the
    // sender, and drops only the copies of one.
    s.seq = (last_ ? last_->seq : 0) + 1;
    last_ = std::move(s);
    sampled_at_ = now;
  }
  return *last_;
}

common::SenderStatus StatusReport::current(time_point now) {
  std::lock_guard lock(mu_);
  return current_locked(now);
}

common::SenderStatus StatusReport::sample_now(time_point now) {
  std::lock_guard lock(mu_);
  return current_locked(now, /*fresh=*/true);
}

std::optional<common::SenderStatus> StatusReport::due(size_t lane, time_point now) {
  std::lock_guard lock(mu_);
  if (lane >= lanes_.size()) return std::nullopt;
  LaneSent& l = lanes_[lane];
  // Between two periodic statuses, sampled only as often as current() samples.
  const common::SenderStatus& s = current_locked(now);
  const uint64_t mattered = status_mattering(s);
  if (l.sent && now - l.at < seconds(s.interval_s) && mattered == l.mattered) return std::nullopt;
  l = {true, now, mattered};
  return s;
}

}  // namespace ddft::sender
