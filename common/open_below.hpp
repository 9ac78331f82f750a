// Opening a file below a folder without following a symbolic link on the way, for a file that a
// listing found as a regular file in regular folders: a link that has taken the place of the file,
// or of a folder on its path, since then is refused, never opened through.
//
// Each folder on the way is opened relative to the one before it with O_NOFOLLOW, and the file
// last the same way, so the path is resolved once, one component at a time, through descriptors
// this call holds: what a component is renamed to or replaced by after it was opened does not
// matter. Only openat(2) is used (no openat2 with RESOLVE_NO_SYMLINKS), so it works under every
// seccomp filter and kernel that the rest of the program runs on, and it can say which component
// is the link. Any thread; nothing here throws.
#pragma once

#include <string>

#include "common/fd.hpp"

namespace ddft::common {

// Opens `root` + "/" + `below` with `flags` (O_RDONLY, O_NONBLOCK...; O_NOFOLLOW and O_CLOEXEC are
// added). `root` is opened as named, symbolic links and all (the operator named it); in `below`
// ('/'-separated and relative, no "." or ".." component, as a folder listing makes it) no link is
// followed. On failure the descriptor is invalid and errno says why: ELOOP when a component is a
// symbolic link, *link then naming that component as `root` + "/" + its path below it (link may
// be null).
[[nodiscard]] UniqueFd open_below(const std::string& root, const std::string& below, int flags,
                                  std::string* link = nullptr);

}  // namespace ddft::common
