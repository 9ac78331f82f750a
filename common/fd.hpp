// RAII owner of a POSIX file descriptor, and the read, write and replace helpers built on it.
//
// A UniqueFd owns its descriptor (move-only; closed by its destructor) and is used by one thread
// at a time. Nothing here throws: the helpers report failure by their result, with errno set.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace ddft::common {

// Owns one file descriptor and closes it on destruction. Move-only. Not thread-safe.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  // Gives up ownership; the caller must close the returned descriptor.
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Reads until `len` bytes or the end of the file, retrying on EINTR. Returns the bytes read, or
// -1 with errno set.
[[nodiscard]] inline ssize_t read_up_to(int fd, char* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    const ssize_t n = ::read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

// Writes all of `data` to `fd`, retrying on EINTR and short writes. False on an error (errno
// set) or when the file takes no more (a write of 0).
[[nodiscard]] inline bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Everything `fd` holds from offset `from` on (pread: its position stays), retrying on EINTR;
// what was read before an error.
inline std::string read_whole(int fd, off_t from = 0) {
  std::string text;
  char buf[65536];
  for (off_t pos = from;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    pos += n;
  }
  return text;
}

// Replaces the file `name` in the folder `dir_fd` with `text`, durably: "<name>.new" (whatever
// sits under that name is removed first, not opened; then made O_EXCL, mode 0600) is written
// and synced, renamed over `name`, and the folder synced. A power cut leaves the old file or
// the whole new one. False with errno set (the temporary file removed) when a step fails.
[[nodiscard]] inline bool replace_file_at(int dir_fd, const std::string& name,
                                          std::string_view text) {
  const std::string tmp = name + ".new";
  ::unlinkat(dir_fd, tmp.c_str(), 0);
  UniqueFd fd(::openat(dir_fd, tmp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!fd || !write_all(fd.get(), text) || ::fsync(fd.get()) != 0 ||
      ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0 || ::fsync(dir_fd) != 0) {
    const int err = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    errno = err;
    return false;
  }
  return true;
}

// replace_file_at() in the folder at path `dir`. False with errno set when it cannot be opened.
[[nodiscard]] inline bool replace_file_in(const std::string& dir, const std::string& name,
                                          std::string_view text) {
  const UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return d && replace_file_at(d.get(), name, text);
}

}  // namespace ddft::common
