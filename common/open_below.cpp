#include "common/open_below.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

namespace ddft::common {
namespace {

// After an open of `name` in `dir` failed: ELOOP (and *link set) when `name` is a symbolic link,
// whatever errno the open gave (ELOOP for a file, ENOTDIR for a folder opened with O_DIRECTORY),
// else errno as it was.
void name_link(int dir, const std::string& name, const std::string& shown, std::string* link) {
  const int err = errno;
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    if (link != nullptr) *link = shown;
    errno = ELOOP;
    return;
  }
  errno = err;
}

}  // namespace

UniqueFd open_below(const std::string& root, const std::string& below, int flags,
                    std::string* link) {
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return {};
  std::string shown = root;
  size_t from = 0;
  while (true) {
    const size_t slash = below.find('/', from);
    const std::string name =
        below.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
    if (shown.empty() || shown.back() != '/') shown += '/';  // "dir/" as the operator wrote it
    shown += name;
    if (slash == std::string::npos) {
      UniqueFd fd(::openat(dir.get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) name_link(dir.get(), name, shown, link);
      return fd;
    }
    UniqueFd next(
        ::openat(dir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      name_link(dir.get(), name, shown, link);
      return {};
    }
    dir = std::move(next);
    from = slash + 1;
  }
}

}  // namespace ddft::common
