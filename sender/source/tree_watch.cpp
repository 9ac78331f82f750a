#include "sender/source/tree_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "sender/source/hot_folder_paths.hpp"

namespace ddft::sender {
using namespace hot_folder_paths;
namespace {

// The events watched on every folder of the tree.
constexpr uint32_t kWatchMask = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                                IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF |
                                IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;
// With a folder that could not be watched (fs.inotify.max_user_watches), how often the whole tree
// is scanned instead.
constexpr auto kPeriodicRescan = std::chrono::seconds(30);
// On a network filesystem, how often the whole tree is scanned too: inotify reports only what goes
// through this host's kernel (inotify(7)), so files other machines write there come to light only
// by scanning.
constexpr auto kNetworkRescan = std::chrono::seconds(10);

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

}  // namespace

TreeWatch::TreeWatch(const HotFolderOptions& opt, const std::string& given_dir,
                     FileIdentity root_id, ReadinessTracker& tracker, EntryFilter& entries)
    : opt_(opt), given_dir_(given_dir), root_id_(root_id), tracker_(tracker), entries_(entries) {
  inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify_) {
    throw std::runtime_error(
        fmt::format("cannot watch '{}': inotify: {}", given_dir, std::strerror(errno)));
  }
}

void TreeWatch::start(common::Clock::time_point now) {
  const int wd = ::inotify_add_watch(inotify_.get(), opt_.dir.c_str(), kWatchMask);
  if (wd < 0) {
    throw std::runtime_error(
        fmt::format("cannot watch '{}': {}", given_dir_, std::strerror(errno)));
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
}

bool TreeWatch::update(common::Clock::time_point now) {
  read_events(now);
  check_root();
  if (lost_root_) return false;
  if (rescan_every_ != common::Clock::duration::zero() && now >= next_periodic_rescan_) {
    rescan_pending_ = true;
    next_periodic_rescan_ = now + rescan_every_;
  }
  if (rescan_pending_) rescan(now);
  return true;
}

std::optional<common::Clock::time_point> TreeWatch::next_rescan() const {
  if (rescan_every_ == common::Clock::duration::zero()) return std::nullopt;
  return next_periodic_rescan_;
}

std::string TreeWatch::abs(const std::string& rel) const {
  return rel.empty() ? opt_.dir : opt_.dir + "/" + rel;
}

void TreeWatch::add_tree(const std::string& rel_dir, common::Clock::time_point now) {
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
        rescan_every(kPeriodicRescan, now);
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
    if (opt_.test_hook) opt_.test_hook("scan", d);
    DIR* dp = ::opendir(path.c_str());
    if (dp == nullptr) continue;
    while (const dirent* de = ::readdir(dp)) {
      const std::string name = de->d_name;
      if (name == "." || name == "..") continue;
      const std::string rel = d.empty() ? name : d + "/" + name;
      if (reserved(name)) {
        entries_.note_reserved(rel);
        continue;
      }
      struct stat st {};
      if (::fstatat(::dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        stack.push_back(rel);
      } else if (S_ISREG(st.st_mode)) {
        if (entries_.admit(rel)) tracker_.found(rel, now);
      } else {
        entries_.warn_not_regular(rel, st.st_mode);
      }
    }
    ::closedir(dp);
  }
}

void TreeWatch::forget_watches(const std::string& rel_dir) {
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

void TreeWatch::rescan(common::Clock::time_point now) {
  rescan_pending_ = false;
  tracker_.rescan_begin();
  add_tree("", now);
  tracker_.rescan_end();
}

void TreeWatch::read_events(common::Clock::time_point now) {
  alignas(struct inotify_event) char buf[64 * 1024];
  while (true) {
    const ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: none pending
    for (const char* p = buf; p < buf + n;) {
      const auto* ev = reinterpret_cast<const struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      handle_event(*ev, now);
    }
  }
}

void TreeWatch::handle_event(const struct inotify_event& ev, common::Clock::time_point now) {
  if (ev.mask & IN_Q_OVERFLOW) {
    if (!rescan_pending_) {
      spdlog::warn(
          "Warn: hot folder: the inotify event queue overflowed (raise the sysctl "
          "fs.inotify.max_queued_events); rescanning {}",
          opt_.dir);
    }
    rescan_pending_ = true;
    return;
  }
  auto wit = watches_.find(ev.wd);
  if (wit == watches_.end()) return;  // a watch already forgotten
  const std::string dir = wit->second;
  if (ev.mask & IN_IGNORED) {
    if (auto it = watch_of_.find(dir); it != watch_of_.end() && it->second == ev.wd) {
      watch_of_.erase(it);
    }
    watches_.erase(wit);
    if (dir.empty() && !lost_root_) {
      lost_root_ = true;
      spdlog::error("Error: hot folder {} was removed; the session ends", opt_.dir);
    }
    return;
  }
  if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
    if (dir.empty() && !lost_root_) {
      lost_root_ = true;
      spdlog::error(
          "Error: hot folder {} was removed, moved away or unmounted; the session "
          "ends",
          opt_.dir);
    }
    return;
  }
  if (ev.len == 0) return;
  const std::string name(ev.name, ::strnlen(ev.name, ev.len));
  const std::string rel = dir.empty() ? name : dir + "/" + name;
  if (reserved(name)) {
    if (ev.mask & (IN_CREATE | IN_MOVED_TO)) entries_.note_reserved(rel);
    return;
  }
  tracker_.folder_activity(dir, now);
  handle_entry_event(rel, ev.mask, now);
}

void TreeWatch::handle_entry_event(const std::string& rel, uint32_t mask,
                                   common::Clock::time_point now) {
  if (mask & IN_ISDIR) {
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
      add_tree(rel, now);  // files may have landed in it before its watch
    } else if (mask & (IN_DELETE | IN_MOVED_FROM)) {
      tracker_.gone_under(rel);
      forget_watches(rel);
    }
    return;
  }
  if (mask & (IN_DELETE | IN_MOVED_FROM)) {
    tracker_.gone(rel);
    entries_.forget(rel);
    return;
  }
  if (mask & (IN_CREATE | IN_MOVED_TO)) {
    struct stat st {};
    if (::lstat(abs(rel).c_str(), &st) != 0) return;  // gone already
    if (S_ISDIR(st.st_mode)) {
      add_tree(rel, now);
    } else if (!S_ISREG(st.st_mode)) {
      entries_.warn_not_regular(rel, st.st_mode);
    } else if (entries_.admit(rel)) {
      if (mask & IN_CREATE) {
        tracker_.created(rel, now);
      } else {
        tracker_.closed(rel, now);  // moved in: complete as it arrives
      }
    }
    return;
  }
  if (mask & IN_CLOSE_WRITE) {
    if (entries_.admit(rel)) tracker_.closed(rel, now);
  } else if (mask & IN_MODIFY) {
    if (entries_.admit(rel)) tracker_.modified(rel, now);
  } else if (mask & IN_ATTRIB) {
    tracker_.attrib(rel, now);
  }
}

void TreeWatch::rescan_every(common::Clock::duration every, common::Clock::time_point now) {
  if (rescan_every_ != common::Clock::duration::zero() && rescan_every_ <= every) return;
  rescan_every_ = every;
  next_periodic_rescan_ = now + every;
}

void TreeWatch::check_root() {
  struct stat st {};
  if (lost_root_) return;
  if (::stat(opt_.dir.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == root_id_.dev &&
      static_cast<uint64_t>(st.st_ino) == root_id_.ino) {
    return;
  }
  lost_root_ = true;
  spdlog::error("Error: hot folder {} was removed or replaced; the session ends", opt_.dir);
}

void TreeWatch::remove_folders(common::Clock::time_point now) {
  for (const std::string& f : tracker_.take_due_folders(now)) {
    // rmdir() removes only an empty folder: one that got a file meanwhile stays. Folders above
    // that this empties go too (never DIR itself).
    for (std::string d = f; !d.empty(); d = parent_of(d)) {
      if (::rmdir(abs(d).c_str()) != 0) break;
      spdlog::debug("hot folder: removed the emptied folder '{}'", d);
    }
  }
}

}  // namespace ddft::sender
