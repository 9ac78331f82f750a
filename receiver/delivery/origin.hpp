// A file's origin: what the receiver writes beside each temporary file as soon as its file is
// announced (the extended attribute kOriginXattr, or a sidecar file where the file system has no
// user extended attributes), so that a file left by a crash or a power cut can be named at the
// next start; its text form, and writing and reading it beside a file.
//
// Any thread: the functions touch only the descriptors they are given. Failures are results:
// write_origin() returns false with *why, a missing or damaged origin reads as none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/file_identity.hpp"

namespace ddft::receiver {

// What the receiver writes beside a file as soon as it is announced, so that a file left behind
// by a crash or a power cut can still be named at the next start: the announce, the sender
// session, where it came from and when.
struct Origin {
  common::FileIdentity file;  // as announced (no digest: the end has not come)
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint32_t chunk_size = 0;
  std::string sender;        // the sender's address ("127.0.0.1:40000", the device path), may be ""
  int64_t announced_ns = 0;  // wall clock (ns since the epoch) of the announce
};
// The origin as text (one "key=value" line each; a wire path holds no control character), and
// back. parse_origin() returns false for text that is not an origin.
std::string format_origin(const Origin& o);
[[nodiscard]] bool parse_origin(std::string_view text, Origin* out);
// The extended attribute that holds the origin (where the file system has no user extended
// attributes, a sidecar file: sidecar_name()).
inline constexpr const char* kOriginXattr = "user.ddft.origin";

// The origin of temporary file `name` (open as `fd`) in folder `dir_fd`: its xattr, else its
// sidecar. False when there is none or it does not parse.
[[nodiscard]] bool read_origin_of(int dir_fd, const std::string& name, int fd, Origin* o);

// Puts `origin` on the new file `fd`, whose temporary name in folder `dir_fd` is `tmp`: the xattr
// kOriginXattr, or where the file system has no user xattrs a sidecar (its name then in
// *sidecar). On failure returns false with *why set, and no sidecar is left.
[[nodiscard]] bool write_origin(int dir_fd, int fd, const std::string& tmp, const Origin& origin,
                                std::string* sidecar, std::string* why);

}  // namespace ddft::receiver
