#include "sender/source/hot_folder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/folder_paths.hpp"
#include "sender/source/entry_filter.hpp"
#include "sender/source/hot_folder_paths.hpp"
#include "sender/source/tree_watch.hpp"

namespace ddft::sender {
namespace fs = std::filesystem;
using namespace hot_folder_paths;
namespace {

// The canonical path of --sent-dir `sent_dir`, checked: a writable folder, outside `dir` (DIR,
// canonical; given as `given_dir`, whose stat is `dir_st`) and on its file system. Throws
// std::runtime_error with a one-line reason.
std::string checked_sent_dir(const std::string& sent_dir, const std::string& dir,
                             const std::string& given_dir, const struct stat& dir_st) {
  std::error_code ec;
  struct stat sent_st {};
  if (::stat(sent_dir.c_str(), &sent_st) != 0) {
    throw std::runtime_error(fmt::format("--sent-dir '{}': {}", sent_dir, std::strerror(errno)));
  }
  if (!S_ISDIR(sent_st.st_mode)) {
    throw std::runtime_error(fmt::format("--sent-dir '{}': not a folder", sent_dir));
  }
  const std::string& given_sent = sent_dir;
  const std::string canonical = fs::canonical(given_sent, ec).string();
  if (ec) throw std::runtime_error(fmt::format("--sent-dir '{}': {}", given_sent, ec.message()));
  if (common::at_or_below(canonical, dir)) {
    throw std::runtime_error(fmt::format(
        "--sent-dir '{}' is inside the watched folder '{}': what is moved there would be sent "
        "again",
        given_sent, given_dir));
  }
  if (sent_st.st_dev != dir_st.st_dev) {
    throw std::runtime_error(fmt::format(
        "--sent-dir '{}' is on another filesystem than --watch '{}': sent files are moved with "
        "rename(2), which cannot cross filesystems",
        given_sent, given_dir));
  }
  if (::access(canonical.c_str(), W_OK | X_OK) != 0) {
    throw std::runtime_error(
        fmt::format("--sent-dir '{}' is not writable: {}", given_sent, std::strerror(errno)));
  }
  return canonical;
}

// The journal's path relative to `dir` (DIR, canonical), the prefix its own files' names start
// with; ".ddft-watch-journal" when it lies outside. Throws std::runtime_error when `journal_path`
// is inside DIR under a name that would be sent.
std::string journal_prefix(const std::string& journal_path, const std::string& dir) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(journal_path, ec);
  if (!ec && common::at_or_below(canonical.string(), dir) &&
      !reserved(canonical.filename().string())) {
    throw std::runtime_error(fmt::format(
        "--watch-journal '{}' is inside the watched folder and would be sent: give it a name "
        "starting with '.ddft-' or put it elsewhere",
        journal_path));
  }
  const std::string j = canonical.string();
  return !ec && j != dir && common::at_or_below(j, dir)
             ? fs::path(j).lexically_relative(dir).string()
             : std::string(".ddft-watch-journal");
}

// The journal when --watch-journal is not given: in DIR, one per shard, since the hosts sharing
// DIR each rewrite their own (one journal for two hosts would lose records).
std::string default_journal(const std::string& dir, const Shard& shard) {
  std::string path = dir + "/" + std::string(kJournalName);
  if (shard.enabled()) path += fmt::format(".shard-{}-of-{}", shard.index, shard.count);
  return path;
}

}  // namespace

HotFolder::HotFolder(HotFolderOptions opt, common::Clock& clock)
    : opt_(std::move(opt)),
      clock_(clock),
      tracker_(std::chrono::duration_cast<common::Clock::duration>(
          std::chrono::duration<double>(opt_.settle_s))) {
  // Every check comes before anything in DIR is touched.
  struct stat dir_st {};
  if (::stat(opt_.dir.c_str(), &dir_st) != 0) {
    throw std::runtime_error(fmt::format("--watch '{}': {}", opt_.dir, std::strerror(errno)));
  }
  if (!S_ISDIR(dir_st.st_mode)) {
    throw std::runtime_error(fmt::format("--watch '{}': not a folder", opt_.dir));
  }
  std::error_code ec;
  const std::string given_dir = opt_.dir;
  opt_.dir = fs::canonical(given_dir, ec).string();
  if (ec) throw std::runtime_error(fmt::format("--watch '{}': {}", given_dir, ec.message()));
  if (!opt_.sent_dir.empty())
    opt_.sent_dir = checked_sent_dir(opt_.sent_dir, opt_.dir, given_dir, dir_st);
  removal_ = std::make_unique<SentRemoval>(opt_);
  journal_path_ = opt_.journal.empty() ? default_journal(opt_.dir, opt_.shard) : opt_.journal;
  entries_ = std::make_unique<EntryFilter>(opt_, journal_prefix(journal_path_, opt_.dir));
  watch_ = std::make_unique<TreeWatch>(opt_, given_dir, identity_of(dir_st), tracker_, *entries_);
  wake_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_) throw std::runtime_error(fmt::format("eventfd: {}", std::strerror(errno)));
  // probe() takes a read lease for an instant to learn whether a writer has a file open; a writer
  // opening it in that instant makes the kernel send SIGIO, whose default action would end the
  // program. The lease is given back at once anyway.
  std::signal(SIGIO, SIG_IGN);

  journal_ = std::make_unique<WatchJournal>(journal_path_);
  std::lock_guard lock(mu_);
  replay();
  if (std::string why; !journal_->compact(&why)) {
    throw std::runtime_error(
        fmt::format("--watch-journal '{}' cannot be rewritten: {}", journal_path_, why));
  }
  watch_->start(clock_.now());
  spdlog::info(
      "Info: hot folder {}: watching {} folder(s), {} file(s) there{}; a file is sent "
      "once unchanged for {} s, then {}",
      opt_.dir, watch_->folders(), tracker_.tracked(),
      opt_.shard.enabled() ? " in shard " + opt_.shard.to_string() : std::string(), opt_.settle_s,
      opt_.sent_dir.empty() ? std::string("deleted") : fmt::format("moved to {}", opt_.sent_dir));
}

HotFolder::~HotFolder() = default;

std::string HotFolder::abs(const std::string& rel) const {
  return rel.empty() ? opt_.dir : opt_.dir + "/" + rel;
}

std::string HotFolder::describe() const { return "the hot folder " + opt_.dir; }

bool HotFolder::lost_root() const {
  std::lock_guard lock(mu_);
  return watch_->lost_root();
}

uint64_t HotFolder::files_removed() const {
  std::lock_guard lock(mu_);
  return removed_;
}

uint64_t HotFolder::links_skipped() const {
  std::lock_guard lock(mu_);
  return entries_->links_skipped();
}

HotFolder::FolderStatus HotFolder::folder_status() const {
  std::lock_guard lock(mu_);
  FolderStatus f{opt_.dir, opt_.sent_dir, entries_->refused(), 0, opt_.retention.max_bytes};
  if (const Retention* r = removal_->retention()) f.retention_bytes = r->bytes();
  return f;
}

uint64_t HotFolder::links_failed() const {
  std::lock_guard lock(mu_);
  return entries_->links_failed();
}

void HotFolder::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

std::optional<FileProbe> HotFolder::probe(const std::string& rel) {
  const std::string path = abs(rel);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode)) {
    if (!S_ISDIR(st.st_mode)) entries_->warn_not_regular(rel, st.st_mode);
    return std::nullopt;
  }
  FileProbe p;
  p.id = identity_of(st);
  // A read lease is granted only while nobody has the file open for writing, so it tells a
  // writer that keeps the file open (its close not yet seen) from a finished file. Without lease
  // support (another owner without CAP_LEASE, NFS) the answer is "unknown" and the events decide.
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    // EWOULDBLOCK: someone holds a write lease on it (a file server writing it).
    p.writer = errno == EWOULDBLOCK ? FileProbe::Writer::kOpen : FileProbe::Writer::kUnknown;
    return p;
  }
  if (::fcntl(fd.get(), F_SETLEASE, F_RDLCK) == 0) {
    ::fcntl(fd.get(), F_SETLEASE, F_UNLCK);
    p.writer = FileProbe::Writer::kNone;
  } else if (errno == EAGAIN) {
    p.writer = FileProbe::Writer::kOpen;
  }
  return p;
}

std::optional<SourceFile> HotFolder::poll() {
  std::lock_guard lock(mu_);
  const auto now = clock_.now();
  if (!watch_->update(now)) return std::nullopt;
  if (!kept_after_replay_.empty()) {
    // Sent before the restart but could not be removed: held, not sent again.
    for (const auto& r : kept_after_replay_) tracker_.hold(r.rel_path, r.id, now, false);
    kept_after_replay_.clear();
  }
  watch_->remove_folders(now);
  const auto probe_fn = [this](const std::string& rel) { return probe(rel); };
  while (auto ready = tracker_.take_ready(now, probe_fn)) {
    if (auto f = hand_out(*ready, now)) return f;
  }
  return std::nullopt;
}

std::optional<SourceFile> HotFolder::hand_out(const ReadinessTracker::Ready& r,
                                              common::Clock::time_point now) {
  hook("handout", r.rel);
  // Opened here, not by the reader later by its name: what is read is then the version found
  // settled, checked on the open descriptor. A version renamed over the name since the probe is
  // a change (it waits its settle time), never read in the place of the one handed out, which
  // would have it sent once now and again as "changed while it was sent".
  auto fd = std::make_shared<common::UniqueFd>(
      ::open(abs(r.rel).c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  const int open_error = *fd ? 0 : errno;
  struct stat st {};
  // Gone, replaced by a link, held by a writer's lease, or another version: a change.
  const bool changed = open_error == ENOENT || open_error == ELOOP || open_error == EWOULDBLOCK ||
                       (open_error == 0 && (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) ||
                                            identity_of(st) != r.id));
  if (changed) {
    tracker_.requeue(r.rel, now);
    return std::nullopt;
  }
  const uint64_t tag = ++next_tag_;
  handed_out_[tag] = {r.rel, r.id};
  SourceFile f;
  f.path = abs(r.rel);
  f.rel_path = r.rel;
  f.tag = tag;
  if (open_error == 0) {
    // O_NONBLOCK was for the open alone (a file server's write lease must not block it): reads,
    // io_uring's too, must wait for the disk rather than fail with EAGAIN.
    ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) & ~O_NONBLOCK);
    f.opened = std::move(fd);
  }
  // Otherwise (unreadable: EACCES, out of descriptors) the reader's own open fails with the
  // reason, and the file is failed and held as any unreadable file is, not retried in silence.
  return f;
}

std::optional<SourceFile> HotFolder::next(std::stop_token stop) {
  {
    std::lock_guard lock(mu_);
    stop_ = stop;
  }
  std::stop_callback on_stop(stop, [this] { wake(); });
  while (!stop.stop_requested()) {
    if (auto f = poll()) return f;
    if (opt_.resends != nullptr) {
      if (auto r = opt_.resends->due()) return r;
    }
    int timeout_ms = 1000;
    {
      std::lock_guard lock(mu_);
      if (watch_->lost_root()) return std::nullopt;
      std::optional<common::Clock::time_point> due = tracker_.next_deadline();
      if (const auto rescan = watch_->next_rescan(); rescan && (!due || *rescan < *due)) {
        due = rescan;
      }
      const auto now = clock_.now();
      if (due) {
        timeout_ms =
            *due <= now
                ? 0
                : static_cast<int>(std::min<int64_t>(
                      1000, std::chrono::ceil<std::chrono::milliseconds>(*due - now).count()));
      }
    }
    if (timeout_ms == 0) continue;
    struct pollfd fds[2] = {{watch_->fd(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    ::poll(fds, 2, timeout_ms);
    if (fds[1].revents & POLLIN) {
      uint64_t v = 0;
      [[maybe_unused]] const ssize_t n = ::read(wake_fd_.get(), &v, sizeof v);
    }
  }
  return std::nullopt;
}

std::optional<Backlog> HotFolder::backlog() const {
  std::lock_guard lock(mu_);
  const ReadinessTracker::Queue q = tracker_.queued();
  return Backlog{q.files, q.bytes, q.oldest};
}

// What becomes of a file once sent: recorded in the journal, then deleted or moved (SentRemoval);
// a file that changed or failed stays. At start the journal's unfinished files are finished first.
void HotFolder::replay() {
  const auto now = clock_.now();
  for (const JournalRecord& r : journal_->unfinished()) {
    struct stat st {};
    // A stop between the private rename and the removal left the file there: finished first.
    if (const std::string priv = abs(finishing_name(r)); ::lstat(priv.c_str(), &st) == 0) {
      replay_private(r, priv);
      continue;
    }
    const std::string path = abs(r.rel_path);
    if (::lstat(path.c_str(), &st) != 0) {
      journal_->forget(r.rel_path);  // finished before the restart, its "done" not recorded
      continue;
    }
    if (!S_ISREG(st.st_mode) || identity_of(st) != r.id) {
      spdlog::info(
          "Info: hot folder: '{}' was sent before the restart but has changed since; "
          "it is sent again",
          r.rel_path);
      journal_->forget(r.rel_path);
      continue;
    }
    std::string moved_to, put;
    if (std::string why; !removal_->finish(r, &moved_to, &put, &why)) {
      // Still recorded as sent: the next start tries again. Meanwhile it is held, not sent.
      spdlog::error(
          "Error: hot folder: {}; '{}' was sent before the restart and is not sent "
          "again",
          why, r.rel_path);
      kept_after_replay_.push_back(r);
      continue;
    }
    if (put.empty()) {
      ++removed_;
      spdlog::info(
          "Info: hot folder: '{}' was sent before the restart: {} without sending it again",
          r.rel_path, moved_to.empty() ? std::string("deleted") : "moved to " + moved_to);
    } else {
      spdlog::warn(
          "Warn: hot folder: a new version of '{}' was renamed over it as it was removed; it "
          "is put back as '{}' and sent",
          r.rel_path, put);
    }
    if (std::string why; !journal_->record_done(r, &why)) {
      spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, why);
    }
    if (const std::string parent = parent_of(r.rel_path); !parent.empty()) {
      tracker_.folder_emptied(parent, now);
    }
  }
}

void HotFolder::replay_private(const JournalRecord& r, const std::string& priv) {
  std::string moved_to, put;
  if (std::string why; !removal_->finish_private(r, priv, &moved_to, &put, &why)) {
    // Left as it is, under its private name, and the record with it: the next start tries again.
    spdlog::error(
        "Error: hot folder: {}; '{}' was left there by a stop while '{}' was being removed, "
        "and stays",
        why, priv, r.rel_path);
    return;
  }
  if (put.empty()) {
    ++removed_;
    spdlog::info(
        "Info: hot folder: '{}' was sent before the restart and found under its private name: "
        "{} without sending it again",
        r.rel_path, moved_to.empty() ? std::string("deleted") : "moved to " + moved_to);
  } else {
    spdlog::warn(
        "Warn: hot folder: a new version of '{}' was left under its private name by a stop "
        "while the sent one was removed; it is put back as '{}' and sent",
        r.rel_path, put);
  }
  if (std::string why; !journal_->record_done(r, &why)) {
    spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, why);
  }
  if (const std::string parent = parent_of(r.rel_path); !parent.empty()) {
    tracker_.folder_emptied(parent, clock_.now());
  }
}

void HotFolder::file_sent(const FileMeta& file, const common::Digest& /*digest*/) {
  std::lock_guard lock(mu_);
  auto it = handed_out_.find(file.tag);
  if (it == handed_out_.end()) return;
  const Handout h = std::move(it->second);
  handed_out_.erase(it);
  const auto now = clock_.now();
  // Only the version that went on the wire is removed: the one handed out (same inode) and read
  // (the size and mtime the reader announced), with no event since.
  struct stat st {};
  const bool present = ::lstat(abs(h.rel).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const FileIdentity cur = present ? identity_of(st) : FileIdentity{};
  if (!present || cur.dev != h.id.dev || cur.ino != h.id.ino || cur.size != file.size ||
      cur.mtime_ns != file.mtime_ns || tracker_.changed_in_flight(h.rel)) {
    if (present) {
      spdlog::warn(
          "Warn: hot folder: '{}' changed while it was sent; it stays and is sent again "
          "once complete",
          h.rel);
    } else {
      spdlog::warn("Warn: hot folder: '{}' was removed or replaced while it was sent", h.rel);
    }
    tracker_.requeue(h.rel, now);
    wake();
    return;
  }
  const JournalRecord rec{h.rel, cur};
  if (std::string why; !journal_->record_sent(rec, &why)) {
    // Removing it unrecorded could lose it to a crash; it stays (sent again after a restart).
    spdlog::error(
        "Error: hot folder: cannot record '{}' as sent in '{}': {}; it stays in the "
        "folder",
        h.rel, journal_path_, why);
    tracker_.hold(h.rel, cur, now, false);
    return;
  }
  if (opt_.crash_after_sent != 0 && ++sent_records_ == opt_.crash_after_sent) {
    spdlog::warn("Warn: test hook: the sender dies after recording '{}' as sent", h.rel);
    spdlog::default_logger()->flush();
    ::kill(::getpid(), SIGKILL);
  }
  std::string moved_to, put;
  if (std::string why; !removal_->finish(rec, &moved_to, &put, &why)) {
    // Recorded as sent: not sent again, here or after a restart (which tries to finish it).
    spdlog::error("Error: hot folder: {}; it was sent and stays", why);
    tracker_.hold(h.rel, cur, now, false);
    return;
  }
  if (put.empty()) {
    ++removed_;
  } else {
    spdlog::warn(
        "Warn: hot folder: a new version of '{}' was renamed over it as it was removed; it is "
        "put back as '{}' and sent",
        h.rel, put);
  }
  if (!moved_to.empty() && fs::path(moved_to).filename() != base_of(h.rel)) {
    spdlog::info("Info: hot folder: '{}' moved to '{}' (the sent folder had that name already)",
                 h.rel, moved_to);
  }
  if (opt_.resends != nullptr && !moved_to.empty()) opt_.resends->moved(file.tag, moved_to);
  if (std::string why; !journal_->record_done(rec, &why)) {
    spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, why);
  }
  tracker_.finished(h.rel);
  // Moved in, as far as readiness goes (its events say the same, unless they were lost).
  if (!put.empty()) tracker_.closed(put, now);
  if (const std::string parent = parent_of(h.rel); !parent.empty()) {
    tracker_.folder_emptied(parent, now);
    wake();
  }
}

void HotFolder::file_failed(const FileMeta& file, const std::string& /*reason*/) {
  std::lock_guard lock(mu_);
  auto it = handed_out_.find(file.tag);
  if (it == handed_out_.end()) return;
  const Handout h = std::move(it->second);
  handed_out_.erase(it);
  if (stop_.stop_requested()) {
    spdlog::info("Info: hot folder: '{}' stays in the folder; it is sent after a restart", h.rel);
  } else {
    spdlog::warn("Warn: hot folder: '{}' stays in the folder; it is tried again when it changes",
                 h.rel);
  }
  tracker_.hold(h.rel, h.id, clock_.now(), true);
  wake();
}

}  // namespace ddft::sender
