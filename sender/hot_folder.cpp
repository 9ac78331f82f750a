#include "sender/hot_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/json.hpp"

namespace ddft::sender {
namespace fs = std::filesystem;
namespace {

constexpr uint32_t kWatchMask = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                                IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF |
                                IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;
// With a folder that could not be watched (fs.inotify.max_user_watches), how often the whole tree
// is scanned instead.
constexpr auto kPeriodicRescan = std::chrono::seconds(30);
constexpr std::string_view kReservedPrefix = ".ddft-";

bool reserved(std::string_view name) { return name.starts_with(kReservedPrefix); }

FileIdentity identity_of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

std::string parent_of(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

std::string base_of(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

const char* kind_of(unsigned mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// "name.N.ext": the same scheme as the receiver's collision names ("a.tar.gz" -> "a.tar.N.gz",
// ".bashrc" -> ".bashrc.N").
std::string numbered_name(const std::string& base, unsigned n) {
  const size_t dot = base.rfind('.');
  if (dot == std::string::npos || dot == 0) return fmt::format("{}.{}", base, n);
  return fmt::format("{}.{}{}", base.substr(0, dot), n, base.substr(dot));
}

bool inside(const std::string& path, const std::string& root) {
  return path == root || path.starts_with(root == "/" ? root : root + "/");
}

}  // namespace

HotFolderOptions hot_folder_options(const SenderConfig& cfg) {
  HotFolderOptions o;
  o.dir = cfg.watch_dir;
  o.sent_dir = cfg.sent_dir;
  o.settle_s = cfg.settle_s;
  o.journal = cfg.watch_journal;
  o.filter = cfg.filter;
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
  if (!opt_.sent_dir.empty()) {
    struct stat sent_st {};
    if (::stat(opt_.sent_dir.c_str(), &sent_st) != 0) {
      throw std::runtime_error(
          fmt::format("--sent-dir '{}': {}", opt_.sent_dir, std::strerror(errno)));
    }
    if (!S_ISDIR(sent_st.st_mode)) {
      throw std::runtime_error(fmt::format("--sent-dir '{}': not a folder", opt_.sent_dir));
    }
    const std::string given_sent = opt_.sent_dir;
    opt_.sent_dir = fs::canonical(given_sent, ec).string();
    if (ec) throw std::runtime_error(fmt::format("--sent-dir '{}': {}", given_sent, ec.message()));
    if (inside(opt_.sent_dir, opt_.dir)) {
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
    if (::access(opt_.sent_dir.c_str(), W_OK | X_OK) != 0) {
      throw std::runtime_error(
          fmt::format("--sent-dir '{}' is not writable: {}", given_sent, std::strerror(errno)));
    }
  }
  journal_path_ = opt_.journal.empty() ? opt_.dir + "/.ddft-watch-journal" : opt_.journal;
  {
    const fs::path j = fs::weakly_canonical(journal_path_, ec);
    if (!ec && inside(j.string(), opt_.dir) && !reserved(j.filename().string())) {
      throw std::runtime_error(fmt::format(
          "--watch-journal '{}' is inside the watched folder and would be sent: give it a name "
          "starting with '.ddft-' or put it elsewhere",
          journal_path_));
    }
  }
  {
    const std::string j = fs::weakly_canonical(journal_path_, ec).string();
    own_prefix_ = !ec && j != opt_.dir && inside(j, opt_.dir)
                      ? fs::path(j).lexically_relative(opt_.dir).string()
                      : std::string(".ddft-watch-journal");
  }
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
  if (auto err = journal_->compact()) {
    throw std::runtime_error(
        fmt::format("--watch-journal '{}' cannot be rewritten: {}", journal_path_, err.message()));
  }
  const auto now = clock_.now();
  const int wd = ::inotify_add_watch(inotify_.get(), opt_.dir.c_str(), kWatchMask);
  if (wd < 0) {
    throw std::runtime_error(fmt::format("cannot watch '{}': {}", given_dir, std::strerror(errno)));
  }
  add_tree("", now);
  spdlog::info(
      "Info: hot folder {}: watching {} folder(s), {} file(s) there; a file is sent "
      "once unchanged for {} s, then {}",
      opt_.dir, watches_.size(), tracker_.tracked(), opt_.settle_s,
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

void HotFolder::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
}

void HotFolder::replay() {
  const auto now = clock_.now();
  for (const JournalRecord& r : journal_->unfinished()) {
    struct stat st {};
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
    std::string moved_to;
    if (auto why = finish(r, &moved_to)) {
      // Still recorded as sent: the next start tries again. Meanwhile it is held, not sent.
      spdlog::error(
          "Error: hot folder: {}; '{}' was sent before the restart and is not sent "
          "again",
          *why, r.rel_path);
      kept_after_replay_.push_back(r);
      continue;
    }
    ++removed_;
    spdlog::info("Info: hot folder: '{}' was sent before the restart: {} without sending it again",
                 r.rel_path, moved_to.empty() ? std::string("deleted") : "moved to " + moved_to);
    if (auto ec = journal_->record_done(r)) {
      spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, ec.message());
    }
    if (const std::string parent = parent_of(r.rel_path); !parent.empty()) {
      tracker_.folder_emptied(parent, now);
    }
  }
}

std::optional<std::string> HotFolder::finish(const JournalRecord& r, std::string* moved_to) {
  const std::string src = abs(r.rel_path);
  // Checked again right before the removal: the journal's sync took milliseconds, long enough for
  // a producer to rename a new version over the name. (A replacement in the microseconds between
  // this check and the unlink or rename is not caught.)
  struct stat st {};
  if (::lstat(src.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || identity_of(st) != r.id) {
    return fmt::format("'{}' was replaced just after it was sent; the new version stays",
                       r.rel_path);
  }
  if (opt_.sent_dir.empty()) {
    if (::unlink(src.c_str()) != 0) {
      return fmt::format("cannot delete '{}': {}", src, std::strerror(errno));
    }
    return std::nullopt;
  }
  const std::string parent = parent_of(r.rel_path);
  const fs::path dest_dir =
      parent.empty() ? fs::path(opt_.sent_dir) : fs::path(opt_.sent_dir) / parent;
  std::error_code ec;
  fs::create_directories(dest_dir, ec);
  if (ec) return fmt::format("cannot create '{}': {}", dest_dir.string(), ec.message());
  const std::string base = base_of(r.rel_path);
  for (unsigned n = 0; n < 100000; ++n) {
    const std::string dst = (dest_dir / (n == 0 ? base : numbered_name(base, n))).string();
    // RENAME_NOREPLACE: a file already in the sent folder is never overwritten, even by a race.
    if (::renameat2(AT_FDCWD, src.c_str(), AT_FDCWD, dst.c_str(), RENAME_NOREPLACE) == 0) {
      *moved_to = dst;
      return std::nullopt;
    }
    if (errno != EEXIST) {
      return fmt::format("cannot move '{}' to '{}': {}", src, dst, std::strerror(errno));
    }
  }
  return fmt::format("cannot move '{}': no free name in '{}'", src, dest_dir.string());
}

bool HotFolder::admit(const std::string& rel) {
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
  if (warned_.insert(rel).second) {
    spdlog::warn("Warn: hot folder: skipping '{}': {} (only regular files are sent)", rel,
                 kind_of(mode));
  }
}

void HotFolder::note_reserved(const std::string& rel) {
  // The journal and its temporary and damaged copies are ours: no word about them.
  if (rel.starts_with(own_prefix_)) return;
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

void HotFolder::add_tree(const std::string& rel_dir, common::Clock::time_point now) {
  std::vector<std::string> stack{rel_dir};
  while (!stack.empty()) {
    const std::string d = std::move(stack.back());
    stack.pop_back();
    const std::string path = abs(d);
    // Watched before it is read: a file landing meanwhile is seen by the one or the other (or
    // both, which is harmless).
    const int wd = ::inotify_add_watch(inotify_.get(), path.c_str(), kWatchMask);
    if (wd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;  // gone meanwhile
      if (!watch_failed_) {
        spdlog::error(
            "Error: hot folder: cannot watch '{}': {} (raise the sysctl "
            "fs.inotify.max_user_watches); such folders are scanned every {} s instead",
            path, std::strerror(errno),
            std::chrono::duration_cast<std::chrono::seconds>(kPeriodicRescan).count());
        next_periodic_rescan_ = now + kPeriodicRescan;
      }
      watch_failed_ = true;
    } else {
      // A folder moved within the tree keeps its watch: the path is what changes.
      if (auto it = watches_.find(wd); it != watches_.end() && it->second != d) {
        watch_of_.erase(it->second);
      }
      watches_[wd] = d;
      watch_of_[d] = wd;
    }
    DIR* dp = ::opendir(path.c_str());
    if (dp == nullptr) continue;
    while (const dirent* de = ::readdir(dp)) {
      const std::string name = de->d_name;
      if (name == "." || name == "..") continue;
      const std::string rel = d.empty() ? name : d + "/" + name;
      if (reserved(name)) {
        note_reserved(rel);
        continue;
      }
      struct stat st {};
      if (::fstatat(::dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        stack.push_back(rel);
      } else if (S_ISREG(st.st_mode)) {
        if (admit(rel)) tracker_.found(rel, now);
      } else {
        warn_not_regular(rel, st.st_mode);
      }
    }
    ::closedir(dp);
  }
}

void HotFolder::forget_watches(const std::string& rel_dir) {
  // The folder itself, then what is below it ("a/b" sorts after "a-b", so it is a second range).
  const auto drop = [&](std::map<std::string, int>::iterator it) {
    ::inotify_rm_watch(inotify_.get(), it->second);  // moved out: its path is stale
    watches_.erase(it->second);
    return watch_of_.erase(it);
  };
  if (auto it = watch_of_.find(rel_dir); it != watch_of_.end()) drop(it);
  const std::string prefix = rel_dir + "/";
  for (auto it = watch_of_.lower_bound(prefix);
       it != watch_of_.end() && it->first.starts_with(prefix);) {
    it = drop(it);
  }
}

void HotFolder::rescan(common::Clock::time_point now) {
  rescan_pending_ = false;
  tracker_.rescan_begin();
  add_tree("", now);
  tracker_.rescan_end();
}

void HotFolder::read_events(common::Clock::time_point now) {
  alignas(struct inotify_event) char buf[64 * 1024];
  while (true) {
    const ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: none pending
    for (const char* p = buf; p < buf + n;) {
      const auto* ev = reinterpret_cast<const struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        if (!rescan_pending_) {
          spdlog::warn(
              "Warn: hot folder: the inotify event queue overflowed (raise the sysctl "
              "fs.inotify.max_queued_events); rescanning {}",
              opt_.dir);
        }
        rescan_pending_ = true;
        continue;
      }
      auto wit = watches_.find(ev->wd);
      if (wit == watches_.end()) continue;  // a watch already forgotten
      const std::string dir = wit->second;
      if (ev->mask & IN_IGNORED) {
        if (auto it = watch_of_.find(dir); it != watch_of_.end() && it->second == ev->wd) {
          watch_of_.erase(it);
        }
        watches_.erase(wit);
        if (dir.empty() && !lost_root_) {
          lost_root_ = true;
          spdlog::error("Error: hot folder {} was removed; the session ends", opt_.dir);
        }
        continue;
      }
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
        if (dir.empty() && !lost_root_) {
          lost_root_ = true;
          spdlog::error(
              "Error: hot folder {} was removed, moved away or unmounted; the session "
              "ends",
              opt_.dir);
        }
        continue;
      }
      if (ev->len == 0) continue;
      const std::string name(ev->name, ::strnlen(ev->name, ev->len));
      const std::string rel = dir.empty() ? name : dir + "/" + name;
      if (reserved(name)) {
        if (ev->mask & (IN_CREATE | IN_MOVED_TO)) note_reserved(rel);
        continue;
      }
      tracker_.folder_activity(dir, now);
      if (ev->mask & IN_ISDIR) {
        if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
          add_tree(rel, now);  // files may have landed in it before its watch
        } else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
          tracker_.gone_under(rel);
          forget_watches(rel);
        }
        continue;
      }
      if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
        tracker_.gone(rel);
        forget_warnings(rel);
        continue;
      }
      if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
        struct stat st {};
        if (::lstat(abs(rel).c_str(), &st) != 0) continue;  // gone already
        if (S_ISDIR(st.st_mode)) {
          add_tree(rel, now);
        } else if (!S_ISREG(st.st_mode)) {
          warn_not_regular(rel, st.st_mode);
        } else if (admit(rel)) {
          if (ev->mask & IN_CREATE) {
            tracker_.created(rel, now);
          } else {
            tracker_.closed(rel, now);  // moved in: complete as it arrives
          }
        }
        continue;
      }
      if (ev->mask & IN_CLOSE_WRITE) {
        if (admit(rel)) tracker_.closed(rel, now);
      } else if (ev->mask & IN_MODIFY) {
        if (admit(rel)) tracker_.modified(rel, now);
      } else if (ev->mask & IN_ATTRIB) {
        tracker_.attrib(rel, now);
      }
    }
  }
}

void HotFolder::check_root() {
  struct stat st {};
  if (lost_root_) return;
  if (::stat(opt_.dir.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == root_id_.dev &&
      static_cast<uint64_t>(st.st_ino) == root_id_.ino) {
    return;
  }
  lost_root_ = true;
  spdlog::error("Error: hot folder {} was removed or replaced; the session ends", opt_.dir);
}

void HotFolder::remove_folders(common::Clock::time_point now) {
  for (const std::string& f : tracker_.take_due_folders(now)) {
    // rmdir() removes only an empty folder: one that got a file meanwhile stays. Folders above
    // that this empties go too (never DIR itself).
    for (std::string d = f; !d.empty(); d = parent_of(d)) {
      if (::rmdir(abs(d).c_str()) != 0) break;
      spdlog::debug("hot folder: removed the emptied folder '{}'", d);
    }
  }
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
  if (watch_failed_ && now >= next_periodic_rescan_) {
    rescan_pending_ = true;
    next_periodic_rescan_ = now + kPeriodicRescan;
  }
  if (rescan_pending_) rescan(now);
  if (!kept_after_replay_.empty()) {
    // Sent before the restart but could not be removed: held, not sent again.
    for (const auto& r : kept_after_replay_) tracker_.hold(r.rel_path, r.id, now, false);
    kept_after_replay_.clear();
  }
  remove_folders(now);
  auto ready = tracker_.take_ready(now, [this](const std::string& rel) { return probe(rel); });
  if (!ready) return std::nullopt;
  const uint64_t tag = ++next_tag_;
  handed_out_[tag] = {ready->rel, ready->id};
  SourceFile f;
  f.path = abs(ready->rel);
  f.rel_path = ready->rel;
  f.tag = tag;
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
    int timeout_ms = 1000;
    {
      std::lock_guard lock(mu_);
      if (lost_root_) return std::nullopt;
      std::optional<common::Clock::time_point> due = tracker_.next_deadline();
      if (watch_failed_ && (!due || next_periodic_rescan_ < *due)) due = next_periodic_rescan_;
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
  if (auto ec = journal_->record_sent(rec)) {
    // Removing it unrecorded could lose it to a crash; it stays (sent again after a restart).
    spdlog::error(
        "Error: hot folder: cannot record '{}' as sent in '{}': {}; it stays in the "
        "folder",
        h.rel, journal_path_, ec.message());
    tracker_.hold(h.rel, cur, now, false);
    return;
  }
  if (opt_.crash_after_sent != 0 && ++sent_records_ == opt_.crash_after_sent) {
    spdlog::warn("Warn: test hook: the sender dies after recording '{}' as sent", h.rel);
    spdlog::default_logger()->flush();
    ::kill(::getpid(), SIGKILL);
  }
  std::string moved_to;
  if (auto why = finish(rec, &moved_to)) {
    // Recorded as sent: not sent again, here or after a restart (which tries to finish it).
    spdlog::error("Error: hot folder: {}; it was sent and stays", *why);
    tracker_.hold(h.rel, cur, now, false);
    return;
  }
  ++removed_;
  if (!moved_to.empty() && fs::path(moved_to).filename() != base_of(h.rel)) {
    spdlog::info("Info: hot folder: '{}' moved to '{}' (the sent folder had that name already)",
                 h.rel, moved_to);
  }
  if (auto ec = journal_->record_done(rec)) {
    spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, ec.message());
  }
  tracker_.finished(h.rel);
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
