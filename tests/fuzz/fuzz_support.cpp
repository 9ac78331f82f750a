#include "fuzz_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <system_error>
#include <vector>

#include "common/fd.hpp"
#include "common/protocol.hpp"

namespace ddft::fuzz {
namespace fs = std::filesystem;

void require(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: invariant broken: %.*s\n", static_cast<int>(what.size()),
               what.data());
  std::fflush(stderr);
  std::abort();
}

void fix_header(std::span<uint8_t> datagram) {
  using namespace common;
  require(datagram.size() >= kHeaderSize && datagram.size() - kHeaderSize <= 0xFFFF,
          "fix_header: not a datagram's size");
  uint8_t* p = datagram.data();
  poke_magic(p);
  poke_version(p, kProtocolVersion);
  poke_payload_len(p, static_cast<uint16_t>(datagram.size() - kHeaderSize));
  if (peek_flags(p) & kFlagAuth) {
    reseal_header(datagram);
  } else {
    reseal(datagram);
  }
}

void quiet_logs() {
  if (std::getenv("DDFT_FUZZ_LOG") != nullptr) return;  // keep the log, to read a reproducer's run
  auto logger =
      std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_st>());
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

std::string reference_path_verdict(std::string_view path, size_t max_length, size_t max_depth) {
  if (path.empty()) return "empty";
  if (path.size() > max_length) return "too long";
  if (path[0] == '/') return "absolute";
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) return "control character or NUL";
  }
  // Components are what lies between slashes; a leading, trailing or doubled slash makes an
  // empty one.
  std::vector<std::string_view> parts;
  size_t from = 0;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      parts.push_back(path.substr(from, i - from));
      from = i + 1;
    }
  }
  if (parts.size() > max_depth) return "too deep";
  for (const std::string_view part : parts) {
    if (part.empty() || part == "." || part == "..") return "empty, '.' or '..' component";
    if (part.size() > 255) return "component too long";
    // ".ddft" (the default state folder) and names from ".ddft-" on (temporary files) are the
    // receiver's own.
    if (part == ".ddft" || part.substr(0, 6) == ".ddft-") return "a receiver's own name";
  }
  return "";
}

namespace {

// Folders of one level of a walk still to visit.
struct Level {
  std::string rel;                // path of the folder below the walk's root, with a '/'
  std::vector<std::string> dirs;  // its sub-folders
  size_t next = 0;                // the next of them to enter
};

using EntryFn = std::function<void(const std::string& rel, const struct stat& st)>;

// Lists the folder open as `fd`: calls `on_entry` for each entry, records sub-folders in
// `level`, and with `remove` unlinks everything that is not a folder.
void scan(int fd, Level* level, const EntryFn& on_entry, bool remove) {
  const int list_fd = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  require(list_fd >= 0, "cannot list a folder of the sandbox");
  DIR* d = ::fdopendir(list_fd);
  require(d != nullptr, "cannot list a folder of the sandbox");
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  for (const std::string& name : names) {
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (on_entry) on_entry(level->rel + name, st);
    if (S_ISDIR(st.st_mode)) {
      level->dirs.push_back(name);
    } else if (remove) {
      require(::unlinkat(fd, name.c_str(), 0) == 0, "cannot remove a file of the sandbox");
    }
  }
}

// Visits every entry below the folder open as `root_fd` without following symlinks, parents
// first; with `remove`, deletes them all, children first. Holds one descriptor at a time: it
// goes down with openat(O_NOFOLLOW) and back up through "..", so any depth works.
void walk(int root_fd, const EntryFn& on_entry, bool remove) {
  common::UniqueFd cur(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  require(cur.valid(), "cannot open the sandbox");
  std::vector<Level> stack(1);
  scan(cur.get(), &stack.back(), on_entry, remove);
  while (true) {
    Level& top = stack.back();
    if (top.next < top.dirs.size()) {
      const std::string& name = top.dirs[top.next++];
      common::UniqueFd sub(
          ::openat(cur.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      require(sub.valid(), "cannot enter a folder of the sandbox: " + top.rel + name);
      cur = std::move(sub);
      Level next;
      next.rel = top.rel + name + "/";
      stack.push_back(std::move(next));
      scan(cur.get(), &stack.back(), on_entry, remove);
      continue;
    }
    stack.pop_back();
    if (stack.empty()) return;
    common::UniqueFd parent(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    require(parent.valid(), "cannot go back up a folder of the sandbox");
    cur = std::move(parent);
    if (remove) {
      const Level& up = stack.back();
      require(::unlinkat(cur.get(), up.dirs[up.next - 1].c_str(), AT_REMOVEDIR) == 0,
              "cannot remove a folder of the sandbox: " + up.rel + up.dirs[up.next - 1]);
    }
  }
}

void empty_folder(const fs::path& dir) {
  common::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  require(fd.valid(), "cannot open " + dir.string());
  walk(fd.get(), nullptr, true);
}

}  // namespace

Sandbox::Sandbox(const std::string& name) {
  base_ = fs::temp_directory_path() / ("ddft_fuzz_" + name + "_" + std::to_string(::getpid()));
  jail_ = base_ / "jail";
  out_ = jail_ / "out";
  outside_ = jail_ / "outside";
  fs::remove_all(base_);
  fs::create_directories(out_);
  fs::create_directories(outside_);
  struct stat st {};
  require(::stat(out_.c_str(), &st) == 0, "cannot stat " + out_.string());
  out_dev_ = st.st_dev;
  out_ino_ = st.st_ino;
  reset();
}

Sandbox::~Sandbox() {
  // What a deep path left below out/ is too deep for remove_all: empty it by descriptor first.
  std::error_code ec;
  if (fs::is_directory(out_, ec)) empty_folder(out_);
  fs::remove_all(base_, ec);
}

void Sandbox::reset() {
  empty_folder(out_);
  empty_folder(outside_);
  fs::create_symlink(outside_, out_ / "link");
  fs::create_symlink(outside_ / "planted", out_ / "flink");
  fs::create_directory(out_ / "dir");
  fs::create_symlink(outside_, out_ / "dir" / "link");
  std::ofstream(out_ / "exists") << "already here\n";
}

void Sandbox::verify() const {
  require(fs::is_empty(outside_), "a file appeared in the folder outside the output root");
  for (const auto& e : fs::directory_iterator(base_)) {
    require(e.path() == jail_,
            "a file appeared beside the output root's parent: " + e.path().filename().string());
  }
  for (const auto& e : fs::directory_iterator(jail_)) {
    require(e.path() == out_ || e.path() == outside_,
            "a file appeared beside the output root: " + e.path().filename().string());
  }
  struct stat st {};
  require(::lstat(out_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == out_dev_ &&
              st.st_ino == out_ino_,
          "the output root was replaced");
  common::UniqueFd fd(::open(out_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  require(fd.valid(), "cannot open the output root");
  walk(
      fd.get(),
      [](const std::string& rel, const struct stat& s) {
        if (S_ISLNK(s.st_mode)) {
          require(rel == "link" || rel == "flink" || rel == "dir/link",
                  "a symlink the test did not plant appeared: " + rel);
        } else {
          require(S_ISDIR(s.st_mode) || S_ISREG(s.st_mode),
                  "something neither a file nor a folder appeared: " + rel);
        }
      },
      false);
}

void Sandbox::verify_file(int dir_fd, const std::string& name, int fd,
                          std::string_view what) const {
  const std::string w(what);
  struct stat named {};
  require(::fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0,
          w + ": the file is not where it should be");
  require(S_ISREG(named.st_mode), w + ": not a regular file");
  if (fd >= 0) {
    struct stat opened {};
    require(
        ::fstat(fd, &opened) == 0 && opened.st_dev == named.st_dev && opened.st_ino == named.st_ino,
        w + ": the open descriptor is not the named file");
  }
  // Up through ".." until the output root (below it) or the file system's root (outside).
  common::UniqueFd cur(::dup(dir_fd));
  while (true) {
    struct stat here {};
    require(::fstat(cur.get(), &here) == 0, w + ": cannot stat a folder");
    if (here.st_dev == out_dev_ && here.st_ino == out_ino_) return;
    common::UniqueFd up(::openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat above {};
    require(up.valid() && ::fstat(up.get(), &above) == 0, w + ": cannot go up a folder");
    require(above.st_dev != here.st_dev || above.st_ino != here.st_ino,
            w + ": the file's real path is not below the output root");
    cur = std::move(up);
  }
}

}  // namespace ddft::fuzz
