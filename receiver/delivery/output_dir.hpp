// The receive side's output folder: where files are created under a temporary name (their origin
// beside them: receiver/delivery/origin.hpp), renamed into place once verified, or moved to the
// failed folder with a JSON record (its FailedFolder). Every path from the wire is checked, and
// folders are walked with openat(O_NOFOLLOW) from the output folder's descriptor, so nothing is
// ever written outside it, whatever symlinks are planted inside, nor into the receiver's state
// folder or the failed folder. At start-up it opens the state folder (receiver/delivery/
// state_dir.hpp) and moves there what earlier versions kept in the output folder, sweeps what an
// earlier run left behind (LeftoverSweep) and holds the folder lock; it keeps the replay state.
//
// The writer thread owns it; the FsPool's threads run its per-file calls, any number at once on
// different files (they only read its settings). The constructor and lock_exclusive() throw
// std::runtime_error with one line (start-up: a folder it cannot use or lock); the per-file
// calls report a failure by their result, with a reason.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "common/protocol.hpp"
#include "receiver/delivery/failed_folder.hpp"
#include "receiver/delivery/leftover_sweep.hpp"
#include "receiver/delivery/origin.hpp"
#include "receiver/delivery/own_files.hpp"
#include "receiver/delivery/state_dir.hpp"

namespace ddft::receiver {

enum class CollisionPolicy { kRename, kOverwrite, kReject };

// Bounds on the paths a sender may announce (--max-path-length, --max-path-depth).
struct PathLimits {
  size_t max_length = 4096;  // bytes
  size_t max_depth = 64;     // components, the file name included
};

// Why `path` (relative, from the wire) is refused, on one line; nullopt when it is acceptable.
// Refused: empty, absolute, longer than the limit, deeper than the limit, a NUL or control
// character, an empty, "." or ".." component, a component over 255 bytes, or a name the receiver
// keeps for its own files (".ddft", the default state folder, and ".ddft-" and on: temporary
// files and their sidecars).
[[nodiscard]] std::optional<std::string> check_wire_path(std::string_view path,
                                                         const PathLimits& limits = {});

// The name an existing file is moved to under CollisionPolicy::kRename: "name.N.ext" ("a.tar.gz"
// -> "a.tar.N.gz", ".bashrc" -> ".bashrc.N", "README" -> "README.N").
std::string collision_name(std::string_view base, unsigned n);

// Outcome of flushing a batch of files (flush_files()): 0, or the errno of that file's flush.
using FlushErrors = std::vector<int>;

// The assembler thread owns it; the file-system pool runs the per-file calls (create_temp,
// set_times, rename_into_place, flush_files, forget_origin, fail) for it, any number at once on
// different files: they only read the object's settings.
class OutputDir {
 public:
  // Opens `root` (must exist and be writable), opens the state folder `state_dir` (default
  // root/.ddft; open_state_dir() makes it and says what it must be) and creates `failed_dir`
  // (may be inside root; must be on the same file system). Throws std::runtime_error with a
  // one-line reason.
  // With `null_sink` (--sink null, for measuring) nothing is created or renamed: temporary files
  // are /dev/null, finalize() only closes, fail() writes the record only. `root` may then be ""
  // (no --output): no folder is opened, read_state() finds nothing (the replay state lives in
  // memory only), fail() writes no record and has_records() is false (the Error line is the
  // only record).
  OutputDir(const std::string& root, const std::string& failed_dir, CollisionPolicy policy,
            bool null_sink = false, const std::string& state_dir = "");

  // Start-up, once the folder is locked and before the journal, the replay state or the failed
  // folder are used: moves into the state folder what earlier versions kept in the output folder
  // (receiver/delivery/state_dir.hpp, move_old_state()); the old failed folder only when the
  // failed folder is the default one. Nothing without an output folder.
  MovedState move_old_state();

  // True when fail() writes records (there is a failed folder): false only for --sink null
  // without an output folder.
  bool has_records() const { return failed_.has_records(); }

  // With direct IO on, create_temp() also opens each file O_DIRECT. Returns false (and direct IO
  // stays off) when the output folder's file system refuses O_DIRECT (tmpfs, for one).
  [[nodiscard]] bool enable_direct_io();

  // Creates the folders of `rel_path` below root as needed and a new temporary file in the last
  // one. With `origin`, writes it beside the file (the xattr kOriginXattr, or a sidecar where the
  // file system has no user xattrs) before returning, so that a crash from then on leaves a file
  // that can be named. On failure returns false and sets *why (nothing is left behind).
  // Thread-safe against other create_temp(), set_times(), rename_into_place(), flush_files() and
  // fail() calls on other files (the pool runs them at once).
  [[nodiscard]] bool create_temp(std::string_view rel_path, const std::string& tmp, TempFile* out,
                                 std::string* why, const Origin* origin = nullptr);

  // Closes the file and renames it to its final name under the collision policy. `mode` and
  // `mtime_ns` come from the announce. On success sets *moved_old to where an existing file of the
  // same name went ("" when none). On failure returns false, sets *why, and the temporary file
  // is still in place for fail(). set_times() then rename_into_place(), for callers that flush in
  // between.
  [[nodiscard]] bool finalize(TempFile& f, uint32_t mode, int64_t mtime_ns, std::string* moved_old,
                              std::string* why);
  // Applies the announced permission bits (set-id and sticky bits never) and mtime (when >= 0).
  void set_times(TempFile& f, uint32_t mode, int64_t mtime_ns);
  // The rename of finalize(), alone. Keeps f.fd open (a failed folder sync may still have to move
  // the file away); sets f.renamed and f.tmp_name to the final name. On failure returns false and
  // sets *why.
  [[nodiscard]] bool rename_into_place(TempFile& f, std::string* moved_old, std::string* why);
  // Makes the data (and, with `datasync` false, all metadata) of `files` durable: fdatasync or
  // fsync for one file; for several, one syncfs() of the output file system covers them all (one
  // journal commit and one cache flush instead of one each), and only when it reports an error is
  // each file flushed on its own to learn which one failed. Returns an errno per file.
  FlushErrors flush_files(const std::vector<TempFile*>& files, bool datasync);
  // Removes the origin (xattr or sidecar) of a file delivered under its final name. Best effort.
  void forget_origin(TempFile& f);
  // The folders in which create_temp() made new folders since the last call (descriptors the
  // caller now owns): their entries must be synced before any file made after them counts as
  // durable, whichever file finishes first. Thread-safe.
  std::vector<common::UniqueFd> take_new_folder_parents();
  // At start-up, for a file the journal says was being renamed into place when the receiver
  // stopped: *finished is true when `file.path` is that very file (regular, `file.size` bytes,
  // its origin still naming its session and file id); it is then synced with its folder and its
  // origin removed. *finished is false when it is not there or not ours. Returns false, with
  // *why set, when it is ours but a sync failed (it is not finished).
  [[nodiscard]] bool finish_renamed(const common::FileIdentity& file, bool* finished,
                                    std::string* why);

  // The failed folder's (receiver/delivery/failed_folder.hpp): the record of a failed file, with
  // its data moved there or removed; the records' names and paths; a record marked resolved.
  [[nodiscard]] std::string fail(TempFile& f, const FailureRecord& rec, std::string name = "") {
    return failed_.fail(f, rec, std::move(name));
  }
  std::string record_name(const FailureRecord& rec) const { return failed_.record_name(rec); }
  std::string record_path(const std::string& name) const { return failed_.record_path(name); }
  std::string record_name_at(const std::string& path) const { return failed_.record_name_at(path); }
  bool record_exists(const std::string& path) const { return failed_.record_exists(path); }
  [[nodiscard]] bool resolve_record(const std::string& path, const std::string& note) const {
    return failed_.resolve_record(path, note);
  }

  // Records a failure for every temporary file left below the output folder by an earlier run
  // (receiver/delivery/leftover_sweep.hpp), after removing the halves of records a crash cut
  // short; nothing under --sink null.
  using LeftoverClaim = receiver::LeftoverClaim;
  std::vector<Leftover> recover_leftovers(bool keep_partial = false,
                                          const LeftoverClaim& claim = {});

  // Files whose path begins with channel `name` ("NAME/...", the sender's --channel NAME) land
  // below `path` instead of root/NAME/ (--channel-dir NAME=PATH): an existing writable folder
  // on the output folder's file system (so that a failed file moves to the failed folder and one
  // syncfs() covers both), neither inside the output folder nor holding it, nor another
  // channel's, nor the failed or the state folder. Before recover_leftovers(), which sweeps it too.
  // Throws std::runtime_error with one line.
  void map_channel(const std::string& name, const std::string& path);

  // Refuses announced paths beyond these limits (create_temp()).
  void set_path_limits(const PathLimits& limits) { limits_ = limits; }
  // check_wire_path() under this folder's limits: why `rel_path` is refused, or nullopt.
  [[nodiscard]] std::optional<std::string> check_path(std::string_view rel_path) const;

  // Takes the output folder for this process alone: a second receiver on the same folder would
  // move this one's temporary files away at its start-up. Throws std::runtime_error with a
  // one-line reason when another process holds it. The lock lasts as long as this object.
  void lock_exclusive();

  // The receiver's small state files in its state folder (`name`: session_state_name(), or any
  // other name state_dir.hpp lists).
  // read_state() sets *text to the file's content, or to nullopt when there is none; it returns
  // false, with *why set ("session state 'PATH' cannot be read: ..."), when the file is there but
  // cannot be read or is not a regular file. write_state() replaces it atomically (a temporary
  // file, fsync, rename); on failure it returns false and sets *why. Under --sink null nothing
  // is written.
  [[nodiscard]] bool read_state(const std::string& name, std::optional<std::string>* text,
                                std::string* why) const;
  [[nodiscard]] bool write_state(const std::string& name, std::string_view text, std::string* why);

  // Bytes an unprivileged writer may still use on the output folder's file system, less a
  // record reserve's worth (kept for failure records).
  uint64_t free_bytes() const;
  // The output folder's file system as df shows it: what an unprivileged writer may still use
  // (no reserve deducted) and its size, in bytes. nullopt under --sink null or when statvfs
  // fails. One fstatvfs(2): thread-safe, for the metrics (never the hot path).
  struct Space {
    uint64_t free_bytes = 0;
    uint64_t size_bytes = 0;
  };
  [[nodiscard]] std::optional<Space> space() const;

  const std::string& root() const { return root_; }
  // Where the file the receiver names `rel_path` lands: root/rel_path, or below its channel's
  // folder (map_channel()).
  std::string final_path(std::string_view rel_path) const;
  // The output folder's descriptor; lives as long as this object.
  int root_fd() const { return root_fd_.get(); }
  const std::string& failed_dir() const { return failed_.path(); }
  // The state folder's path and descriptor ("" and -1 without an output folder); the descriptor
  // lives as long as this object.
  const std::string& state_dir() const { return state_path_; }
  int state_fd() const { return state_fd_.get(); }

 private:
  // Opens the folder that holds `rel_path` (creating the missing ones with `create`, noting in
  // *made_in the folders new ones were made in) and sets *base to the last component. False,
  // with *why set, when a folder cannot be made or opened or the path leads where it must not.
  [[nodiscard]] bool open_parent(std::string_view rel_path, common::UniqueFd* dir,
                                 std::string* base, std::string* why,
                                 std::vector<common::UniqueFd>* made_in = nullptr,
                                 bool create = true);

  // True, with *why set, when the folder of `st` is the failed folder or the state folder: no
  // path from the wire may lead there.
  bool refuse_own_folder(const struct stat& st, std::string* why) const;

  // A channel's folder (map_channel()).
  struct ChannelDir {
    std::string path;
    common::UniqueFd fd;
  };
  // The folder `rel_path` is below (root, or its channel's folder) and where the rest starts.
  int base_of(std::string_view rel_path, size_t* start) const;

  std::string root_;
  std::map<std::string, ChannelDir, std::less<>> channel_dirs_;
  CollisionPolicy policy_;
  bool null_sink_;
  bool direct_io_ = false;
  PathLimits limits_;
  common::UniqueFd root_fd_;
  common::UniqueFd lock_fd_;
  std::string state_path_;
  common::UniqueFd state_fd_;
  FolderId state_id_;
  FailedFolder failed_;
  std::mutex new_parents_mu_;
  std::vector<common::UniqueFd> new_parents_;  // guarded by new_parents_mu_
};

}  // namespace ddft::receiver
