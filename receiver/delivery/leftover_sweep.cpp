#include "receiver/delivery/leftover_sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "receiver/delivery/origin.hpp"
#include "receiver/delivery/own_files.hpp"

namespace ddft::receiver {

LeftoverSweep::LeftoverSweep(int root_fd, FailedFolder& failed, bool keep_partial,
                             LeftoverClaim claim, FolderId state)
    : root_fd_(root_fd),
      failed_(failed),
      keep_partial_(keep_partial),
      claim_(std::move(claim)),
      state_(state) {}

std::vector<Leftover> LeftoverSweep::run() { return run_below(root_fd_, ""); }

std::vector<Leftover> LeftoverSweep::run_below(int dir_fd, const std::string& rel) {
  std::vector<Leftover> out;
  sweep(dir_fd, rel, rel.empty() ? 0 : 1, &out);
  return out;
}

namespace {

// The ranges of [0, size) that hold data in `fd` (SEEK_DATA / SEEK_HOLE), as far as the file
// system tells: a file system without hole reporting shows all of it as data.
std::vector<std::pair<uint64_t, uint64_t>> data_ranges(int fd, uint64_t size) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  off_t pos = 0;
  while (static_cast<uint64_t>(pos) < size) {
    const off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0) break;  // ENXIO: no data past pos
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) hole = static_cast<off_t>(size);
    const uint64_t a = static_cast<uint64_t>(data);
    const uint64_t b = std::min<uint64_t>(static_cast<uint64_t>(hole), size);
    if (a >= size) break;
    if (b > a) out.emplace_back(a, b);
    pos = hole;
  }
  return out;
}

}  // namespace

Leftover LeftoverSweep::recover_one(int dir_fd, const std::string& rel, const std::string& name) {
  Leftover l;
  l.temp_path = rel + name;
  TempFile f;
  f.dir.reset(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  f.tmp_name = name;
  f.rel_path = l.temp_path;
  FailureRecord r;
  // ".ddft-<session>-<id>.part": the session and file id it belonged to.
  const std::string core =
      name.substr(kTempPrefix.size(), name.size() - kTempPrefix.size() - kTempSuffix.size());
  const size_t dash = core.find('-');
  if (dash != std::string::npos) {
    r.file.session = std::strtoull(core.substr(0, dash).c_str(), nullptr, 16);
    r.file.file_id =
        static_cast<uint32_t>(std::strtoul(core.substr(dash + 1).c_str(), nullptr, 10));
  }
  common::UniqueFd fd(
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd && ::fstat(fd.get(), &st) == 0) r.bytes_received = static_cast<uint64_t>(st.st_size);
  Origin o;
  r.missing_known = false;
  r.repairs_known = false;
  if (fd && read_origin_of(dir_fd, name, fd.get(), &o)) {
    l.named = true;
    r.file = o.file;
    f.rel_path = o.file.path;
    const auto present = data_ranges(fd.get(), o.file.size);
    uint64_t have = 0;
    uint64_t at = 0;
    for (const auto& [a, b] : present) {
      have += b - a;
      if (a > at) r.missing.emplace_back(at, a);
      at = b;
    }
    if (at < o.file.size) r.missing.emplace_back(at, o.file.size);
    r.missing_ranges_total = r.missing.size();
    r.bytes_received = have;
    std::string ranges;
    for (size_t i = 0; i < r.missing.size() && i < 5; ++i) {
      ranges += fmt::format("{}{}-{}", i ? ", " : "", r.missing[i].first, r.missing[i].second);
    }
    if (r.missing.size() > 5) ranges += fmt::format(" and {} more", r.missing.size() - 5);
    l.missing_text = ranges;
    r.reason =
        "the receiver stopped (crash, kill or power cut) while the file was being received; "
        "found at start-up";
    if (!o.sender.empty()) r.reason += fmt::format(" (sender {})", o.sender);
    const std::string side = sidecar_name(name);
    if (::faccessat(dir_fd, side.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) == 0) f.sidecar = side;
  } else {
    r.file.path = l.temp_path;
    r.reason =
        "left by an earlier run of the receiver, which stopped before the file was "
        "complete (found at start-up; its origin could not be read, so only its "
        "temporary name is known)";
  }
  l.file = r.file;
  l.bytes_present = r.bytes_received;
  // Whatever reached the page cache before the stop, unverified and maybe torn by a power cut:
  // removed unless the operator asked to keep it. A file without an origin keeps its data (as
  // before origins were written): it is all there is to tell what it was.
  r.discard_data = l.named && !keep_partial_;
  l.data_kept = !r.discard_data;
  // fail() takes the descriptor too, so that it can remove the origin from the data it keeps.
  f.fd = std::move(fd);
  l.record = failed_.fail(f, r, claim_ ? claim_(l, r) : std::string());
  return l;
}

void LeftoverSweep::sweep(int dir_fd, const std::string& rel, int depth,
                          std::vector<Leftover>* out) {
  constexpr int kMaxDepth = 128;
  if (depth > kMaxDepth) return;
  // A descriptor of our own for the listing: closedir() closes it.
  const int list_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return;
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return;
  }
  std::vector<std::string> temps;
  std::vector<std::string> sidecars;
  std::vector<std::string> scratches;
  std::vector<std::string> dirs;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (failed_.is(st.st_dev, st.st_ino)) continue;  // the failed folder
      if (state_.is(st.st_dev, st.st_ino)) continue;   // the state folder
      if (st.st_dev != failed_.dev()) continue;  // another file system mounted below: not ours
      dirs.push_back(name);
    } else if (S_ISREG(st.st_mode) && is_temp_name(name)) {
      temps.push_back(name);
    } else if (S_ISREG(st.st_mode) && name.starts_with(kTempPrefix) &&
               name.ends_with(kSidecarSuffix)) {
      sidecars.push_back(name);
    } else if (S_ISREG(st.st_mode) && name.starts_with(kTempPrefix) &&
               name.ends_with(kScratchSuffix) && name.size() > 20) {
      scratches.push_back(name);  // made, never named (its origin not yet on it): no data
    }
  }
  ::closedir(d);
  for (const std::string& name : temps) out->push_back(recover_one(dir_fd, rel, name));
  for (const std::string& name : scratches) ::unlinkat(dir_fd, name.c_str(), 0);
  // A sidecar whose file is gone (a crash between the rename or the move and its removal).
  for (const std::string& name : sidecars) {
    const std::string part =
        name.substr(0, name.size() - kSidecarSuffix.size()) + std::string(kTempSuffix);
    if (::faccessat(dir_fd, part.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
      ::unlinkat(dir_fd, name.c_str(), 0);
    }
  }
  for (const std::string& name : dirs) {
    common::UniqueFd sub(
        ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub) sweep(sub.get(), rel + name + "/", depth + 1, out);
  }
}

}  // namespace ddft::receiver
