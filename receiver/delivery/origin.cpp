#include "receiver/delivery/origin.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/fd.hpp"
#include "receiver/delivery/own_files.hpp"

namespace ddft::receiver {

std::string format_origin(const Origin& o) {
  return fmt::format(
      "ddft-origin=1\npath={}\nsize={}\nmtime_ns={}\nmode={:o}\nverify={}\n"
      "session={:016x}\nfile_id={}\nchunk_size={}\nsender={}\nannounced_ns={}\n",
      o.file.path, o.file.size, o.mtime_ns, o.mode, o.file.verify_name(), o.file.session,
      o.file.file_id, o.chunk_size, o.sender, o.announced_ns);
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
      o.file.path = value;
    } else if (key == "size") {
      number(value, 10, 1, &o.file.size);
    } else if (key == "mtime_ns") {
      number(value, 10, 2, &o.mtime_ns);
    } else if (key == "mode") {
      number(value, 8, 4, &o.mode);
    } else if (key == "verify") {
      if (!common::parse_verify_type(value, &o.file.verify)) bad = true;
      seen |= 128;
    } else if (key == "session") {
      number(value, 16, 8, &o.file.session);
    } else if (key == "file_id") {
      number(value, 10, 16, &o.file.file_id);
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
  if (!magic || bad || o.file.path.empty() || seen != 511 || !whole) return false;
  *out = std::move(o);
  return true;
}

bool read_origin_of(int dir_fd, const std::string& name, int fd, Origin* o) {
  std::string text(8192, '\0');
  ssize_t n = ::fgetxattr(fd, kOriginXattr, text.data(), text.size());
  if (n < 0) {
    const std::string side = sidecar_name(name);
    common::UniqueFd sfd(
        ::openat(dir_fd, side.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!sfd) return false;
    n = common::read_up_to(sfd.get(), text.data(), text.size());
    if (n < 0) return false;
  }
  text.resize(static_cast<size_t>(n));
  return parse_origin(text, o);
}

bool write_origin(int dir_fd, int fd, const std::string& tmp, const Origin& origin,
                  std::string* sidecar, std::string* why) {
  // An xattr travels with the file; where the file system has none (ENOTSUP), a small sidecar
  // beside it.
  const std::string text = format_origin(origin);
  if (::fsetxattr(fd, kOriginXattr, text.data(), text.size(), 0) == 0) return true;
  const int err = errno;
  if (err != ENOTSUP && err != EOPNOTSUPP) {
    *why = fmt::format("cannot write the file's origin (xattr): {}", std::strerror(err));
    return false;
  }
  *sidecar = sidecar_name(tmp);
  common::UniqueFd sfd(::openat(dir_fd, sidecar->c_str(),
                                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (sfd && common::write_all(sfd.get(), text)) return true;
  *why = fmt::format("cannot write the file's origin beside it: {}", std::strerror(errno));
  ::unlinkat(dir_fd, sidecar->c_str(), 0);
  sidecar->clear();
  return false;
}

}  // namespace ddft::receiver
