// Private to OutputDir's implementation (receiver/delivery/output_dir*.cpp): the names it gives
// its own files and the helpers its parts share. Nothing else includes this. The helpers run on
// the thread of the OutputDir call that uses them and report failure by their result.
#pragma once

#include <cstring>
#include <string>
#include <string_view>

#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver::output_dir_detail {

inline constexpr std::string_view kTempPrefix = ".ddft-";
inline constexpr std::string_view kTempSuffix = ".part";
inline constexpr std::string_view kScratchSuffix = ".new";  // a temporary file before its origin
inline constexpr size_t kNameMax = 255;

inline std::string errno_text(int err) { return std::strerror(err); }

// The sidecar's name for temporary file `tmp` (".ddft-<session>-<id>.part" ->
// ".ddft-<session>-<id>.meta"): the last kTempSuffix.size() bytes of `tmp` replaced.
inline std::string sidecar_name(const std::string& tmp) {
  return tmp.substr(0, tmp.size() - kTempSuffix.size()) + std::string(kSidecarSuffix);
}

// The origin of temporary file `name` (open as `fd`) in folder `dir_fd`: its xattr, else its
// sidecar. False when there is none or it does not parse.
[[nodiscard]] bool read_origin_of(int dir_fd, const std::string& name, int fd, Origin* o);

// Puts `origin` on the new file `fd`, whose temporary name in folder `dir_fd` is `tmp`: the xattr
// kOriginXattr, or where the file system has no user xattrs a sidecar (its name then in
// *sidecar). On failure returns false with *why set, and no sidecar is left.
[[nodiscard]] bool write_origin(int dir_fd, int fd, const std::string& tmp, const Origin& origin,
                                std::string* sidecar, std::string* why);

}  // namespace ddft::receiver::output_dir_detail
