// The receive side's output folder: where files are created under a temporary name, renamed into
// place once verified, or moved to the failed folder with a JSON record. Every path from the wire
// is checked, and folders are walked with openat(O_NOFOLLOW) from the output folder's descriptor,
// so nothing is ever written outside it, whatever symlinks are planted inside.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fd.hpp"

namespace ddft::receiver {

enum class CollisionPolicy { kRename, kOverwrite, kReject };

// Bounds on the paths a sender may announce (--max-path-length, --max-path-depth).
struct PathLimits {
  size_t max_length = 4096;  // bytes
  size_t max_depth = 64;     // components, the file name included
};

// Returns "" when `path` (relative, from the wire) is acceptable, else a one-line reason. Refused:
// empty, absolute, longer than the limit, deeper than the limit, a NUL or control character, an
// empty, "." or ".." component, a component over 255 bytes, or a name the receiver keeps for its
// own files (".ddft-" and on: temporary files, the session state, the folder lock).
std::string check_wire_path(std::string_view path, const PathLimits& limits = {});

// The receiver's own files in the output folder: the replay state (--key-file) and the lock.
inline constexpr const char* kStateFileName = ".ddft-session-state";
inline constexpr const char* kLockFileName = ".ddft-lock";

// The name an existing file is moved to under CollisionPolicy::kRename: "name.N.ext" ("a.tar.gz"
// -> "a.tar.N.gz", ".bashrc" -> ".bashrc.N", "README" -> "README.N").
std::string collision_name(std::string_view base, unsigned n);

// Temporary name of file `file_id` of session `session`: ".ddft-<session>-<id>.part".
std::string temp_name(uint64_t session, uint32_t file_id);
// True for names made by temp_name().
bool is_temp_name(std::string_view name);

// A file being received: its folder, its descriptor and names.
struct TempFile {
  common::UniqueFd dir;   // the folder that will hold the file
  common::UniqueFd fd;    // the open temporary file
  common::UniqueFd direct_fd;  // the same file opened O_DIRECT (--direct-io), or invalid
  std::string tmp_name;   // within dir
  std::string base_name;  // final name within dir
  std::string rel_path;   // as announced
};

struct FailureRecord {
  std::string rel_path;
  uint64_t session = 0;
  uint32_t file_id = 0;
  uint64_t expected_size = 0;
  uint64_t bytes_received = 0;
  std::vector<std::pair<uint64_t, uint64_t>> missing;  // [start, end) byte ranges, maybe cut
  uint64_t missing_ranges_total = 0;                   // before the cut
  std::string reason;
  std::string verify;        // "B2B", "SHA256", "NONE"
  std::string expected_key;  // hex digest from the sender, "" when unknown
  std::string computed_key;  // hex digest of what arrived, "" when not computed
  bool discard_data = false;  // remove the partial data instead of keeping it (disk full)
  bool no_record = false;     // remove the temporary file and write no record (flood bound)
};

// A temporary file an earlier run left behind, found at start-up.
struct Leftover {
  std::string rel_path;  // of the temporary file, below the output folder
  std::string record;    // where its failure record went ("" when it could not be written)
};

// Not thread-safe: the assembler thread owns it.
class OutputDir {
 public:
  // Opens `root` (must exist and be writable) and creates `failed_dir` (may be inside root; must
  // be on the same file system). Throws std::runtime_error with a one-line reason.
  // With `null_sink` (--sink null, for measuring) nothing is created or renamed: temporary files
  // are /dev/null, finalize() only closes, fail() writes the record only.
  OutputDir(const std::string& root, const std::string& failed_dir, CollisionPolicy policy,
            bool null_sink = false);

  // With direct IO on, create_temp() also opens each file O_DIRECT. Returns false (and direct IO
  // stays off) when the output folder's file system refuses O_DIRECT (tmpfs, for one).
  bool enable_direct_io();

  // Creates the folders of `rel_path` below root as needed and a new temporary file in the last
  // one. On failure returns false and sets *reason.
  bool create_temp(std::string_view rel_path, const std::string& tmp, TempFile* out,
                   std::string* reason);

  // Closes the file and renames it to its final name under the collision policy. `mode` and
  // `mtime_ns` come from the announce. On success sets *moved_old to where an existing file of the
  // same name went ("" when none). On failure returns false, sets *reason, and the temporary file
  // is still in place for fail().
  bool finalize(TempFile& f, uint32_t mode, int64_t mtime_ns, std::string* moved_old,
                std::string* reason);

  // Moves the temporary file (when there is one) to the failed folder and writes the record
  // beside it. Returns the record's path (for the log), or "" when even that failed.
  std::string fail(TempFile& f, const FailureRecord& rec);

  // Moves every temporary file left below the output folder by an earlier run (it stopped before
  // those files were complete) to the failed folder with a record saying so. Symlinks are not
  // followed; the failed folder is skipped.
  std::vector<Leftover> recover_leftovers();

  // Refuses announced paths beyond these limits (create_temp()).
  void set_path_limits(const PathLimits& limits) { limits_ = limits; }
  // check_wire_path() under this folder's limits.
  std::string check_path(std::string_view rel_path) const;

  // Takes the output folder for this process alone: a second receiver on the same folder would
  // move this one's temporary files away at its start-up. Throws std::runtime_error with a
  // one-line reason when another process holds it. The lock lasts as long as this object.
  void lock_exclusive();

  // The receiver's small state file in the output folder (kStateFileName). read_state() returns
  // nullopt when there is none, and throws std::runtime_error when it cannot be read.
  // write_state() replaces it atomically (a temporary file, fsync, rename); on failure it returns
  // false and sets *reason. Under --sink null nothing is written.
  std::optional<std::string> read_state() const;
  bool write_state(std::string_view text, std::string* reason);

  // Bytes an unprivileged writer may still use on the output folder's file system.
  uint64_t free_bytes() const;

  // Syncs the folder holding `f` (used after a rename under --write-mode rws).
  int sync_dir(const TempFile& f);

  const std::string& root() const { return root_; }
  const std::string& failed_dir() const { return failed_path_; }

 private:
  void sweep(int dir_fd, const std::string& rel, int depth, std::vector<Leftover>* out);
  bool open_parent(std::string_view rel_path, common::UniqueFd* dir, std::string* base,
                   std::string* reason);

  std::string root_;
  std::string failed_path_;
  CollisionPolicy policy_;
  bool null_sink_;
  bool direct_io_ = false;
  PathLimits limits_;
  common::UniqueFd root_fd_;
  common::UniqueFd lock_fd_;
  common::UniqueFd failed_fd_;
  dev_t failed_dev_ = 0;
  ino_t failed_ino_ = 0;
};

}  // namespace ddft::receiver
