#include "receiver/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include "common/json.hpp"

namespace ddft::receiver {
using common::write_all;

namespace {

constexpr std::string_view kTempPrefix = ".ddft-";
constexpr std::string_view kTempSuffix = ".part";
constexpr size_t kNameMax = 255;

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

std::string check_wire_path(std::string_view path, const PathLimits& limits) {
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
    if (comp.starts_with(kTempPrefix)) return "a name the receiver keeps for its own files (.ddft-*)";
    start = end + 1;
  }
  return "";
}

std::string collision_name(std::string_view base, unsigned n) {
  const size_t dot = base.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return fmt::format("{}.{}", base, n);
  return fmt::format("{}.{}{}", base.substr(0, dot), n, base.substr(dot));
}

std::string temp_name(uint64_t session, uint32_t file_id) {
  return fmt::format("{}{:016x}-{}{}", kTempPrefix, session, file_id, kTempSuffix);
}

bool is_temp_name(std::string_view name) {
  return name.size() > kTempPrefix.size() + kTempSuffix.size() && name.starts_with(kTempPrefix) &&
         name.ends_with(kTempSuffix);
}

OutputDir::OutputDir(const std::string& root, const std::string& failed_dir,
                     CollisionPolicy policy, bool null_sink)
    : root_(root), failed_path_(failed_dir), policy_(policy), null_sink_(null_sink) {
  root_fd_.reset(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd_) {
    throw std::runtime_error(
        fmt::format("output folder '{}' cannot be used: {}", root, errno_text(errno)));
  }
  if (::faccessat(root_fd_.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    throw std::runtime_error(
        fmt::format("output folder '{}' is not writable: {}", root, errno_text(errno)));
  }
  std::error_code ec;
  std::filesystem::create_directories(failed_dir, ec);
  failed_fd_.reset(::open(failed_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!failed_fd_ || ::faccessat(failed_fd_.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    throw std::runtime_error(fmt::format("failed-files folder '{}' cannot be used: {}", failed_dir,
                                         ec ? ec.message() : errno_text(errno)));
  }
  struct stat rs {}, fst {};
  ::fstat(root_fd_.get(), &rs);
  ::fstat(failed_fd_.get(), &fst);
  if (rs.st_dev != fst.st_dev) {
    throw std::runtime_error(fmt::format(
        "failed-files folder '{}' must be on the same file system as the output folder '{}'",
        failed_dir, root));
  }
  failed_dev_ = fst.st_dev;
  failed_ino_ = fst.st_ino;
}

bool OutputDir::open_parent(std::string_view rel_path, common::UniqueFd* dir, std::string* base,
                            std::string* reason) {
  common::UniqueFd cur(::dup(root_fd_.get()));
  size_t start = 0;
  while (true) {
    const size_t slash = rel_path.find('/', start);
    if (slash == std::string_view::npos) {
      *base = std::string(rel_path.substr(start));
      *dir = std::move(cur);
      return true;
    }
    const std::string comp(rel_path.substr(start, slash - start));
    int fd = open_dir_beneath(cur.get(), comp.c_str());
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(cur.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) {
        *reason = fmt::format("cannot create folder '{}': {}", comp, errno_text(errno));
        return false;
      }
      fd = open_dir_beneath(cur.get(), comp.c_str());
    }
    if (fd < 0) {
      *reason = (errno == ELOOP || errno == ENOTDIR)
                    ? fmt::format("'{}' in the output folder is a symlink or not a folder", comp)
                    : fmt::format("cannot open folder '{}': {}", comp, errno_text(errno));
      return false;
    }
    cur.reset(fd);
    struct stat st {};
    if (::fstat(cur.get(), &st) == 0 && st.st_dev == failed_dev_ && st.st_ino == failed_ino_) {
      *reason = "path leads into the failed-files folder";
      return false;
    }
    start = slash + 1;
  }
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
                            std::string* reason) {
  if (std::string why = check_wire_path(rel_path, limits_); !why.empty()) {
    *reason = why;
    return false;
  }
  if (null_sink_) {
    out->dir.reset(::dup(root_fd_.get()));
    out->fd.reset(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    out->tmp_name.clear();
    out->base_name = std::string(rel_path);
    out->rel_path = std::string(rel_path);
    return true;
  }
  common::UniqueFd dir;
  std::string base;
  if (!open_parent(rel_path, &dir, &base, reason)) return false;
  struct stat st {};
  if (::fstat(dir.get(), &st) == 0 && st.st_dev == failed_dev_ && st.st_ino == failed_ino_) {
    *reason = "path leads into the failed-files folder";
    return false;
  }
  // O_EXCL + O_NOFOLLOW: never reuse or follow whatever may already sit under the temp name.
  const int fd = ::openat(dir.get(), tmp.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *reason = fmt::format("cannot create temporary file: {}", errno_text(errno));
    return false;
  }
  if (direct_io_) {
    out->direct_fd.reset(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC));
  }
  out->dir = std::move(dir);
  out->fd.reset(fd);
  out->tmp_name = tmp;
  out->base_name = std::move(base);
  out->rel_path = std::string(rel_path);
  return true;
}

bool OutputDir::finalize(TempFile& f, uint32_t mode, int64_t mtime_ns, std::string* moved_old,
                         std::string* reason) {
  moved_old->clear();
  f.direct_fd.reset();
  if (null_sink_) {
    f.fd.reset();
    return true;
  }
  // Only permission bits: set-id and sticky bits from the wire are never applied.
  ::fchmod(f.fd.get(), static_cast<mode_t>(mode & 0777));
  const timespec times[2] = {{0, UTIME_OMIT},
                             {static_cast<time_t>(mtime_ns / 1'000'000'000),
                              static_cast<long>(mtime_ns % 1'000'000'000)}};
  if (mtime_ns >= 0) ::futimens(f.fd.get(), times);
  const int dfd = f.dir.get();
  const char* tmp = f.tmp_name.c_str();
  const char* fin = f.base_name.c_str();
  if (policy_ == CollisionPolicy::kOverwrite) {
    struct stat existing {};
    if (::fstatat(dfd, fin, &existing, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(existing.st_mode)) {
      *reason = "a folder already has that name";
      return false;
    }
    if (::renameat(dfd, tmp, dfd, fin) != 0) {
      *reason = fmt::format("cannot rename into place: {}", errno_text(errno));
      return false;
    }
    f.fd.reset();
    return true;
  }
  // Bounded: each pass either succeeds or finds a name taken by someone else meanwhile.
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (::renameat2(dfd, tmp, dfd, fin, RENAME_NOREPLACE) == 0) {
      f.fd.reset();
      return true;
    }
    if (errno != EEXIST) {
      *reason = fmt::format("cannot rename into place: {}", errno_text(errno));
      return false;
    }
    if (policy_ == CollisionPolicy::kReject) {
      *reason = "a file of the same name exists (--on-collision reject)";
      return false;
    }
    // Only a regular file is moved aside: a folder (the failed folder, a received tree) or
    // anything else of that name stays where it is and the new file fails instead.
    struct stat existing {};
    if (::fstatat(dfd, fin, &existing, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(existing.st_mode)) {
      *reason = "something that is not a regular file (a folder?) already has that name";
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
        *reason = fmt::format("cannot move the existing file aside: {}", errno_text(errno));
        return false;
      }
    }
  }
  *reason = "the final name stayed taken";
  return false;
}

int OutputDir::sync_dir(const TempFile& f) { return ::fsync(f.dir.get()) == 0 ? 0 : errno; }

std::string OutputDir::fail(TempFile& f, const FailureRecord& rec) {
  // "<time>-<session>-<id>-<base name>", cut to fit NAME_MAX with room for ".json".
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string base = rec.rel_path.substr(rec.rel_path.rfind('/') == std::string::npos
                                             ? 0
                                             : rec.rel_path.rfind('/') + 1);
  for (char& c : base) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '_';
  }
  std::string name = fmt::format("{}-{:016x}-{}-{}", stamp, rec.session, rec.file_id, base);
  if (name.size() > kNameMax - 5) name.resize(kNameMax - 5);

  std::string data_path;
  f.direct_fd.reset();
  if (f.fd || !f.tmp_name.empty()) {
    f.fd.reset();
    if ((rec.discard_data || rec.no_record) && f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    } else if (f.dir && ::renameat(f.dir.get(), f.tmp_name.c_str(), failed_fd_.get(), name.c_str()) == 0) {
      data_path = failed_path_ + "/" + name;
    } else if (f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    }
  }

  if (rec.no_record) return "";

  std::string json = "{\n";
  json += fmt::format("  \"name\": {},\n", common::json_quote(rec.rel_path));
  json += fmt::format("  \"session\": \"{:016x}\",\n  \"file_id\": {},\n", rec.session, rec.file_id);
  json += fmt::format("  \"expected_size\": {},\n  \"bytes_received\": {},\n", rec.expected_size,
                      rec.bytes_received);
  json += "  \"missing_ranges\": [";
  for (size_t i = 0; i < rec.missing.size(); ++i) {
    json += fmt::format("{}[{}, {}]", i ? ", " : "", rec.missing[i].first, rec.missing[i].second);
  }
  json += fmt::format("],\n  \"missing_ranges_total\": {},\n", rec.missing_ranges_total);
  json += fmt::format("  \"reason\": {},\n", common::json_quote(rec.reason));
  json += fmt::format("  \"verify\": {},\n", common::json_quote(rec.verify));
  json += fmt::format("  \"expected_key\": {},\n", common::json_quote(rec.expected_key));
  json += fmt::format("  \"computed_key\": {},\n", common::json_quote(rec.computed_key));
  json += fmt::format("  \"data_file\": {},\n",
                      common::json_quote(data_path.empty() ? "" : name));
  json += fmt::format("  \"time\": \"{}\"\n}}\n", stamp);

  const std::string json_name = name + ".json";
  common::UniqueFd jfd(::openat(failed_fd_.get(), json_name.c_str(),
                                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!jfd || !write_all(jfd.get(), json)) return "";
  return failed_path_ + "/" + json_name;
}

}  // namespace ddft::receiver

namespace ddft::receiver {

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

std::optional<std::string> OutputDir::read_state() const {
  // O_NONBLOCK: a FIFO planted under the name must not hang the start-up.
  common::UniqueFd fd(::openat(root_fd_.get(), kStateFileName,
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  const std::string where = fmt::format("{}/{}", root_, kStateFileName);
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    throw std::runtime_error(
        fmt::format("session state '{}' cannot be read: {}", where, errno_text(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::runtime_error(fmt::format("session state '{}' is not a regular file", where));
  }
  std::string text(4096, '\0');
  const ssize_t got = common::read_up_to(fd.get(), text.data(), text.size());
  if (got < 0) {
    throw std::runtime_error(
        fmt::format("session state '{}' cannot be read: {}", where, errno_text(errno)));
  }
  text.resize(static_cast<size_t>(got));
  return text;
}

bool OutputDir::write_state(std::string_view text, std::string* reason) {
  if (null_sink_) return true;
  const std::string tmp = std::string(kStateFileName) + ".new";
  // Whatever sits under the temporary name (a FIFO, a hard link to another file) is removed, not
  // opened; O_EXCL then makes a new file or fails.
  ::unlinkat(root_fd_.get(), tmp.c_str(), 0);
  common::UniqueFd fd(::openat(root_fd_.get(), tmp.c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                               0600));
  // Durable before it counts: the data, the rename, and the folder entry (a replay mark lost in a
  // power cut would reopen the door to what was taken before it).
  if (!fd || !write_all(fd.get(), text) || ::fsync(fd.get()) != 0 ||
      ::renameat(root_fd_.get(), tmp.c_str(), root_fd_.get(), kStateFileName) != 0 ||
      ::fsync(root_fd_.get()) != 0) {
    *reason = errno_text(errno);
    ::unlinkat(root_fd_.get(), tmp.c_str(), 0);
    return false;
  }
  return true;
}

std::string OutputDir::check_path(std::string_view rel_path) const {
  return check_wire_path(rel_path, limits_);
}

uint64_t OutputDir::free_bytes() const {
  struct statvfs st {};
  if (null_sink_ || ::fstatvfs(root_fd_.get(), &st) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

std::vector<Leftover> OutputDir::recover_leftovers() {
  std::vector<Leftover> out;
  if (null_sink_) return out;
  sweep(root_fd_.get(), "", 0, &out);
  return out;
}

void OutputDir::sweep(int dir_fd, const std::string& rel, int depth, std::vector<Leftover>* out) {
  constexpr int kMaxDepth = 128;
  if (depth > kMaxDepth) return;
  // A descriptor of our own for the listing: closedir() closes it.
  const int list_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return;
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return;
  }
  std::vector<std::string> temps;
  std::vector<std::string> dirs;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev == failed_dev_ && st.st_ino == failed_ino_) continue;  // the failed folder
      if (st.st_dev != failed_dev_) continue;  // another file system mounted below: not ours
      dirs.push_back(name);
    } else if (S_ISREG(st.st_mode) && is_temp_name(name)) {
      temps.push_back(name);
    }
  }
  ::closedir(d);
  for (const std::string& name : temps) {
    TempFile f;
    f.dir.reset(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    f.tmp_name = name;
    f.rel_path = rel + name;
    FailureRecord r;
    r.rel_path = f.rel_path;
    // ".ddft-<session>-<id>.part": the session and file id it belonged to.
    const std::string core = name.substr(kTempPrefix.size(), name.size() - kTempPrefix.size() -
                                                                 kTempSuffix.size());
    const size_t dash = core.find('-');
    if (dash != std::string::npos) {
      r.session = std::strtoull(core.substr(0, dash).c_str(), nullptr, 16);
      r.file_id = static_cast<uint32_t>(std::strtoul(core.substr(dash + 1).c_str(), nullptr, 10));
    }
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      r.bytes_received = static_cast<uint64_t>(st.st_size);
    }
    r.reason = "left by an earlier run of the receiver, which stopped before the file was "
               "complete (found at start-up)";
    r.verify = "NONE";
    out->push_back({f.rel_path, fail(f, r)});
  }
  for (const std::string& name : dirs) {
    common::UniqueFd sub(
        ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub) sweep(sub.get(), rel + name + "/", depth + 1, out);
  }
}

}  // namespace ddft::receiver
