#include "receiver/delivery/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "common/folder_paths.hpp"

namespace ddft::receiver {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Opens folder `name` (one path component) of `dir` with no symlink followed anywhere and nothing
// resolved outside `dir` (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). Kernels before 5.6
// (ENOSYS) and sandboxes whose system-call filter predates openat2 (EPERM: systemd 246-247, older
// container profiles) fall back to openat(O_NOFOLLOW), which for one component is as strict.
int open_dir_beneath(int dir, const char* name) {
  static std::atomic<bool> have_openat2{true};
  if (have_openat2) {
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, dir, name, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
    have_openat2 = false;
  }
  return ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

}  // namespace

std::optional<std::string> check_wire_path(std::string_view path, const PathLimits& limits) {
  if (path.empty()) return "empty path";
  if (path.size() > limits.max_length) {
    return fmt::format("path of {} bytes is longer than --max-path-length {}", path.size(),
                       limits.max_length);
  }
  if (path.front() == '/') return "absolute path";
  for (unsigned char c : path) {
    if (c == 0) return "NUL byte in path";
    if (c < 0x20 || c == 0x7F) return "control character in path";
  }
  size_t start = 0;
  size_t depth = 0;
  while (start <= path.size()) {
    if (++depth > limits.max_depth) {
      return fmt::format("path deeper than --max-path-depth {}", limits.max_depth);
    }
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view comp = path.substr(start, end - start);
    if (comp.empty()) return "empty path component";
    if (comp == "." || comp == "..") return "'.' or '..' in path";
    if (comp.size() > kNameMax) return "path component longer than 255 bytes";
    if (comp.starts_with(kTempPrefix) || comp == kStateDirName)
      return "a name the receiver keeps for its own files (.ddft, .ddft-*)";
    start = end + 1;
  }
  return std::nullopt;
}

std::string collision_name(std::string_view base, unsigned n) {
  const size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return fmt::format("{}.{}", base, n);
  return fmt::format("{}.{}{}", base.substr(0, dot), n, base.substr(dot));
}

OutputDir::OutputDir(const std::string& root, const std::string& failed_dir, CollisionPolicy policy,
                     bool null_sink, const std::string& state_dir)
    : root_(root), policy_(policy), null_sink_(null_sink) {
  if (root.empty()) {
    // --sink null without --output: nothing on disk at all (see the header).
    if (!null_sink) throw std::runtime_error("no output folder given (--output)");
    return;
  }
  root_fd_.reset(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd_) {
    throw std::runtime_error(
        fmt::format("output folder '{}' cannot be used: {}", root, errno_text(errno)));
  }
  if (::faccessat(root_fd_.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    throw std::runtime_error(
        fmt::format("output folder '{}' is not writable: {}", root, errno_text(errno)));
  }
  state_path_ = state_dir.empty() ? default_state_dir(root) : state_dir;
  state_fd_ = open_state_dir(state_path_, root_fd_.get(), root, &state_id_);
  failed_.open(failed_dir, root, root_fd_.get(), state_fd_.get(), null_sink);
}

MovedState OutputDir::move_old_state() {
  if (!root_fd_) return {};
  struct stat default_failed {};
  // The old failed folder moves only into the default one (--failed-dir keeps what it names).
  const bool failed_is_default =
      ::fstatat(state_fd_.get(), kFailedDirName, &default_failed, AT_SYMLINK_NOFOLLOW) == 0 &&
      failed_.is(default_failed.st_dev, default_failed.st_ino);
  return receiver::move_old_state(StatePlaces{root_fd_.get(), root_, state_fd_.get(), state_path_,
                                              failed_is_default ? failed_.fd() : -1});
}

namespace {

// `path` made absolute and free of symbolic links, or "" when it cannot be.
std::string real_path(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (r == nullptr) return {};
  std::string out(r);
  std::free(r);
  return out;
}

}  // namespace

void OutputDir::map_channel(const std::string& name, const std::string& path) {
  const std::string what = fmt::format("--channel-dir {}={}", name, path);
  ChannelDir d{path, common::UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC))};
  if (!d.fd)
    throw std::runtime_error(fmt::format("{}: cannot open it: {}", what, errno_text(errno)));
  if (::faccessat(d.fd.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    throw std::runtime_error(fmt::format("{}: it is not writable: {}", what, errno_text(errno)));
  }
  struct stat st {};
  struct stat root_st {};
  if (::fstat(d.fd.get(), &st) != 0 || (root_fd_ && ::fstat(root_fd_.get(), &root_st) != 0)) {
    throw std::runtime_error(fmt::format("{}: cannot stat it: {}", what, errno_text(errno)));
  }
  if (root_fd_ && st.st_dev != root_st.st_dev) {
    throw std::runtime_error(
        fmt::format("{}: it is not on the output folder's file system (a failed file moves to the "
                    "failed-files folder, and one sync covers both)",
                    what));
  }
  const std::string real = real_path(path);
  const std::string root = root_.empty() ? std::string() : real_path(root_);
  if (!root.empty() && (common::at_or_below(real, root) || common::at_or_below(root, real))) {
    throw std::runtime_error(fmt::format(
        "{}: it is inside the output folder or holds it (files of channel {} land in {}/{}/ "
        "without it)",
        what, name, root_, name));
  }
  const std::string failed = failed_.path().empty() ? std::string() : real_path(failed_.path());
  if (failed_.is(st.st_dev, st.st_ino) ||
      (!failed.empty() &&
       (common::at_or_below(real, failed) || common::at_or_below(failed, real)))) {
    throw std::runtime_error(
        fmt::format("{}: it is the failed-files folder, within it, or holds it", what));
  }
  const std::string state = state_path_.empty() ? std::string() : real_path(state_path_);
  if (state_id_.is(st.st_dev, st.st_ino) ||
      (!state.empty() && (common::at_or_below(real, state) || common::at_or_below(state, real)))) {
    throw std::runtime_error(
        fmt::format("{}: it is the receiver's state folder, within it, or holds it", what));
  }
  for (const auto& [other, dir] : channel_dirs_) {
    const std::string o = real_path(dir.path);
    if (common::at_or_below(real, o) || common::at_or_below(o, real)) {
      throw std::runtime_error(
          fmt::format("{}: it is channel {}'s folder or within it, or holds it", what, other));
    }
  }
  if (!channel_dirs_.emplace(name, std::move(d)).second) {
    throw std::runtime_error(fmt::format("{}: channel {} has a folder already", what, name));
  }
}

int OutputDir::base_of(std::string_view rel_path, size_t* start) const {
  *start = 0;
  const size_t slash = rel_path.find('/');
  if (channel_dirs_.empty() || slash == std::string_view::npos) return root_fd_.get();
  const auto it = channel_dirs_.find(rel_path.substr(0, slash));
  if (it == channel_dirs_.end()) return root_fd_.get();
  *start = slash + 1;
  return it->second.fd.get();
}

std::string OutputDir::final_path(std::string_view rel_path) const {
  size_t start = 0;
  std::string_view base = root_;
  if (base_of(rel_path, &start) != root_fd_.get()) {
    base = channel_dirs_.find(rel_path.substr(0, start - 1))->second.path;
  }
  while (base.size() > 1 && base.back() == '/') base.remove_suffix(1);
  return std::string(base) + (base == "/" ? "" : "/") + std::string(rel_path.substr(start));
}

bool OutputDir::open_parent(std::string_view rel_path, common::UniqueFd* dir, std::string* base,
                            std::string* why, std::vector<common::UniqueFd>* made_in, bool create) {
  size_t start = 0;
  common::UniqueFd cur(::dup(base_of(rel_path, &start)));
  while (true) {
    const size_t slash = rel_path.find('/', start);
    if (slash == std::string_view::npos) {
      *base = std::string(rel_path.substr(start));
      *dir = std::move(cur);
      return true;
    }
    const std::string comp(rel_path.substr(start, slash - start));
    int fd = open_dir_beneath(cur.get(), comp.c_str());
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(cur.get(), comp.c_str(), 0755) != 0) {
        if (errno != EEXIST) {
          *why = fmt::format("cannot create folder '{}': {}", comp, errno_text(errno));
          return false;
        }
      } else if (made_in != nullptr) {
        // The new folder's entry lives in `cur`: it must be synced before any file in it (or
        // below it) counts as durable (take_new_folder_parents()).
        made_in->emplace_back(::dup(cur.get()));
      }
      fd = open_dir_beneath(cur.get(), comp.c_str());
    }
    if (fd < 0) {
      *why = (errno == ELOOP || errno == ENOTDIR)
                 ? fmt::format("'{}' in the output folder is a symlink or not a folder", comp)
                 : fmt::format("cannot open folder '{}': {}", comp, errno_text(errno));
      return false;
    }
    cur.reset(fd);
    struct stat st {};
    if (::fstat(cur.get(), &st) == 0 && refuse_own_folder(st, why)) return false;
    start = slash + 1;
  }
}

bool OutputDir::refuse_own_folder(const struct stat& st, std::string* why) const {
  if (failed_.is(st.st_dev, st.st_ino)) {
    *why = "path leads into the failed-files folder";
    return true;
  }
  if (state_id_.is(st.st_dev, st.st_ino)) {
    *why = "path leads into the receiver's state folder";
    return true;
  }
  return false;
}

bool OutputDir::enable_direct_io() {
  if (null_sink_) return false;
  const int fd = ::openat(root_fd_.get(), ".", O_TMPFILE | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  direct_io_ = true;
  return true;
}

bool OutputDir::create_temp(std::string_view rel_path, const std::string& tmp, TempFile* out,
                            std::string* why, const Origin* origin) {
  if (auto refused = check_wire_path(rel_path, limits_)) {
    *why = std::move(*refused);
    return false;
  }
  if (null_sink_) {
    if (root_fd_) out->dir.reset(::dup(root_fd_.get()));
    out->fd.reset(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    out->tmp_name.clear();
    out->base_name = std::string(rel_path);
    out->rel_path = std::string(rel_path);
    return true;
  }
  common::UniqueFd dir;
  std::string base;
  std::vector<common::UniqueFd> made_in;
  if (!open_parent(rel_path, &dir, &base, why, &made_in)) return false;
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) {
    *why = fmt::format("cannot use the folder: {}", errno_text(errno));
    return false;
  }
  if (refuse_own_folder(st, why)) return false;
  // Made under a scratch name and renamed to the temporary name only once its origin is on it:
  // a crash in between leaves a scratch file (removed at start-up, it holds no data), never a
  // temporary file nobody can name. O_EXCL + O_NOFOLLOW: never reuse or follow whatever may
  // already sit under either name.
  const std::string scratch =
      origin != nullptr && tmp.ends_with(kTempSuffix)
          ? tmp.substr(0, tmp.size() - kTempSuffix.size()) + std::string(kScratchSuffix)
          : tmp;
  common::UniqueFd fd(::openat(dir.get(), scratch.c_str(),
                               O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    *why = fmt::format("cannot create temporary file: {}", errno_text(errno));
    return false;
  }
  std::string sidecar;
  if (origin != nullptr) {
    // Written before anything else can happen to the file: from here on a crash leaves a file
    // the next start can name.
    if (!write_origin(dir.get(), fd.get(), tmp, *origin, &sidecar, why)) {
      ::unlinkat(dir.get(), scratch.c_str(), 0);
      return false;
    }
    if (scratch != tmp &&
        ::renameat2(dir.get(), scratch.c_str(), dir.get(), tmp.c_str(), RENAME_NOREPLACE) != 0) {
      *why = fmt::format("cannot create temporary file: {}", errno_text(errno));
      ::unlinkat(dir.get(), scratch.c_str(), 0);
      if (!sidecar.empty()) ::unlinkat(dir.get(), sidecar.c_str(), 0);
      return false;
    }
  }
  if (direct_io_) {
    out->direct_fd.reset(
        ::openat(dir.get(), tmp.c_str(), O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC));
  }
  out->dir = std::move(dir);
  out->fd = std::move(fd);
  out->tmp_name = tmp;
  out->base_name = std::move(base);
  out->rel_path = std::string(rel_path);
  out->sidecar = std::move(sidecar);
  out->renamed = false;
  out->dir_dev = st.st_dev;
  out->dir_ino = st.st_ino;
  if (!made_in.empty()) {
    std::lock_guard lock(new_parents_mu_);
    for (auto& p : made_in) new_parents_.push_back(std::move(p));
  }
  return true;
}

std::vector<common::UniqueFd> OutputDir::take_new_folder_parents() {
  std::lock_guard lock(new_parents_mu_);
  return std::exchange(new_parents_, {});
}

bool OutputDir::finalize(TempFile& f, uint32_t mode, int64_t mtime_ns, std::string* moved_old,
                         std::string* why) {
  set_times(f, mode, mtime_ns);
  if (!rename_into_place(f, moved_old, why)) return false;
  f.fd.reset();
  return true;
}

void OutputDir::set_times(TempFile& f, uint32_t mode, int64_t mtime_ns) {
  if (null_sink_ || !f.fd) return;
  // Only permission bits: set-id and sticky bits from the wire are never applied.
  ::fchmod(f.fd.get(), static_cast<mode_t>(mode & 0777));
  const timespec times[2] = {
      {0, UTIME_OMIT},
      {static_cast<time_t>(mtime_ns / 1'000'000'000), static_cast<long>(mtime_ns % 1'000'000'000)}};
  if (mtime_ns >= 0) ::futimens(f.fd.get(), times);
}

bool OutputDir::rename_into_place(TempFile& f, std::string* moved_old, std::string* why) {
  moved_old->clear();
  f.direct_fd.reset();
  if (null_sink_) {
    f.renamed = true;
    return true;
  }
  const int dfd = f.dir.get();
  const char* tmp = f.tmp_name.c_str();
  const char* fin = f.base_name.c_str();
  if (policy_ == CollisionPolicy::kOverwrite) {
    struct stat existing {};
    if (::fstatat(dfd, fin, &existing, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(existing.st_mode)) {
      *why = "a folder already has that name";
      return false;
    }
    if (::renameat(dfd, tmp, dfd, fin) != 0) {
      *why = fmt::format("cannot rename into place: {}", errno_text(errno));
      return false;
    }
    f.renamed = true;
    f.tmp_name = f.base_name;
    return true;
  }
  // Bounded: each pass either succeeds or finds a name taken by someone else meanwhile.
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (::renameat2(dfd, tmp, dfd, fin, RENAME_NOREPLACE) == 0) {
      f.renamed = true;
      f.tmp_name = f.base_name;
      return true;
    }
    if (errno != EEXIST) {
      *why = fmt::format("cannot rename into place: {}", errno_text(errno));
      return false;
    }
    if (policy_ == CollisionPolicy::kReject) {
      *why = "a file of the same name exists (--on-collision reject)";
      return false;
    }
    // Only a regular file is moved aside: a folder (the failed folder, a received tree) or
    // anything else of that name stays where it is and the new file fails instead.
    struct stat existing {};
    if (::fstatat(dfd, fin, &existing, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(existing.st_mode)) {
      *why = "something that is not a regular file (a folder?) already has that name";
      return false;
    }
    // Keep the old file under the first free "name.N.ext".
    bool moved = false;
    for (unsigned n = 1; n < 100000 && !moved; ++n) {
      const std::string cand = collision_name(f.base_name, n);
      if (::renameat2(dfd, fin, dfd, cand.c_str(), RENAME_NOREPLACE) == 0) {
        *moved_old = cand;
        moved = true;
      } else if (errno == ENOENT) {
        break;  // the old file went away by itself: just retry the rename
      } else if (errno != EEXIST) {
        *why = fmt::format("cannot move the existing file aside: {}", errno_text(errno));
        return false;
      }
    }
  }
  *why = "the final name stayed taken";
  return false;
}

FlushErrors OutputDir::flush_files(const std::vector<TempFile*>& files, bool datasync) {
  FlushErrors errors(files.size(), 0);
  if (null_sink_ || files.empty()) return errors;
#ifdef DDFT_TEST_DROP_SYNC
  return errors;  // a test-only build: no flush, so that the power-cut test must fail
#endif
  auto flush_one = [datasync](const TempFile& f) {
    if (!f.fd) return EBADF;
    const int rc = datasync ? ::fdatasync(f.fd.get()) : ::fsync(f.fd.get());
    return rc == 0 ? 0 : errno;
  };
  if (files.size() == 1) {
    errors[0] = flush_one(*files[0]);
    return errors;
  }
  // syncfs reports a write-back error of any file of the file system since the last call (per
  // descriptor); each file's own fdatasync reports only its own, so it tells which files failed.
  if (::syncfs(root_fd_.get()) == 0) return errors;
  for (size_t i = 0; i < files.size(); ++i) errors[i] = flush_one(*files[i]);
  return errors;
}

bool OutputDir::finish_renamed(const common::FileIdentity& file, bool* finished, std::string* why) {
  *finished = false;
  const std::string& rel_path = file.path;
  if (null_sink_ || check_path(rel_path)) return true;
  common::UniqueFd dir;
  std::string base;
  std::string not_there;  // not ours to finish: nothing to report
  if (!open_parent(rel_path, &dir, &base, &not_there, nullptr, /*create=*/false)) return true;
  common::UniqueFd fd(
      ::openat(dir.get(), base.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) != file.size) {
    return true;
  }
  // Only our file: its origin still names the session and the file (the origin is removed after
  // the Passed line, so a file that has one was never logged).
  const std::string tmp = temp_name(file.session, file.file_id);
  Origin o;
  if (!read_origin_of(dir.get(), tmp, fd.get(), &o) || o.file.session != file.session ||
      o.file.file_id != file.file_id || o.file.path != rel_path) {
    return true;
  }
  if (::fsync(fd.get()) != 0 || ::fsync(dir.get()) != 0) {
    *why = errno_text(errno);
    return false;
  }
  TempFile t;
  t.dir = std::move(dir);
  t.fd = std::move(fd);
  const std::string side = sidecar_name(tmp);
  if (::faccessat(t.dir.get(), side.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) t.sidecar = side;
  forget_origin(t);
  *finished = true;
  return true;
}

void OutputDir::lock_exclusive() {
  if (null_sink_) return;
  // flock on the folder itself: nothing to create, and the lock goes with the process.
  lock_fd_.reset(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock_fd_ || ::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    lock_fd_.reset();
    throw std::runtime_error(
        err == EWOULDBLOCK
            ? fmt::format("output folder '{}' is in use by another dd_file_receive (one receiver "
                          "per folder)",
                          root_)
            : fmt::format("output folder '{}' cannot be locked: {}", root_, errno_text(err)));
  }
}

bool OutputDir::read_state(const std::string& name, std::optional<std::string>* text,
                           std::string* why) const {
  text->reset();
  if (!state_fd_) return true;  // --sink null without a folder: state in memory only
  // O_NONBLOCK: a FIFO planted under the name must not hang the start-up.
  common::UniqueFd fd(
      ::openat(state_fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  const std::string where = fmt::format("{}/{}", state_path_, name);
  if (!fd) {
    if (errno == ENOENT) return true;
    *why = fmt::format("session state '{}' cannot be read: {}", where, errno_text(errno));
    return false;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = fmt::format("session state '{}' is not a regular file", where);
    return false;
  }
  std::string content(4096, '\0');
  const ssize_t got = common::read_up_to(fd.get(), content.data(), content.size());
  if (got < 0) {
    *why = fmt::format("session state '{}' cannot be read: {}", where, errno_text(errno));
    return false;
  }
  content.resize(static_cast<size_t>(got));
  *text = std::move(content);
  return true;
}

bool OutputDir::write_state(const std::string& name, std::string_view text, std::string* why) {
  if (null_sink_) return true;
  // Durable before it counts: the data, the rename, and the folder entry (a replay mark lost in a
  // power cut would reopen the door to what was taken before it). Whatever sits under the
  // temporary name (a FIFO, a hard link to another file) is removed, not opened.
  if (!common::replace_file_at(state_fd_.get(), name, text)) {
    *why = errno_text(errno);
    return false;
  }
  return true;
}

std::optional<std::string> OutputDir::check_path(std::string_view rel_path) const {
  return check_wire_path(rel_path, limits_);
}

std::optional<OutputDir::Space> OutputDir::space() const {
  struct statvfs st {};
  if (null_sink_ || ::fstatvfs(root_fd_.get(), &st) != 0) return std::nullopt;
  return Space{static_cast<uint64_t>(st.f_bavail) * st.f_frsize,
               static_cast<uint64_t>(st.f_blocks) * st.f_frsize};
}

uint64_t OutputDir::free_bytes() const {
  struct statvfs st {};
  if (null_sink_ || ::fstatvfs(root_fd_.get(), &st) != 0) return UINT64_MAX;
  // A record reserve's worth is never offered to files: when the reserve was given up for a
  // record on a full disk, its space stays for the next records.
  const uint64_t free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  const auto kept = static_cast<uint64_t>(kRecordReserveBytes);
  return free > kept ? free - kept : 0;
}

void OutputDir::forget_origin(TempFile& f) {
  if (null_sink_) return;
  if (!f.sidecar.empty() && f.dir) {
    ::unlinkat(f.dir.get(), f.sidecar.c_str(), 0);
    f.sidecar.clear();
  } else if (f.fd) {
    ::fremovexattr(f.fd.get(), kOriginXattr);
  }
}

std::vector<Leftover> OutputDir::recover_leftovers(bool keep_partial, const LeftoverClaim& claim) {
  if (null_sink_) return {};
  failed_.remove_torn_records();
  LeftoverSweep sweep(root_fd_.get(), failed_, keep_partial, claim, state_id_);
  std::vector<Leftover> out = sweep.run();
  for (const auto& [name, dir] : channel_dirs_) {
    std::vector<Leftover> more = sweep.run_below(dir.fd.get(), name + "/");
    out.insert(out.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
  }
  return out;
}

}  // namespace ddft::receiver
