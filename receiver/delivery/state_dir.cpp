#include "receiver/delivery/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/fd.hpp"
#include "common/protocol.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

std::string session_state_name(size_t lane) {
  return lane == 0 ? std::string(kSessionStateName)
                   : fmt::format("{}.lane{}", kSessionStateName, lane);
}

namespace {

// `dir`/`name`, without a doubled '/' when `dir` ends with one.
std::string join(std::string_view dir, std::string_view name) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return fmt::format("{}{}{}", dir, dir == "/" ? "" : "/", name);
}

// Lane k's replay state as earlier versions named it in the output folder.
std::string old_session_state_name(size_t lane) {
  return lane == 0 ? std::string(kOldSessionStateName)
                   : fmt::format("{}.lane{}", kOldSessionStateName, lane);
}

bool is_regular_at(int dir_fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

// Moves `name` of `from_fd` to `to_fd` as `to_name`, never replacing anything: when that name is
// taken, under the first free collision_name(to_name, n). Sets *used to the name it got; returns
// 0, or the errno of the rename that failed.
int move_keeping(int from_fd, const std::string& name, int to_fd, const std::string& to_name,
                 std::string* used) {
  for (unsigned n = 0; n < 100000; ++n) {
    *used = n == 0 ? to_name : collision_name(to_name, n);
    if (::renameat2(from_fd, name.c_str(), to_fd, used->c_str(), RENAME_NOREPLACE) == 0) return 0;
    if (errno != EEXIST) return errno;
  }
  return EEXIST;
}

// Moves the output folder's old entry `old_name` into the state folder as `new_name` (see
// move_old_state()). True when it moved.
bool move_one(const StatePlaces& w, const std::string& old_name, const std::string& new_name,
              MovedState* m) {
  // What a replace of the old file cut short left: the file itself is whole without it.
  ::unlinkat(w.output_fd, (old_name + ".new").c_str(), 0);
  if (!is_regular_at(w.output_fd, old_name)) return false;
  std::string used;
  if (const int err = move_keeping(w.output_fd, old_name, w.state_fd, new_name, &used); err != 0) {
    m->warnings.push_back(fmt::format("cannot move '{}' to '{}': {}", join(w.output, old_name),
                                      join(w.state, new_name), std::strerror(err)));
    return false;
  }
  if (used != new_name) {
    m->warnings.push_back(fmt::format(
        "'{}' and '{}' both exist: the second stays in use, the first was moved to '{}'",
        join(w.output, old_name), join(w.state, new_name), join(w.state, used)));
  }
  return true;
}

// The old record reserve: moved when the state folder has none, else removed (it holds nothing).
bool move_reserve(const StatePlaces& w, MovedState* m) {
  if (!is_regular_at(w.output_fd, kOldRecordReserveName)) return false;
  if (::renameat2(w.output_fd, kOldRecordReserveName, w.state_fd, kRecordReserveName,
                  RENAME_NOREPLACE) == 0 ||
      (errno == EEXIST && ::unlinkat(w.output_fd, kOldRecordReserveName, 0) == 0)) {
    return true;
  }
  m->warnings.push_back(fmt::format("cannot move '{}' to '{}': {}",
                                    join(w.output, kOldRecordReserveName),
                                    join(w.state, kRecordReserveName), std::strerror(errno)));
  return false;
}

// The old failed folder's entries into the failed folder in use, then the old folder removed.
void move_failed(const StatePlaces& w, MovedState* m) {
  struct stat st {};
  struct stat in_use {};
  if (w.failed_fd < 0 || ::fstatat(w.output_fd, kOldFailedDirName, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISDIR(st.st_mode) || ::fstat(w.failed_fd, &in_use) != 0 ||
      (st.st_dev == in_use.st_dev && st.st_ino == in_use.st_ino)) {
    return;
  }
  const std::string old_dir = join(w.output, kOldFailedDirName);
  const common::UniqueFd from(
      ::openat(w.output_fd, kOldFailedDirName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const int list_fd = from ? ::openat(from.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  DIR* d = list_fd >= 0 ? ::fdopendir(list_fd) : nullptr;
  if (d == nullptr) {
    if (list_fd >= 0) ::close(list_fd);
    m->warnings.push_back(fmt::format("cannot read '{}': {}", old_dir, std::strerror(errno)));
    return;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  ::closedir(d);
  m->failed_folder = true;
  for (const std::string& name : names) {
    std::string used;
    if (const int err = move_keeping(from.get(), name, w.failed_fd, name, &used); err != 0) {
      m->warnings.push_back(fmt::format("cannot move '{}/{}' to the failed folder: {}", old_dir,
                                        name, std::strerror(err)));
      continue;
    }
    if (name.ends_with(".json")) ++m->records;
    if (used != name) {
      m->warnings.push_back(
          fmt::format("'{}/{}': the failed folder has an entry of that name; moved there as '{}'",
                      old_dir, name, used));
    }
  }
  if (::unlinkat(w.output_fd, kOldFailedDirName, AT_REMOVEDIR) != 0) {
    m->warnings.push_back(fmt::format("'{}' is left in place: {}", old_dir, std::strerror(errno)));
  }
}

}  // namespace

std::string default_state_dir(std::string_view output) { return join(output, kStateDirName); }

std::string default_failed_dir(std::string_view state_dir) {
  return join(state_dir, kFailedDirName);
}

common::UniqueFd open_state_dir(const std::string& path, int output_fd, const std::string& output,
                                FolderId* id) {
  std::string_view trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  if (::mkdir(path.c_str(), kStateDirMode) == 0) {
    // Its entry is durable before anything is kept in it.
    const std::string parent = std::filesystem::path(trimmed).parent_path().string();
    const common::UniqueFd p(
        ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (p) ::fsync(p.get());
  } else if (errno != EEXIST) {
    const int err = errno;
    throw std::runtime_error(fmt::format("state folder '{}' cannot be made: {}{}", path,
                                         std::strerror(err),
                                         err == ENOENT ? " (its parent folder must exist)" : ""));
  }
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  struct stat out {};
  if (!fd || ::faccessat(fd.get(), ".", W_OK | X_OK, AT_EACCESS) != 0 ||
      ::fstat(fd.get(), &st) != 0 || ::fstat(output_fd, &out) != 0) {
    throw std::runtime_error(
        fmt::format("state folder '{}' cannot be used: {}", path, std::strerror(errno)));
  }
  if (st.st_dev != out.st_dev) {
    throw std::runtime_error(fmt::format(
        "state folder '{}' is not on the file system of the output folder '{}'", path, output));
  }
  if (st.st_ino == out.st_ino) {
    throw std::runtime_error(fmt::format(
        "state folder '{}' is the output folder itself: it needs a folder of its own", path));
  }
  *id = FolderId{st.st_dev, st.st_ino};
  return fd;
}

MovedState move_old_state(const StatePlaces& where) {
  MovedState m;
  m.journal = move_one(where, kOldJournalName, kJournalName, &m);
  for (size_t lane = 0; lane < common::kMaxLanes; ++lane) {
    m.session_states +=
        move_one(where, old_session_state_name(lane), session_state_name(lane), &m) ? 1 : 0;
  }
  m.reserve = move_reserve(where, &m);
  move_failed(where, &m);
  if (m.any()) {
    // Durable before the state is used in its new place: both ends of every rename.
    if (where.failed_fd >= 0 && m.failed_folder) ::fsync(where.failed_fd);
    ::fsync(where.state_fd);
    ::fsync(where.output_fd);
  }
  return m;
}

std::string MovedState::describe(std::string_view output, std::string_view state) const {
  std::string what;
  auto add = [&what](const std::string& item) { what += (what.empty() ? "" : ", ") + item; };
  if (journal) add("journal");
  if (session_states == 1) add("session state");
  if (session_states > 1) add(fmt::format("session state of {} lanes", session_states));
  if (failed_folder) {
    add(records == 1   ? std::string("1 failed record")
        : records == 0 ? std::string("the empty failed folder")
                       : fmt::format("{} failed records", records));
  }
  if (reserve) add("record reserve");
  return fmt::format("moved the receiver's state ({}) from {} to {}", what, output, state);
}

}  // namespace ddft::receiver
