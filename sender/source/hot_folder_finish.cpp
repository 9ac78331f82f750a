// HotFolder's end of a file: once sent and recorded in the journal it is deleted or moved to the
// sent folder; a file that changed or failed stays. At start the journal's unfinished files are
// finished first (replay).
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "sender/source/hot_folder.hpp"
#include "sender/source/hot_folder_internal.hpp"

namespace ddft::sender {
namespace fs = std::filesystem;
using namespace hot_folder_detail;
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

void HotFolder::replay() {
  const auto now = clock_.now();
  for (const JournalRecord& r : journal_->unfinished()) {
    struct stat st {};
    // A stop between the private rename and the removal left the file there: finished first.
    if (const std::string priv = abs(finishing_name(r)); ::lstat(priv.c_str(), &st) == 0) {
      replay_private(r, priv);
      continue;
    }
    const std::string path = abs(r.rel_path);
    if (::lstat(path.c_str(), &st) != 0) {
      journal_->forget(r.rel_path);  // finished before the restart, its "done" not recorded
      continue;
    }
    if (!S_ISREG(st.st_mode) || identity_of(st) != r.id) {
      spdlog::info(
          "Info: hot folder: '{}' was sent before the restart but has changed since; "
          "it is sent again",
          r.rel_path);
      journal_->forget(r.rel_path);
      continue;
    }
    std::string moved_to, put;
    if (std::string why; !finish(r, &moved_to, &put, &why)) {
      // Still recorded as sent: the next start tries again. Meanwhile it is held, not sent.
      spdlog::error(
          "Error: hot folder: {}; '{}' was sent before the restart and is not sent "
          "again",
          why, r.rel_path);
      kept_after_replay_.push_back(r);
      continue;
    }
    if (put.empty()) {
      ++removed_;
      spdlog::info(
          "Info: hot folder: '{}' was sent before the restart: {} without sending it again",
          r.rel_path, moved_to.empty() ? std::string("deleted") : "moved to " + moved_to);
    } else {
      spdlog::warn(
          "Warn: hot folder: a new version of '{}' was renamed over it as it was removed; it "
          "is put back as '{}' and sent",
          r.rel_path, put);
    }
    if (std::string why; !journal_->record_done(r, &why)) {
      spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, why);
    }
    if (const std::string parent = parent_of(r.rel_path); !parent.empty()) {
      tracker_.folder_emptied(parent, now);
    }
  }
}

void HotFolder::replay_private(const JournalRecord& r, const std::string& priv) {
  std::string moved_to, put;
  if (std::string why; !finish_private(r, priv, &moved_to, &put, &why)) {
    // Left as it is, under its private name, and the record with it: the next start tries again.
    spdlog::error(
        "Error: hot folder: {}; '{}' was left there by a stop while '{}' was being removed, "
        "and stays",
        why, priv, r.rel_path);
    return;
  }
  if (put.empty()) {
    ++removed_;
    spdlog::info(
        "Info: hot folder: '{}' was sent before the restart and found under its private name: "
        "{} without sending it again",
        r.rel_path, moved_to.empty() ? std::string("deleted") : "moved to " + moved_to);
  } else {
    spdlog::warn(
        "Warn: hot folder: a new version of '{}' was left under its private name by a stop "
        "while the sent one was removed; it is put back as '{}' and sent",
        r.rel_path, put);
  }
  if (std::string why; !journal_->record_done(r, &why)) {
    spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, why);
  }
  if (const std::string parent = parent_of(r.rel_path); !parent.empty()) {
    tracker_.folder_emptied(parent, clock_.now());
  }
}

bool HotFolder::finish(const JournalRecord& r, std::string* moved_to, std::string* put_back,
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

bool HotFolder::finish_private(const JournalRecord& r, const std::string& priv,
                               std::string* moved_to, std::string* put_back_to, std::string* why) {
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

bool HotFolder::move_to_sent(const std::string& rel, const std::string& from, std::string* moved_to,
                             std::string* why) {
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

bool HotFolder::put_back(const std::string& rel, const std::string& priv, std::string* where,
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

void HotFolder::file_sent(const FileMeta& file, const common::Digest& /*digest*/) {
  std::lock_guard lock(mu_);
  auto it = handed_out_.find(file.tag);
  if (it == handed_out_.end()) return;
  const Handout h = std::move(it->second);
  handed_out_.erase(it);
  const auto now = clock_.now();
  // Only the version that went on the wire is removed: the one handed out (same inode) and read
  // (the size and mtime the reader announced), with no event since.
  struct stat st {};
  const bool present = ::lstat(abs(h.rel).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  const FileIdentity cur = present ? identity_of(st) : FileIdentity{};
  if (!present || cur.dev != h.id.dev || cur.ino != h.id.ino || cur.size != file.size ||
      cur.mtime_ns != file.mtime_ns || tracker_.changed_in_flight(h.rel)) {
    if (present) {
      spdlog::warn(
          "Warn: hot folder: '{}' changed while it was sent; it stays and is sent again "
          "once complete",
          h.rel);
    } else {
      spdlog::warn("Warn: hot folder: '{}' was removed or replaced while it was sent", h.rel);
    }
    tracker_.requeue(h.rel, now);
    wake();
    return;
  }
  const JournalRecord rec{h.rel, cur};
  if (std::string why; !journal_->record_sent(rec, &why)) {
    // Removing it unrecorded could lose it to a crash; it stays (sent again after a restart).
    spdlog::error(
        "Error: hot folder: cannot record '{}' as sent in '{}': {}; it stays in the "
        "folder",
        h.rel, journal_path_, why);
    tracker_.hold(h.rel, cur, now, false);
    return;
  }
  if (opt_.crash_after_sent != 0 && ++sent_records_ == opt_.crash_after_sent) {
    spdlog::warn("Warn: test hook: the sender dies after recording '{}' as sent", h.rel);
    spdlog::default_logger()->flush();
    ::kill(::getpid(), SIGKILL);
  }
  std::string moved_to, put;
  if (std::string why; !finish(rec, &moved_to, &put, &why)) {
    // Recorded as sent: not sent again, here or after a restart (which tries to finish it).
    spdlog::error("Error: hot folder: {}; it was sent and stays", why);
    tracker_.hold(h.rel, cur, now, false);
    return;
  }
  if (put.empty()) {
    ++removed_;
  } else {
    spdlog::warn(
        "Warn: hot folder: a new version of '{}' was renamed over it as it was removed; it is "
        "put back as '{}' and sent",
        h.rel, put);
  }
  if (!moved_to.empty() && fs::path(moved_to).filename() != base_of(h.rel)) {
    spdlog::info("Info: hot folder: '{}' moved to '{}' (the sent folder had that name already)",
                 h.rel, moved_to);
  }
  if (opt_.resends != nullptr && !moved_to.empty()) opt_.resends->moved(file.tag, moved_to);
  if (std::string why; !journal_->record_done(rec, &why)) {
    spdlog::warn("Warn: hot folder journal '{}': {}", journal_path_, why);
  }
  tracker_.finished(h.rel);
  // Moved in, as far as readiness goes (its events say the same, unless they were lost).
  if (!put.empty()) tracker_.closed(put, now);
  if (const std::string parent = parent_of(h.rel); !parent.empty()) {
    tracker_.folder_emptied(parent, now);
    wake();
  }
}

void HotFolder::file_failed(const FileMeta& file, const std::string& /*reason*/) {
  std::lock_guard lock(mu_);
  auto it = handed_out_.find(file.tag);
  if (it == handed_out_.end()) return;
  const Handout h = std::move(it->second);
  handed_out_.erase(it);
  if (stop_.stop_requested()) {
    spdlog::info("Info: hot folder: '{}' stays in the folder; it is sent after a restart", h.rel);
  } else {
    spdlog::warn("Warn: hot folder: '{}' stays in the folder; it is tried again when it changes",
                 h.rel);
  }
  tracker_.hold(h.rel, h.id, clock_.now(), true);
  wake();
}

}  // namespace ddft::sender
