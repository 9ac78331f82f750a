#include "sender/source/resend_request.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

#include "common/fd.hpp"
#include "common/hash.hpp"
#include "common/json.hpp"
#include "common/parse_number.hpp"

namespace ddft::sender {
namespace {

using Fields = std::map<std::string, std::optional<std::string>>;

// The field `key` of `f`, or nothing when it is missing or null.
std::optional<std::string> field(const Fields& f, const char* key) {
  auto it = f.find(key);
  return it == f.end() ? std::nullopt : it->second;
}

bool hex_u64(const std::string& text, uint64_t* out) {
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out, 16);
  return !text.empty() && text.size() <= 16 && ec == std::errc() && p == text.data() + text.size();
}

// The request of one line into *r; false, with why it is not one in *why, when it is not.
[[nodiscard]] bool parse_request(std::string_view line, ResendRequest* r, std::string* why) {
  Fields f;
  if (!common::parse_flat_json(line, &f)) {
    *why = "not a JSON object of strings and numbers";
    return false;
  }
  const auto session = field(f, "session"), id = field(f, "file_id"), path = field(f, "path"),
             size = field(f, "size"), verify = field(f, "verify"), sender = field(f, "sender");
  if (!session || !hex_u64(*session, &r->file.session) || r->file.session == 0) {
    *why = "\"session\" is not 16 hex digits";
    return false;
  }
  if (!id || !common::parse_whole_number(*id, &r->file.file_id) || r->file.file_id == 0) {
    *why = "\"file_id\" is not a file id";
    return false;
  }
  if (!path || path->empty()) {
    *why = "\"path\" is missing";
    return false;
  }
  r->file.path = *path;
  if (!size || !common::parse_whole_number(*size, &r->file.size)) {
    *why = "\"size\" is not a size";
    return false;
  }
  if (!verify || !common::parse_verify_type(*verify, &r->file.verify)) {
    *why = "\"verify\" is not B2B, SHA256 or NONE";
    return false;
  }
  r->file.digest = field(f, "digest").value_or("");
  if (r->file.digest.size() != 2 * common::digest_size(r->file.verify)) {
    *why = "\"digest\" is not the full digest of its verify";
    return false;
  }
  if (sender && !hex_u64(*sender, &r->sender_id)) {
    *why = "\"sender\" is not 16 hex digits";
    return false;
  }
  return true;
}

// The digest of the file open as `fd`, under `v`, into *digest. False, with the kernel's reason
// (strerror) in *why, when a read fails.
[[nodiscard]] bool digest_of(int fd, common::VerifyType v, common::Digest* digest,
                             std::string* why) {
  std::unique_ptr<common::Hasher> h = common::make_hasher(v);
  std::vector<uint8_t> buf(1 << 20);
  for (off_t pos = 0;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), pos);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::strerror(errno);
      return false;
    }
    if (n == 0) break;
    h->update(std::span(buf).first(static_cast<size_t>(n)));
    pos += n;
  }
  *digest = h->finish();
  return true;
}

// Why the file at `path` is not the one `r` names, or nullopt when it is.
[[nodiscard]] std::optional<std::string> differs(const std::string& path, const ResendRequest& r) {
  const common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0)
    return fmt::format("cannot read '{}': {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fmt::format("'{}' is not a regular file", path);
  if (static_cast<uint64_t>(st.st_size) != r.file.size) {
    return fmt::format("'{}' is {} bytes, not the {} first sent: its bytes changed", path,
                       st.st_size, r.file.size);
  }
  if (r.file.verify == common::VerifyType::kNone) return std::nullopt;
  common::Digest digest;
  if (std::string why; !digest_of(fd.get(), r.file.verify, &digest, &why)) {
    return fmt::format("cannot read '{}': {}", path, why);
  }
  if (const std::string now = digest.hex(); now != r.file.digest) {
    return fmt::format("'{}' has digest {}, not the {} first sent: its bytes changed", path, now,
                       r.file.digest);
  }
  return std::nullopt;
}

// `path` without the number a folder of sent files adds to a name taken ("d/a.1.txt" is
// "d/a.txt", "d/a.2" is "d/a"); `path` itself when it has none.
std::string unnumbered(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t start = slash == std::string::npos ? 0 : slash + 1;
  const std::string base = path.substr(start);
  const size_t ext = base.rfind('.');
  // The number is the last dotted part before the extension, or the last one.
  const size_t end = ext == std::string::npos || ext == 0 ? base.size() : ext;
  const std::string stem = base.substr(0, end);
  const size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot + 1 == stem.size()) {
    if (end == base.size()) return path;
    // "a.1": the number is the extension itself.
    const std::string digits = base.substr(ext + 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos || ext == 0) return path;
    return path.substr(0, start) + base.substr(0, ext);
  }
  const std::string digits = stem.substr(dot + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return path;
  return path.substr(0, start) + stem.substr(0, dot) + base.substr(end);
}

}  // namespace

std::vector<ResendRequest> read_resend_requests(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error(
        fmt::format("the resend request '{}' cannot be read: {}", path, std::strerror(errno)));
  }
  std::vector<ResendRequest> out;
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ResendRequest r;
    if (std::string why; !parse_request(line, &r, &why)) {
      throw std::runtime_error(fmt::format("{}:{}: not a resend request: {}", path, n, why));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<SourceFile> resend_sources(const std::vector<ResendRequest>& requests,
                                       const std::vector<SourceFile>& listed,
                                       const std::string& retention, uint64_t sender_id,
                                       std::vector<SourceError>* errors) {
  // Each listed file under its own path, under it without its first folder (a folder given:
  // "sent/a/b.txt" for "a/b.txt"), and without a number a folder of sent files gave it
  // ("a.1.txt" for "a.txt"): the digest tells which one is the file.
  std::multimap<std::string, const SourceFile*> by_path;
  for (const SourceFile& s : listed) {
    for (const std::string& p : {s.rel_path, s.rel_path.substr(s.rel_path.find('/') + 1)}) {
      by_path.emplace(p, &s);
      if (const std::string plain = unnumbered(p); plain != p) by_path.emplace(plain, &s);
    }
  }
  std::vector<SourceFile> out;
  for (const ResendRequest& r : requests) {
    const std::string name =
        fmt::format("{} (session {:016x}, file {})", common::json_quote(r.file.path),
                    r.file.session, r.file.file_id);
    if (r.sender_id != 0 && sender_id != 0 && r.sender_id != sender_id) {
      errors->push_back({r.file.path, fmt::format("{}: sent by sender {:016x}, not this one "
                                                  "({:016x}); not sent",
                                                  name, r.sender_id, sender_id)});
      continue;
    }
    std::vector<std::string> candidates;
    if (!retention.empty()) {
      candidates.push_back(
          fmt::format("{}/{:016x}/{}/{}", retention, r.file.session, r.file.file_id, r.file.path));
    }
    for (auto [it, end] = by_path.equal_range(r.file.path); it != end; ++it) {
      if (std::find(candidates.begin(), candidates.end(), it->second->path) == candidates.end()) {
        candidates.push_back(it->second->path);
      }
    }
    // Those that exist, retention first; the first whose bytes are the ones sent goes.
    std::erase_if(candidates, [](const std::string& c) {
      struct stat st {};
      return ::lstat(c.c_str(), &st) != 0;
    });
    std::optional<std::string> why;
    if (candidates.empty()) why = "not in the retention folder nor under the sources given";
    for (const std::string& c : candidates) {
      why = differs(c, r);
      if (why) continue;
      SourceFile s;
      s.path = c;
      s.rel_path = r.file.path;
      s.size = r.file.size;
      s.resend_of = r.file;
      // A listed file is opened as the listing allows (SourceFile::root).
      for (auto [it, end] = by_path.equal_range(r.file.path); it != end; ++it) {
        if (it->second->path == c) {
          s.root = it->second->root;
          s.below = it->second->below;
        }
      }
      out.push_back(std::move(s));
      break;
    }
    if (why) errors->push_back({r.file.path, fmt::format("{}: {}; not sent", name, *why)});
  }
  return out;
}

}  // namespace ddft::sender
