#include "receiver/delivery/failed_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "common/json.hpp"
#include "receiver/delivery/origin.hpp"
#include "receiver/delivery/state_dir.hpp"

namespace ddft::receiver {
using common::write_all;

void FailedFolder::open(const std::string& path, const std::string& root, int root_fd, int state_fd,
                        bool null_sink) {
  path_ = path;
  state_fd_ = state_fd;
  null_sink_ = null_sink;
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  fd_.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd_ || ::faccessat(fd_.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    throw std::runtime_error(fmt::format("failed-files folder '{}' cannot be used: {}", path,
                                         ec ? ec.message() : std::strerror(errno)));
  }
  struct stat rs {
  }, fst{};
  ::fstat(root_fd, &rs);
  ::fstat(fd_.get(), &fst);
  if (rs.st_dev != fst.st_dev) {
    throw std::runtime_error(fmt::format(
        "failed-files folder '{}' must be on the same file system as the output folder '{}'", path,
        root));
  }
  dev_ = fst.st_dev;
  ino_ = fst.st_ino;
  keep_record_reserve();
}

std::string FailedFolder::record_name(const FailureRecord& rec) const {
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

std::string FailedFolder::record_path(const std::string& name) const {
  return path_ + "/" + name + ".json";
}

std::string FailedFolder::record_name_at(const std::string& path) const {
  const std::string head = path_ + "/";
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

std::string FailedFolder::fail(TempFile& f, const FailureRecord& rec, std::string name) {
  if (name.empty()) name = record_name(rec);
  const std::string stamp = name.substr(0, 15);

  std::string data_path;
  f.direct_fd.reset();
  // The file leaves its folder first, its origin after: a crash in between must never leave a
  // temporary file that nobody can name (an orphan sidecar is removed at start-up).
  if (f.fd || !f.tmp_name.empty()) {
    if ((rec.discard_data || rec.no_record) && f.dir) {
      ::unlinkat(f.dir.get(), f.tmp_name.c_str(), 0);
    } else if (f.dir && ::renameat(f.dir.get(), f.tmp_name.c_str(), fd_.get(), name.c_str()) == 0) {
      data_path = path_ + "/" + name;
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
  if (rec.no_record || !fd_) return "";
  // Data an earlier attempt under this name moved here before it stopped: the record names it.
  struct stat moved {};
  if (data_path.empty() && ::fstatat(fd_.get(), name.c_str(), &moved, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISREG(moved.st_mode)) {
    data_path = path_ + "/" + name;
  }

  const std::string json = record_json(rec, data_path.empty() ? "" : name, stamp);

  // Whole or not at all: written beside, then renamed (a crash never leaves an empty record).
  const std::string json_name = name + ".json";
  const std::string tmp_name = json_name + ".tmp";
  auto write_record = [&] {
    common::UniqueFd jfd(::openat(fd_.get(), tmp_name.c_str(),
                                  O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (jfd && write_all(jfd.get(), json) &&
        ::renameat(fd_.get(), tmp_name.c_str(), fd_.get(), json_name.c_str()) == 0) {
      return 0;
    }
    const int err = errno;
    ::unlinkat(fd_.get(), tmp_name.c_str(), 0);
    return err;
  };
  int err = write_record();
  // A full disk: the space kept for records is given up for this one (and taken again once
  // the disk has room: keep_record_reserve()).
  if ((err == ENOSPC || err == EDQUOT) && release_record_reserve()) err = write_record();
  if (err != 0) return "";
  keep_record_reserve();
  return path_ + "/" + json_name;
}

bool FailedFolder::release_record_reserve() {
  std::lock_guard lock(reserve_mu_);
  return ::unlinkat(state_fd_, kRecordReserveName, 0) == 0;
}

void FailedFolder::keep_record_reserve() {
  if (null_sink_) return;
  std::lock_guard lock(reserve_mu_);
  struct stat st {};
  if (::fstatat(state_fd_, kRecordReserveName, &st, AT_SYMLINK_NOFOLLOW) == 0) return;
  common::UniqueFd fd(::openat(state_fd_, kRecordReserveName,
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  // Real blocks (not a sparse file): what a full disk still has for the failed files' records.
  if (::posix_fallocate(fd.get(), 0, kRecordReserveBytes) != 0) {
    ::unlinkat(state_fd_, kRecordReserveName, 0);
  }
}

bool FailedFolder::record_exists(const std::string& path) const {
  struct stat st {};
  return path.starts_with(path_ + "/") &&
         ::fstatat(fd_.get(), path.substr(path_.size() + 1).c_str(), &st, AT_SYMLINK_NOFOLLOW) ==
             0 &&
         S_ISREG(st.st_mode) && st.st_size > 0;
}

bool FailedFolder::resolve_record(const std::string& path, const std::string& note) const {
  if (!record_exists(path)) return false;
  const std::string name = path.substr(path_.size() + 1);
  if (name.find('/') != std::string::npos) return false;
  const common::UniqueFd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  std::string text = common::read_whole(fd.get());
  if (!text.starts_with("{\n") || text.find("\"resolved\":") != std::string::npos) return false;
  text.insert(2, "  \"resolved\": " + common::json_quote(note) + ",\n");
  return common::replace_file_at(fd_.get(), name, text);
}

void FailedFolder::remove_torn_records() {
  // A record a crash cut short was never renamed into place: its half is removed.
  if (const int list_fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      list_fd >= 0) {
    if (DIR* d = ::fdopendir(list_fd)) {
      std::vector<std::string> halves;
      while (const dirent* e = ::readdir(d)) {
        const std::string_view n = e->d_name;
        if (n.ends_with(".json.tmp")) halves.emplace_back(n);
      }
      ::closedir(d);
      for (const auto& n : halves) ::unlinkat(fd_.get(), n.c_str(), 0);
    } else {
      ::close(list_fd);
    }
  }
}

}  // namespace ddft::receiver
