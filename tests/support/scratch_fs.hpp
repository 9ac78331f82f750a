// Test helpers for real file systems: a scratch folder per test, a small file system mounted for
// a test's lifetime (tmpfs, or ramfs: no user extended attributes); LogCapture comes with it
// (support/log_capture.hpp). Header-only, for the unit tests of the receiver's file-system parts.
#pragma once

#include <sys/mount.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "support/log_capture.hpp"

namespace ddft::testing {

// A new, empty folder below the system temp folder ("ddft_<tag>_<pid>_<n>"), removed with all it
// holds when the object goes. Not thread-safe.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view tag) {
    static std::atomic<unsigned> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            (std::string("ddft_") + std::string(tag) + "_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Mounts a `type` file system ("tmpfs", "ramfs") on `where` (an existing empty folder) and
// unmounts it when the object goes. Needs root: when the mount is refused, skip_reason() says why
// in one line (for GTEST_SKIP) and nothing is mounted.
class ScopedMount {
 public:
  ScopedMount(const std::filesystem::path& where, const char* type) : where_(where) {
    if (::geteuid() != 0) {
      skip_reason_ = std::string("mounting a ") + type + " needs root";
      return;
    }
    const char* options = std::string_view(type) == "tmpfs" ? "size=64m" : nullptr;
    if (::mount(type, where.c_str(), type, 0, options) != 0) {
      skip_reason_ = std::string("mount -t ") + type + " refused: " + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~ScopedMount() {
    // Lazy: a descriptor a failed test left open must not keep the mount behind.
    if (mounted_) ::umount2(where_.c_str(), MNT_DETACH);
  }
  ScopedMount(const ScopedMount&) = delete;
  ScopedMount& operator=(const ScopedMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& skip_reason() const { return skip_reason_; }

 private:
  std::filesystem::path where_;
  bool mounted_ = false;
  std::string skip_reason_;
};

// True when files in `dir` take user extended attributes (probed with a file of its own).
inline bool has_user_xattrs(const std::filesystem::path& dir) {
  const std::filesystem::path probe = dir / ".xattr-probe";
  { std::ofstream(probe) << "x"; }
  const bool ok = ::setxattr(probe.c_str(), "user.probe", "1", 1, 0) == 0;
  std::filesystem::remove(probe);
  return ok;
}

// The extended attribute `name` of `p`; *err is 0, or the errno when it cannot be read (the
// text is then "").
inline std::string get_xattr(const std::filesystem::path& p, const char* name, int* err) {
  std::string v(65536, '\0');
  const ssize_t n = ::getxattr(p.c_str(), name, v.data(), v.size());
  *err = n < 0 ? errno : 0;
  v.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return v;
}

}  // namespace ddft::testing
