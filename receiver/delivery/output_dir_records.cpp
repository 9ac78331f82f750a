// OutputDir's failure path: the record of a file that failed (its data moved to the failed folder
// or removed), the space kept for records on a full disk, and at start-up the records of the
// temporary files an earlier run left behind.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>

#include "common/json.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/delivery/output_dir_internal.hpp"

namespace ddft::receiver {
using common::write_all;
using namespace output_dir_detail;

std::string OutputDir::record_name(const FailureRecord& rec) const {
  // "<time>-<session>-<id>-<base name>", cut to fit NAME_MAX with room for ".json.tmp".
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string base = rec.file.path.substr(
      rec.file.path.rfind('/') == std::string::npos ? 0 : rec.file.path.rfind('/') + 1);
  for (char& c : base) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '_';
  }
  std::string name =
      fmt::format("{}-{:016x}-{}-{}", stamp, rec.file.session, rec.file.file_id, base);
  if (name.size() > kNameMax - 9) name.resize(kNameMax - 9);
  return name;
}

std::string OutputDir::record_path(const std::string& name) const {
  return failed_path_ + "/" + name + ".json";
}

std::string OutputDir::record_name_at(const std::string& path) const {
  const std::string head = failed_path_ + "/";
  constexpr std::string_view kTail = ".json";
  if (!path.starts_with(head) || !path.ends_with(kTail) ||
      path.size() <= head.size() + kTail.size()) {
    return "";
  }
  std::string name = path.substr(head.size(), path.size() - head.size() - kTail.size());
  return name.find('/') == std::string::npos ? name : "";
}

namespace {

// The JSON text of the record of `rec` (`data_file`: the name of its data in the failed folder,
// "" when none was kept; `stamp`: when it failed, "YYYYmmdd-HHMMSS").
std::string record_json(const FailureRecord& rec, const std::string& data_file,
                        const std::string& stamp) {
  std::string json = "{\n";
  json += fmt::format("  \"name\": {},\n", common::json_quote(rec.file.path));
  json += fmt::format("  \"session\": \"{:016x}\",\n  \"file_id\": {},\n", rec.file.session,
                      rec.file.file_id);
  if (rec.sender_id != 0) json += fmt::format("  \"sender\": \"{:016x}\",\n", rec.sender_id);
  json += fmt::format("  \"expected_size\": {},\n  \"bytes_received\": {},\n", rec.file.size,
                      rec.bytes_received);
  if (rec.repairs_known) {
    json += fmt::format("  \"fec_rebuilt\": {},\n  \"repeat_filled\": {},\n",
                        rec.repairs.fec_rebuilt, rec.repairs.repeat_filled);
  } else {
    json += "  \"fec_rebuilt\": null,\n  \"repeat_filled\": null,\n";
  }
  json += "  \"missing_ranges\": [";
  for (size_t i = 0; i < rec.missing.size(); ++i) {
    json += fmt::format("{}[{}, {}]", i ? ", " : "", rec.missing[i].first, rec.missing[i].second);
  }
  json += fmt::format("],\n  \"missing_ranges_total\": {},\n", rec.missing_ranges_total);
  json += fmt::format("  \"missing_ranges_exact\": {},\n", rec.missing_known ? "true" : "false");
  json += fmt::format("  \"reason\": {},\n", common::json_quote(rec.reason));
  if (rec.lane >= 0) json += fmt::format("  \"lane\": {},\n", rec.lane);
  if (rec.lane == common::kLaneAll) json += "  \"lane\": \"striped\",\n";
  json += fmt::format("  \"verify\": {},\n", common::json_quote(rec.file.verify_name()));
  json += fmt::format("  \"expected_key\": {},\n", common::json_quote(rec.file.digest));
  json += fmt::format("  \"computed_key\": {},\n", common::json_quote(rec.computed_key));
  json += fmt::format("  \"data_file\": {},\n", common::json_quote(data_file));
  json += fmt::format("  \"time\": \"{}\"\n}}\n", stamp);

  return json;
}

}  // namespace

std::string OutputDir::fail(TempFile& f, const FailureRecord& rec, std::string name) {
  if (name.empty()) name = record_name(rec);
  const std::string stamp = name.substr(0, 15);

  std::string data_path;
  f.direct_fd.reset();
  // The file leaves its folder first, its origin after: a crash in between must never leave a
  // temporary file that nobody can name (an orphan sidecar is removed at start-up).
  if (f.fd || !f.tmp_name.empty()) {
    if ((rec.discard_data || rec.no_record) && f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    } else if (f.dir &&
               ::renameat(f.dir.get(), f.tmp_name.c_str(), failed_fd_.get(), name.c_str()) == 0) {
      data_path = failed_path_ + "/" + name;
      // The record says it all now.
      if (f.fd && !null_sink_ && f.sidecar.empty()) ::fremovexattr(f.fd.get(), kOriginXattr);
    } else if (f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    }
    f.fd.reset();
  }
  if (!f.sidecar.empty() && f.dir) {
    ::unlinkat(f.dir.get(), f.sidecar.c_str(), 0);
    f.sidecar.clear();
  }

  // No failed folder (--sink null without --output): the caller's Error line is the record.
  if (rec.no_record || !failed_fd_) return "";
  // Data an earlier attempt under this name moved here before it stopped: the record names it.
  struct stat moved {};
  if (data_path.empty() &&
      ::fstatat(failed_fd_.get(), name.c_str(), &moved, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(moved.st_mode)) {
    data_path = failed_path_ + "/" + name;
  }

  const std::string json = record_json(rec, data_path.empty() ? "" : name, stamp);

  // Whole or not at all: written beside, then renamed (a crash never leaves an empty record).
  const std::string json_name = name + ".json";
  const std::string tmp_name = json_name + ".tmp";
  auto write_record = [&] {
    common::UniqueFd jfd(::openat(failed_fd_.get(), tmp_name.c_str(),
                                  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (jfd && write_all(jfd.get(), json) &&
        ::renameat(failed_fd_.get(), tmp_name.c_str(), failed_fd_.get(), json_name.c_str()) == 0) {
      return 0;
    }
    const int err = errno;
    ::unlinkat(failed_fd_.get(), tmp_name.c_str(), 0);
    return err;
  };
  int err = write_record();
  // A full disk: the space kept for records is given up for this one (and taken again once
  // the disk has room: keep_record_reserve()).
  if ((err == ENOSPC || err == EDQUOT) && release_record_reserve()) err = write_record();
  if (err != 0) return "";
  keep_record_reserve();
  return failed_path_ + "/" + json_name;
}

bool OutputDir::release_record_reserve() {
  std::lock_guard lock(reserve_mu_);
  return ::unlinkat(root_fd_.get(), kRecordReserveName, 0) == 0;
}

void OutputDir::keep_record_reserve() {
  if (null_sink_) return;
  std::lock_guard lock(reserve_mu_);
  struct stat st {};
  if (::fstatat(root_fd_.get(), kRecordReserveName, &st, AT_SYMLINK_NOFOLLOW) == 0) return;
  common::UniqueFd fd(::openat(root_fd_.get(), kRecordReserveName,
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  // Real blocks (not a sparse file): what a full disk still has for the failed files' records.
  if (::posix_fallocate(fd.get(), 0, kRecordReserveBytes) != 0) {
    ::unlinkat(root_fd_.get(), kRecordReserveName, 0);
  }
}

bool OutputDir::record_exists(const std::string& path) const {
  struct stat st {};
  return path.starts_with(failed_path_ + "/") &&
         ::fstatat(failed_fd_.get(), path.substr(failed_path_.size() + 1).c_str(), &st,
                   AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode) && st.st_size > 0;
}

bool OutputDir::resolve_record(const std::string& path, const std::string& note) const {
  if (!record_exists(path)) return false;
  const std::string name = path.substr(failed_path_.size() + 1);
  if (name.find('/') != std::string::npos) return false;
  const common::UniqueFd fd(
      ::openat(failed_fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  std::string text = common::read_whole(fd.get());
  if (!text.starts_with("{\n") || text.find("\"resolved\":") != std::string::npos) return false;
  text.insert(2, "  \"resolved\": " + common::json_quote(note) + ",\n");
  return common::replace_file_at(failed_fd_.get(), name, text);
}

std::vector<Leftover> OutputDir::recover_leftovers(bool keep_partial, const LeftoverClaim& claim) {
  std::vector<Leftover> out;
  if (null_sink_) return out;
  // A record a crash cut short was never renamed into place: its half is removed.
  if (const int list_fd = ::openat(failed_fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      list_fd >= 0) {
    if (DIR* d = ::fdopendir(list_fd)) {
      std::vector<std::string> halves;
      while (const dirent* e = ::readdir(d)) {
        const std::string_view n = e->d_name;
        if (n.ends_with(".json.tmp")) halves.emplace_back(n);
      }
      ::closedir(d);
      for (const auto& n : halves) ::unlinkat(failed_fd_.get(), n.c_str(), 0);
    } else {
      ::close(list_fd);
    }
  }
  sweep(root_fd_.get(), "", 0, keep_partial, claim, &out);
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

Leftover OutputDir::recover_one(int dir_fd, const std::string& rel, const std::string& name,
                                bool keep_partial, const LeftoverClaim& claim) {
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
  r.discard_data = l.named && !keep_partial;
  l.data_kept = !r.discard_data;
  // fail() takes the descriptor too, so that it can remove the origin from the data it keeps.
  f.fd = std::move(fd);
  l.record = fail(f, r, claim ? claim(l, r) : std::string());
  return l;
}

void OutputDir::sweep(int dir_fd, const std::string& rel, int depth, bool keep_partial,
                      const LeftoverClaim& claim, std::vector<Leftover>* out) {
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
      if (st.st_dev == failed_dev_ && st.st_ino == failed_ino_) continue;  // the failed folder
      if (st.st_dev != failed_dev_) continue;  // another file system mounted below: not ours
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
  for (const std::string& name : temps)
    out->push_back(recover_one(dir_fd, rel, name, keep_partial, claim));
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
    if (sub) sweep(sub.get(), rel + name + "/", depth + 1, keep_partial, claim, out);
  }
}

}  // namespace ddft::receiver
