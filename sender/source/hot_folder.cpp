// HotFolder: its checks at start, and the source side (which files are admitted, probed and
// handed out when settled). Watching the tree (inotify) is in hot_folder_watch.cpp; what happens to
// a file once sent (deleted or moved, through the journal) in hot_folder_finish.cpp.
#include "sender/source/hot_folder.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/json.hpp"
#include "sender/source/hot_folder_internal.hpp"

namespace ddft::sender {
namespace fs = std::filesystem;
using namespace hot_folder_detail;
namespace {

const char* kind_of(unsigned mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

bool inside(const std::string& path, const std::string& root) {
  return path == root || path.starts_with(root == "/" ? root : root + "/");
}

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
  if (inside(canonical, dir)) {
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
  if (!ec && inside(canonical.string(), dir) && !reserved(canonical.filename().string())) {
    throw std::runtime_error(fmt::format(
        "--watch-journal '{}' is inside the watched folder and would be sent: give it a name "
        "starting with '.ddft-' or put it elsewhere",
        journal_path));
  }
  const std::string j = canonical.string();
  return !ec && j != dir && inside(j, dir) ? fs::path(j).lexically_relative(dir).string()
                                           : std::string(".ddft-watch-journal");
}

// The kind of network (or cluster) filesystem `dir` is on, or nothing for a local one: there,
// inotify does not see what other machines write (inotify(7)).
std::optional<std::string_view> network_fs(const std::string& dir) {
  struct statfs sf {};
  if (::statfs(dir.c_str(), &sf) != 0) return std::nullopt;
  // Magic numbers of statfs(2), as <linux/magic.h> and the filesystems' sources define them.
  switch (static_cast<uint32_t>(sf.f_type)) {
    case 0x6969:
      return "NFS";
    case 0x517B:
    case 0xFE534D42:
    case 0xFF534D42:
      return "SMB/CIFS";
    case 0x00C36400:
      return "Ceph";
    case 0x5346414F:
      return "AFS";
    case 0x01161970:
      return "GFS2";
    case 0x7461636F:
      return "OCFS2";
    case 0x65735546:
      return "FUSE";
    default:
      return std::nullopt;
  }
}

// The journal when --watch-journal is not given: in DIR, one per shard, since the hosts sharing
// DIR each rewrite their own (one journal for two hosts would lose records).
std::string default_journal(const std::string& dir, const Shard& shard) {
  std::string path = dir + "/" + std::string(kJournalName);
  if (shard.enabled()) path += fmt::format(".shard-{}-of-{}", shard.index, shard.count);
  return path;
}

}  // namespace

HotFolderOptions hot_folder_options(const SenderConfig& cfg) {
  HotFolderOptions o;
  o.dir = cfg.watch_dir;
  o.sent_dir = cfg.sent_dir;
  o.retention.keep_for = std::chrono::seconds(static_cast<int64_t>(cfg.sent_keep_hours * 3600));
  o.retention.max_bytes = static_cast<uint64_t>(cfg.sent_keep_gb * 1024 * 1024 * 1024);
  // A file the history still names on the wire may still be asked for.
  if (!cfg.state_dir.empty() && !cfg.history_repeats.empty()) {
    o.retention.protect_for = cfg.history_repeats.back();
  }
  o.settle_s = cfg.settle_s;
  o.journal = cfg.watch_journal;
  o.filter = cfg.filter;
  o.shard = cfg.shard;
  o.symlinks = cfg.symlinks;
  o.crash_after_sent = cfg.test_crash_after_sent;
  return o;
}

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
  root_id_ = identity_of(dir_st);
  std::error_code ec;
  const std::string given_dir = opt_.dir;
  opt_.dir = fs::canonical(given_dir, ec).string();
  if (ec) throw std::runtime_error(fmt::format("--watch '{}': {}", given_dir, ec.message()));
  if (!opt_.sent_dir.empty())
    opt_.sent_dir = checked_sent_dir(opt_.sent_dir, opt_.dir, given_dir, dir_st);
  if (!opt_.sent_dir.empty() &&
      (opt_.retention.keep_for.count() > 0 || opt_.retention.max_bytes > 0)) {
    retention_ = std::make_unique<Retention>(opt_.sent_dir, opt_.retention);
    retention_->prune(/*now_anyway=*/true);
  }
  journal_path_ = opt_.journal.empty() ? default_journal(opt_.dir, opt_.shard) : opt_.journal;
  own_prefix_ = journal_prefix(journal_path_, opt_.dir);
  inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify_) {
    throw std::runtime_error(
        fmt::format("cannot watch '{}': inotify: {}", given_dir, std::strerror(errno)));
  }
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
  const auto now = clock_.now();
  const int wd = ::inotify_add_watch(inotify_.get(), opt_.dir.c_str(), kWatchMask);
  if (wd < 0) {
    throw std::runtime_error(fmt::format("cannot watch '{}': {}", given_dir, std::strerror(errno)));
  }
  if (opt_.rescan_s > 0) {
    rescan_every(std::chrono::duration_cast<common::Clock::duration>(
                     std::chrono::duration<double>(opt_.rescan_s)),
                 now);
  } else if (const auto net = network_fs(opt_.dir); net && opt_.rescan_s < 0) {
    spdlog::info(
        "Info: hot folder {} is on {}: inotify does not see what other machines write there, so "
        "it is also scanned every {} s",
        opt_.dir, *net, kNetworkRescan.count());
    rescan_every(kNetworkRescan, now);
  }
  add_tree("", now);
  spdlog::info(
      "Info: hot folder {}: watching {} folder(s), {} file(s) there{}; a file is sent "
      "once unchanged for {} s, then {}",
      opt_.dir, watches_.size(), tracker_.tracked(),
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
  return lost_root_;
}

uint64_t HotFolder::files_removed() const {
  std::lock_guard lock(mu_);
  return removed_;
}

uint64_t HotFolder::links_skipped() const {
  std::lock_guard lock(mu_);
  return links_skipped_;
}

uint64_t HotFolder::links_failed() const {
  std::lock_guard lock(mu_);
  return links_failed_;
}

void HotFolder::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

bool HotFolder::admit(const std::string& rel) {
  // Another host's file (--shard): not a word about it, whatever it is; that host says it.
  if (!opt_.shard.takes(rel)) return false;
  // The receiver refuses such a name, and a hot folder deletes what it sent: it would be lost.
  for (const unsigned char c : rel) {
    if (c < 0x20 || c == 0x7F) {
      if (filtered_.insert(rel).second) {
        spdlog::warn(
            "Warn: hot folder: leaving {} in place, not sent: the receiver refuses names "
            "with control characters",
            common::json_quote(rel));
      }
      return false;
    }
  }
  auto why = opt_.filter.refusal(rel);
  if (!why) return true;
  if (filtered_.insert(rel).second) {
    spdlog::info("Info: hot folder: leaving '{}' in place, not sent: {}", rel, *why);
  }
  return false;
}

void HotFolder::warn_not_regular(const std::string& rel, unsigned mode) {
  // Another host's (--shard): that host says it, and counts it.
  if (!opt_.shard.takes(rel) || !warned_.insert(rel).second) return;
  if (!S_ISLNK(mode)) {
    spdlog::warn("Warn: hot folder: skipping '{}': {} (only regular files are sent)", rel,
                 kind_of(mode));
    return;
  }
  std::error_code ec;
  const fs::path target = fs::read_symlink(abs(rel), ec);
  const std::string to = ec ? std::string("?") : target.string();
  std::string message;
  const bool failed = opt_.symlinks == SymlinkMode::kError;
  if (failed) {
    ++links_failed_;
    message = fmt::format(
        "hot folder: '{}' is a symbolic link (to '{}'; --symlinks error); it stays in the "
        "folder, not sent",
        rel, to);
    spdlog::error("Error: {}", message);
  } else {
    ++links_skipped_;
    message = fmt::format(
        "hot folder: skipping symbolic link '{}' (to '{}'; --symlinks skip: the hot folder "
        "never follows links)",
        rel, to);
    spdlog::warn("Warn: {}", message);
  }
  if (opt_.on_link) opt_.on_link(rel, message, failed);
}

void HotFolder::note_reserved(const std::string& rel) {
  // The journal and its temporary and damaged copies are ours, and the default journals of the
  // other shards sharing DIR are theirs: no word about them.
  if (rel.starts_with(own_prefix_) || (opt_.shard.enabled() && rel.starts_with(kJournalName)) ||
      base_of(rel).starts_with(kFinishingPrefix)) {
    return;
  }
  if (filtered_.insert(rel).second) {
    spdlog::info(
        "Info: hot folder: leaving '{}' in place, not sent: names starting '{}' are "
        "reserved",
        rel, kReservedPrefix);
  }
}

void HotFolder::forget_warnings(const std::string& rel) {
  warned_.erase(rel);
  filtered_.erase(rel);
}

std::optional<FileProbe> HotFolder::probe(const std::string& rel) {
  const std::string path = abs(rel);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode)) {
    if (!S_ISDIR(st.st_mode)) warn_not_regular(rel, st.st_mode);
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
  read_events(now);
  check_root();
  if (lost_root_) return std::nullopt;
  if (rescan_every_ != common::Clock::duration::zero() && now >= next_periodic_rescan_) {
    rescan_pending_ = true;
    next_periodic_rescan_ = now + rescan_every_;
  }
  if (rescan_pending_) rescan(now);
  if (!kept_after_replay_.empty()) {
    // Sent before the restart but could not be removed: held, not sent again.
    for (const auto& r : kept_after_replay_) tracker_.hold(r.rel_path, r.id, now, false);
    kept_after_replay_.clear();
  }
  remove_folders(now);
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
      if (lost_root_) return std::nullopt;
      std::optional<common::Clock::time_point> due = tracker_.next_deadline();
      if (rescan_every_ != common::Clock::duration::zero() &&
          (!due || next_periodic_rescan_ < *due)) {
        due = next_periodic_rescan_;
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
    struct pollfd fds[2] = {{inotify_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
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
  const auto [files, bytes] = tracker_.queued();
  return Backlog{files, bytes};
}

}  // namespace ddft::sender
