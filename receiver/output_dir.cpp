#include "receiver/output_dir.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <mutex>
#include <type_traits>
#include <stdexcept>

#include "common/json.hpp"

namespace ddft::receiver {
using common::write_all;

namespace {

constexpr std::string_view kTempPrefix = ".ddft-";
constexpr std::string_view kTempSuffix = ".part";
constexpr std::string_view kScratchSuffix = ".new";  // a temporary file before its origin
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

// The origin of temporary file `name` in `dir_fd`: its xattr, else its sidecar.
bool read_origin_of(int dir_fd, const std::string& name, int fd, Origin* o) {
  std::string text(8192, '\0');
  ssize_t n = ::fgetxattr(fd, kOriginXattr, text.data(), text.size());
  if (n < 0) {
    const std::string side =
        name.substr(0, name.size() - kTempSuffix.size()) + std::string(kSidecarSuffix);
    common::UniqueFd sfd(::openat(dir_fd, side.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!sfd) return false;
    n = common::read_up_to(sfd.get(), text.data(), text.size());
    if (n < 0) return false;
  }
  text.resize(static_cast<size_t>(n));
  return parse_origin(text, o);
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

std::string format_origin(const Origin& o) {
  return fmt::format("ddft-origin=1\npath={}\nsize={}\nmtime_ns={}\nmode={:o}\nverify={}\n"
                     "session={:016x}\nfile_id={}\nchunk_size={}\nsender={}\nannounced_ns={}\n",
                     o.rel_path, o.size, o.mtime_ns, o.mode, o.verify, o.session, o.file_id,
                     o.chunk_size, o.sender, o.announced_ns);
}

bool parse_origin(std::string_view text, Origin* out) {
  const bool whole = !text.empty() && text.back() == '\n';
  Origin o;
  bool magic = false;
  unsigned seen = 0;  // a bit per numeric key, all required
  bool bad = false;
  // A whole decimal (or hex, or octal) number, nothing after it.
  auto number = [&](const std::string& v, int base, unsigned bit, auto* field) {
    char* end = nullptr;
    errno = 0;
    const bool is_signed = std::is_signed_v<std::remove_pointer_t<decltype(field)>>;
    const long long sv = is_signed ? std::strtoll(v.c_str(), &end, base) : 0;
    const unsigned long long uv = is_signed ? 0 : std::strtoull(v.c_str(), &end, base);
    if (v.empty() || *end != '\0' || errno != 0 || (!is_signed && v.front() == '-')) {
      bad = true;
      return;
    }
    using T = std::remove_pointer_t<decltype(field)>;
    if (is_signed) {
      *field = static_cast<T>(sv);
    } else {
      if (uv > std::numeric_limits<T>::max()) bad = true;
      *field = static_cast<T>(uv);
    }
    seen |= bit;
  };
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, eq);
    const std::string value(line.substr(eq + 1));
    if (key == "ddft-origin") {
      magic = value == "1";
    } else if (key == "path") {
      o.rel_path = value;
    } else if (key == "size") {
      number(value, 10, 1, &o.size);
    } else if (key == "mtime_ns") {
      number(value, 10, 2, &o.mtime_ns);
    } else if (key == "mode") {
      number(value, 8, 4, &o.mode);
    } else if (key == "verify") {
      o.verify = value;
      seen |= 128;
    } else if (key == "session") {
      number(value, 16, 8, &o.session);
    } else if (key == "file_id") {
      number(value, 10, 16, &o.file_id);
    } else if (key == "chunk_size") {
      number(value, 10, 32, &o.chunk_size);
    } else if (key == "sender") {
      o.sender = value;
      seen |= 256;
    } else if (key == "announced_ns") {
      number(value, 10, 64, &o.announced_ns);
    }
  }
  // Every key, each well formed, and the last line whole: a cut or damaged origin (a sidecar
  // half written when the power went) names nothing rather than a wrong file.
  if (!magic || bad || o.rel_path.empty() || seen != 511 || !whole) return false;
  *out = std::move(o);
  return true;
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
  keep_record_reserve();
}

bool OutputDir::open_parent(std::string_view rel_path, common::UniqueFd* dir, std::string* base,
                            std::string* reason, std::vector<common::UniqueFd>* made_in,
                            bool create) {
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
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(cur.get(), comp.c_str(), 0755) != 0) {
        if (errno != EEXIST) {
          *reason = fmt::format("cannot create folder '{}': {}", comp, errno_text(errno));
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
                            std::string* reason, const Origin* origin) {
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
  std::vector<common::UniqueFd> made_in;
  if (!open_parent(rel_path, &dir, &base, reason, &made_in)) return false;
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) {
    *reason = fmt::format("cannot use the folder: {}", errno_text(errno));
    return false;
  }
  if (st.st_dev == failed_dev_ && st.st_ino == failed_ino_) {
    *reason = "path leads into the failed-files folder";
    return false;
  }
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
    *reason = fmt::format("cannot create temporary file: {}", errno_text(errno));
    return false;
  }
  std::string sidecar;
  if (origin != nullptr) {
    // Written before anything else can happen to the file: from here on a crash leaves a file
    // the next start can name. An xattr travels with the file; where the file system has none
    // (ENOTSUP), a small sidecar beside it.
    const std::string text = format_origin(*origin);
    if (::fsetxattr(fd.get(), kOriginXattr, text.data(), text.size(), 0) != 0) {
      const int err = errno;
      bool ok = false;
      if (err == ENOTSUP || err == EOPNOTSUPP) {
        sidecar = tmp.substr(0, tmp.size() - kTempSuffix.size()) + std::string(kSidecarSuffix);
        common::UniqueFd sfd(::openat(dir.get(), sidecar.c_str(),
                                      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
        ok = sfd && write_all(sfd.get(), text);
        if (!ok) {
          *reason = fmt::format("cannot write the file's origin beside it: {}", errno_text(errno));
          ::unlinkat(dir.get(), sidecar.c_str(), 0);
        }
      } else {
        *reason = fmt::format("cannot write the file's origin (xattr): {}", errno_text(err));
      }
      if (!ok) {
        ::unlinkat(dir.get(), scratch.c_str(), 0);
        return false;
      }
    }
    if (scratch != tmp && ::renameat2(dir.get(), scratch.c_str(), dir.get(), tmp.c_str(),
                                      RENAME_NOREPLACE) != 0) {
      *reason = fmt::format("cannot create temporary file: {}", errno_text(errno));
      ::unlinkat(dir.get(), scratch.c_str(), 0);
      if (!sidecar.empty()) ::unlinkat(dir.get(), sidecar.c_str(), 0);
      return false;
    }
  }
  if (direct_io_) {
    out->direct_fd.reset(::openat(dir.get(), tmp.c_str(), O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC));
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
                         std::string* reason) {
  set_times(f, mode, mtime_ns);
  if (!rename_into_place(f, moved_old, reason)) return false;
  f.fd.reset();
  return true;
}

void OutputDir::set_times(TempFile& f, uint32_t mode, int64_t mtime_ns) {
  if (null_sink_ || !f.fd) return;
  // Only permission bits: set-id and sticky bits from the wire are never applied.
  ::fchmod(f.fd.get(), static_cast<mode_t>(mode & 0777));
  const timespec times[2] = {{0, UTIME_OMIT},
                             {static_cast<time_t>(mtime_ns / 1'000'000'000),
                              static_cast<long>(mtime_ns % 1'000'000'000)}};
  if (mtime_ns >= 0) ::futimens(f.fd.get(), times);
}

bool OutputDir::rename_into_place(TempFile& f, std::string* moved_old, std::string* reason) {
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
      *reason = "a folder already has that name";
      return false;
    }
    if (::renameat(dfd, tmp, dfd, fin) != 0) {
      *reason = fmt::format("cannot rename into place: {}", errno_text(errno));
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

FlushErrors OutputDir::flush_files(const std::vector<TempFile*>& files, bool datasync) {
  FlushErrors errors(files.size(), 0);
  if (null_sink_ || files.empty()) return errors;
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

bool OutputDir::finish_renamed(const std::string& rel_path, uint64_t session, uint32_t file_id,
                               uint64_t size, std::string* error) {
  if (null_sink_ || !check_path(rel_path).empty()) return false;
  common::UniqueFd dir;
  std::string base;
  std::string reason;
  if (!open_parent(rel_path, &dir, &base, &reason, nullptr, /*create=*/false)) return false;
  common::UniqueFd fd(::openat(dir.get(), base.c_str(),
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) != size) {
    return false;
  }
  // Only our file: its origin still names the session and the file (the origin is removed after
  // the Passed line, so a file that has one was never logged).
  const std::string tmp = temp_name(session, file_id);
  Origin o;
  if (!read_origin_of(dir.get(), tmp, fd.get(), &o) || o.session != session ||
      o.file_id != file_id || o.rel_path != rel_path) {
    return false;
  }
  if (::fsync(fd.get()) != 0 || ::fsync(dir.get()) != 0) {
    *error = errno_text(errno);
    return false;
  }
  TempFile t;
  t.dir = std::move(dir);
  t.fd = std::move(fd);
  const std::string side = tmp.substr(0, tmp.size() - kTempSuffix.size()) + std::string(kSidecarSuffix);
  if (::faccessat(t.dir.get(), side.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) t.sidecar = side;
  forget_origin(t);
  return true;
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

std::string OutputDir::record_name(const FailureRecord& rec) const {
  // "<time>-<session>-<id>-<base name>", cut to fit NAME_MAX with room for ".json.tmp".
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
  if (name.size() > kNameMax - 9) name.resize(kNameMax - 9);
  return name;
}

std::string OutputDir::record_path(const std::string& name) const {
  return failed_path_ + "/" + name + ".json";
}

std::string OutputDir::fail(TempFile& f, const FailureRecord& rec, std::string name) {
  if (name.empty()) name = record_name(rec);
  const std::string stamp = name.substr(0, 15);

  std::string data_path;
  f.direct_fd.reset();
  // The file leaves its folder first, its origin after: a crash in between must never leave a
  // temporary file that nobody can name (an orphan sidecar is removed at start-up).
  if (f.fd || !f.tmp_name.empty()) {
    if ((rec.discard_data || rec.no_record) && f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    } else if (f.dir && ::renameat(f.dir.get(), f.tmp_name.c_str(), failed_fd_.get(), name.c_str()) == 0) {
      data_path = failed_path_ + "/" + name;
      // The record says it all now.
      if (f.fd && !null_sink_ && f.sidecar.empty()) ::fremovexattr(f.fd.get(), kOriginXattr);
    } else if (f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    }
    f.fd.reset();
  }
  if (!f.sidecar.empty() && f.dir) {
    ::unlinkat(f.dir.get(), f.sidecar.c_str(), 0);
    f.sidecar.clear();
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
  json += fmt::format("  \"missing_ranges_exact\": {},\n", rec.missing_known ? "true" : "false");
  json += fmt::format("  \"reason\": {},\n", common::json_quote(rec.reason));
  json += fmt::format("  \"verify\": {},\n", common::json_quote(rec.verify));
  json += fmt::format("  \"expected_key\": {},\n", common::json_quote(rec.expected_key));
  json += fmt::format("  \"computed_key\": {},\n", common::json_quote(rec.computed_key));
  json += fmt::format("  \"data_file\": {},\n",
                      common::json_quote(data_path.empty() ? "" : name));
  json += fmt::format("  \"time\": \"{}\"\n}}\n", stamp);

  // Whole or not at all: written beside, then renamed (a crash never leaves an empty record).
  const std::string json_name = name + ".json";
  const std::string tmp_name = json_name + ".tmp";
  auto write_record = [&] {
    common::UniqueFd jfd(::openat(failed_fd_.get(), tmp_name.c_str(),
                                  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (jfd && write_all(jfd.get(), json) &&
        ::renameat(failed_fd_.get(), tmp_name.c_str(), failed_fd_.get(), json_name.c_str()) == 0) {
      return 0;
    }
    const int err = errno;
    ::unlinkat(failed_fd_.get(), tmp_name.c_str(), 0);
    return err;
  };
  int err = write_record();
  // A full disk: the space kept for records is given up for this one (and taken again once
  // the disk has room: keep_record_reserve()).
  if ((err == ENOSPC || err == EDQUOT) && release_record_reserve()) err = write_record();
  if (err != 0) return "";
  keep_record_reserve();
  return failed_path_ + "/" + json_name;
}

bool OutputDir::release_record_reserve() {
  std::lock_guard lock(reserve_mu_);
  return ::unlinkat(root_fd_.get(), kRecordReserveName, 0) == 0;
}

void OutputDir::keep_record_reserve() {
  if (null_sink_) return;
  std::lock_guard lock(reserve_mu_);
  struct stat st {};
  if (::fstatat(root_fd_.get(), kRecordReserveName, &st, AT_SYMLINK_NOFOLLOW) == 0) return;
  common::UniqueFd fd(::openat(root_fd_.get(), kRecordReserveName,
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  // Real blocks (not a sparse file): what a full disk still has for the failed files' records.
  if (::posix_fallocate(fd.get(), 0, kRecordReserveBytes) != 0) {
    ::unlinkat(root_fd_.get(), kRecordReserveName, 0);
  }
}

bool OutputDir::record_exists(const std::string& path) const {
  struct stat st {};
  return path.starts_with(failed_path_ + "/") &&
         ::fstatat(failed_fd_.get(), path.substr(failed_path_.size() + 1).c_str(), &st,
                   AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode) && st.st_size > 0;
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
  // A record reserve's worth is never offered to files: when the reserve was given up for a
  // record on a full disk, its space stays for the next records.
  const uint64_t free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  const auto kept = static_cast<uint64_t>(kRecordReserveBytes);
  return free > kept ? free - kept : 0;
}

std::vector<Leftover> OutputDir::recover_leftovers(bool keep_partial) {
  std::vector<Leftover> out;
  if (null_sink_) return out;
  // A record a crash cut short was never renamed into place: its half is removed.
  if (const int list_fd = ::openat(failed_fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      list_fd >= 0) {
    if (DIR* d = ::fdopendir(list_fd)) {
      std::vector<std::string> halves;
      while (const dirent* e = ::readdir(d)) {
        const std::string_view n = e->d_name;
        if (n.ends_with(".json.tmp")) halves.emplace_back(n);
      }
      ::closedir(d);
      for (const auto& n : halves) ::unlinkat(failed_fd_.get(), n.c_str(), 0);
    } else {
      ::close(list_fd);
    }
  }
  sweep(root_fd_.get(), "", 0, keep_partial, &out);
  return out;
}

namespace {

// The ranges of [0, size) that hold data in `fd` (SEEK_DATA / SEEK_HOLE), as far as the file
// system tells: a file system without hole reporting shows all of it as data.
std::vector<std::pair<uint64_t, uint64_t>> data_ranges(int fd, uint64_t size) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  off_t pos = 0;
  while (static_cast<uint64_t>(pos) < size) {
    const off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0) break;  // ENXIO: no data past pos
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) hole = static_cast<off_t>(size);
    const uint64_t a = static_cast<uint64_t>(data);
    const uint64_t b = std::min<uint64_t>(static_cast<uint64_t>(hole), size);
    if (a >= size) break;
    if (b > a) out.emplace_back(a, b);
    pos = hole;
  }
  return out;
}

}  // namespace

Leftover OutputDir::recover_one(int dir_fd, const std::string& rel, const std::string& name,
                                bool keep_partial) {
  Leftover l;
  l.temp_path = rel + name;
  l.rel_path = l.temp_path;
  TempFile f;
  f.dir.reset(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  f.tmp_name = name;
  f.rel_path = l.temp_path;
  FailureRecord r;
  // ".ddft-<session>-<id>.part": the session and file id it belonged to.
  const std::string core = name.substr(kTempPrefix.size(), name.size() - kTempPrefix.size() -
                                                               kTempSuffix.size());
  const size_t dash = core.find('-');
  if (dash != std::string::npos) {
    r.session = std::strtoull(core.substr(0, dash).c_str(), nullptr, 16);
    r.file_id = static_cast<uint32_t>(std::strtoul(core.substr(dash + 1).c_str(), nullptr, 10));
  }
  common::UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd && ::fstat(fd.get(), &st) == 0) r.bytes_received = static_cast<uint64_t>(st.st_size);
  Origin o;
  r.verify = "NONE";
  r.missing_known = false;
  if (fd && read_origin_of(dir_fd, name, fd.get(), &o)) {
    l.named = true;
    r.rel_path = o.rel_path;
    r.session = o.session;
    r.file_id = o.file_id;
    r.expected_size = o.size;
    r.verify = o.verify;
    f.rel_path = o.rel_path;
    const auto present = data_ranges(fd.get(), o.size);
    uint64_t have = 0;
    uint64_t at = 0;
    for (const auto& [a, b] : present) {
      have += b - a;
      if (a > at) r.missing.emplace_back(at, a);
      at = b;
    }
    if (at < o.size) r.missing.emplace_back(at, o.size);
    r.missing_ranges_total = r.missing.size();
    r.bytes_received = have;
    std::string ranges;
    for (size_t i = 0; i < r.missing.size() && i < 5; ++i) {
      ranges += fmt::format("{}{}-{}", i ? ", " : "", r.missing[i].first, r.missing[i].second);
    }
    if (r.missing.size() > 5) ranges += fmt::format(" and {} more", r.missing.size() - 5);
    l.missing_text = ranges;
    r.reason = "the receiver stopped (crash, kill or power cut) while the file was being received; "
               "found at start-up";
    if (!o.sender.empty()) r.reason += fmt::format(" (sender {})", o.sender);
    const std::string side =
        name.substr(0, name.size() - kTempSuffix.size()) + std::string(kSidecarSuffix);
    if (::faccessat(dir_fd, side.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) f.sidecar = side;
  } else {
    r.rel_path = l.temp_path;
    r.reason = "left by an earlier run of the receiver, which stopped before the file was "
               "complete (found at start-up; its origin could not be read, so only its "
               "temporary name is known)";
  }
  l.rel_path = r.rel_path;
  l.session = r.session;
  l.file_id = r.file_id;
  l.size = r.expected_size;
  l.bytes_present = r.bytes_received;
  // Whatever reached the page cache before the stop, unverified and maybe torn by a power cut:
  // removed unless the operator asked to keep it. A file without an origin keeps its data (as
  // before origins were written): it is all there is to tell what it was.
  r.discard_data = l.named && !keep_partial;
  l.data_kept = !r.discard_data;
  // fail() takes the descriptor too, so that it can remove the origin from the data it keeps.
  f.fd = std::move(fd);
  l.record = fail(f, r);
  return l;
}

void OutputDir::sweep(int dir_fd, const std::string& rel, int depth, bool keep_partial,
                      std::vector<Leftover>* out) {
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
  std::vector<std::string> sidecars;
  std::vector<std::string> scratches;
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
    } else if (S_ISREG(st.st_mode) && name.starts_with(kTempPrefix) &&
               name.ends_with(kSidecarSuffix)) {
      sidecars.push_back(name);
    } else if (S_ISREG(st.st_mode) && name.starts_with(kTempPrefix) &&
               name.ends_with(kScratchSuffix) && name.size() > 20) {
      scratches.push_back(name);  // made, never named (its origin not yet on it): no data
    }
  }
  ::closedir(d);
  for (const std::string& name : temps) out->push_back(recover_one(dir_fd, rel, name, keep_partial));
  for (const std::string& name : scratches) ::unlinkat(dir_fd, name.c_str(), 0);
  // A sidecar whose file is gone (a crash between the rename or the move and its removal).
  for (const std::string& name : sidecars) {
    const std::string part =
        name.substr(0, name.size() - kSidecarSuffix.size()) + std::string(kTempSuffix);
    if (::faccessat(dir_fd, part.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
      ::unlinkat(dir_fd, name.c_str(), 0);
    }
  }
  for (const std::string& name : dirs) {
    common::UniqueFd sub(
        ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub) sweep(sub.get(), rel + name + "/", depth + 1, keep_partial, out);
  }
}

}  // namespace ddft::receiver
