#include "sender/source/sent_removal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "sender/source/hot_folder_paths.hpp"

namespace ddft::sender {
namespace fs = std::filesystem;
using namespace hot_folder_paths;
namespace {

// "name.N.ext": the same scheme as the receiver's collision names ("a.tar.gz" -> "a.tar.N.gz",
// ".bashrc" -> ".bashrc.N").
std::string numbered_name(const std::string& base, unsigned n) {
  const size_t dot = base.rfind('.');
  if (dot == std::string::npos || dot == 0) return fmt::format("{}.{}", base, n);
  return fmt::format("{}.{}{}", base.substr(0, dot), n, base.substr(dot));
}

}  // namespace

std::string finishing_name(const JournalRecord& r) {
  const std::string name = fmt::format("{}{:x}", kFinishingPrefix, r.id.ino);
  const std::string parent = parent_of(r.rel_path);
  return parent.empty() ? name : parent + "/" + name;
}

SentRemoval::SentRemoval(const HotFolderOptions& opt) : opt_(opt) {
  if (!opt_.sent_dir.empty() &&
      (opt_.retention.keep_for.count() > 0 || opt_.retention.max_bytes > 0)) {
    retention_ = std::make_unique<Retention>(opt_.sent_dir, opt_.retention);
    retention_->prune(/*now_anyway=*/true);
  }
}

std::string SentRemoval::abs(const std::string& rel) const {
  return rel.empty() ? opt_.dir : opt_.dir + "/" + rel;
}

bool SentRemoval::finish(const JournalRecord& r, std::string* moved_to, std::string* put_back,
                         std::string* why) {
  const std::string src = abs(r.rel_path);
  // Checked again right before the removal: the journal's sync took milliseconds, long enough for
  // a producer to rename a new version over the name.
  struct stat st {};
  if (::lstat(src.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || identity_of(st) != r.id) {
    *why =
        fmt::format("'{}' was replaced just after it was sent; the new version stays", r.rel_path);
    return false;
  }
  hook("finish", r.rel_path);
  // A new version renamed over the name after that check would be what an unlink or a move
  // takes. So the name is first moved aside to a private one in the same folder, atomically, and
  // then the inode that moved is checked: the sent version is removed, another is put back.
  const std::string priv = abs(finishing_name(r));
  if (::renameat2(AT_FDCWD, src.c_str(), AT_FDCWD, priv.c_str(), RENAME_NOREPLACE) != 0) {
    *why = fmt::format("cannot rename '{}' to '{}': {}", src, priv, std::strerror(errno));
    return false;
  }
  hook("finish-moved", r.rel_path);
  return finish_private(r, priv, moved_to, put_back, why);
}

bool SentRemoval::finish_private(const JournalRecord& r, const std::string& priv,
                                 std::string* moved_to, std::string* put_back_to,
                                 std::string* why) {
  moved_to->clear();
  put_back_to->clear();
  struct stat st {};
  if (::lstat(priv.c_str(), &st) != 0) {
    *why = fmt::format("cannot check '{}': {}", priv, std::strerror(errno));
    return false;
  }
  if (!S_ISREG(st.st_mode) || identity_of(st) != r.id) {
    // Not the version sent (that one was replaced, and so is gone): a new one, to be sent.
    return put_back(r.rel_path, priv, put_back_to, why);
  }
  if (opt_.sent_dir.empty()) {
    if (::unlink(priv.c_str()) != 0) {
      *why = fmt::format("cannot delete '{}': {}", priv, std::strerror(errno));
      return false;
    }
    return true;
  }
  if (!move_to_sent(r.rel_path, priv, moved_to, why)) return false;
  if (retention_) {
    retention_->kept(*moved_to, r.id.size);
    retention_->prune();
  }
  return true;
}

bool SentRemoval::move_to_sent(const std::string& rel, const std::string& from,
                               std::string* moved_to, std::string* why) {
  const std::string parent = parent_of(rel);
  const fs::path dest_dir =
      parent.empty() ? fs::path(opt_.sent_dir) : fs::path(opt_.sent_dir) / parent;
  std::error_code ec;
  fs::create_directories(dest_dir, ec);
  if (ec) {
    *why = fmt::format("cannot create '{}': {}", dest_dir.string(), ec.message());
    return false;
  }
  const std::string base = base_of(rel);
  for (unsigned n = 0; n < 100000; ++n) {
    const std::string dst = (dest_dir / (n == 0 ? base : numbered_name(base, n))).string();
    // RENAME_NOREPLACE: a file already in the sent folder is never overwritten, even by a race.
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, dst.c_str(), RENAME_NOREPLACE) == 0) {
      *moved_to = dst;
      return true;
    }
    if (errno != EEXIST) {
      *why = fmt::format("cannot move '{}' to '{}': {}", from, dst, std::strerror(errno));
      return false;
    }
  }
  *why = fmt::format("cannot move '{}': no free name in '{}'", from, dest_dir.string());
  return false;
}

bool SentRemoval::put_back(const std::string& rel, const std::string& priv, std::string* where,
                           std::string* why) {
  const std::string parent = parent_of(rel);
  const std::string base = base_of(rel);
  for (unsigned n = 0; n < 100000; ++n) {
    const std::string name = n == 0 ? base : numbered_name(base, n);
    const std::string cand = parent.empty() ? name : parent + "/" + name;
    // RENAME_NOREPLACE: a version renamed in meanwhile is newer still; it keeps the name.
    if (::renameat2(AT_FDCWD, priv.c_str(), AT_FDCWD, abs(cand).c_str(), RENAME_NOREPLACE) == 0) {
      *where = cand;
      return true;
    }
    if (errno != EEXIST) {
      *why = fmt::format("cannot put a new version of '{}' back from '{}': {}", rel, priv,
                         std::strerror(errno));
      return false;
    }
  }
  *why = fmt::format("cannot put a new version of '{}' back from '{}': no free name", rel, priv);
  return false;
}

}  // namespace ddft::sender
