// The receive side's output folder: where files are created under a temporary name, renamed into
// place once verified, or moved to the failed folder with a JSON record. Every path from the wire
// is checked, and folders are walked with openat(O_NOFOLLOW) from the output folder's descriptor,
// so nothing is ever written outside it, whatever symlinks are planted inside.
//
// The writer thread owns it; the FsPool's threads run its per-file calls, any number at once on
// different files (they only read its settings). The constructor and lock_exclusive() throw
// std::runtime_error with one line (start-up: a folder it cannot use or lock); the per-file
// calls report a failure by their result, with a reason.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "common/protocol.hpp"
#include "receiver/delivery/file_repairs.hpp"

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
// keeps for its own files (".ddft-" and on: temporary files, the session state, the folder lock).
[[nodiscard]] std::optional<std::string> check_wire_path(std::string_view path,
                                                         const PathLimits& limits = {});

// The receiver's own files in the output folder: the replay state (--key-file) and the lock.
inline constexpr const char* kStateFileName = ".ddft-session-state";
// Lane k's replay state (--key-file): kStateFileName for lane 0 (the name a receiver of one lane
// uses), else kStateFileName + ".laneK".
std::string state_file_name(size_t lane);
inline constexpr const char* kLockFileName = ".ddft-lock";
// Space kept in the output folder (the failed folder's file system) for failure records, given up
// when the disk is full so that the file that failed for it is still recorded.
inline constexpr const char* kRecordReserveName = ".ddft-record-reserve";
inline constexpr off_t kRecordReserveBytes = 256 * 1024;

// The name an existing file is moved to under CollisionPolicy::kRename: "name.N.ext" ("a.tar.gz"
// -> "a.tar.N.gz", ".bashrc" -> ".bashrc.N", "README" -> "README.N").
std::string collision_name(std::string_view base, unsigned n);

// Temporary name of file `file_id` of session `session`: ".ddft-<session>-<id>.part".
std::string temp_name(uint64_t session, uint32_t file_id);
// True for names made by temp_name().
bool is_temp_name(std::string_view name);

// What the receiver writes beside a file as soon as it is announced, so that a file left behind
// by a crash or a power cut can still be named at the next start: the announce, the sender
// session, where it came from and when.
struct Origin {
  common::FileIdentity file;  // as announced (no digest: the end has not come)
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint32_t chunk_size = 0;
  std::string sender;        // the sender's address ("127.0.0.1:40000", the device path), may be ""
  int64_t announced_ns = 0;  // wall clock (ns since the epoch) of the announce
};
// The origin as text (one "key=value" line each; a wire path holds no control character), and
// back. parse_origin() returns false for text that is not an origin.
std::string format_origin(const Origin& o);
[[nodiscard]] bool parse_origin(std::string_view text, Origin* out);
// The extended attribute that holds the origin, and the suffix of the sidecar file that holds it
// where the file system has no user extended attributes (".ddft-<session>-<id>.meta").
inline constexpr const char* kOriginXattr = "user.ddft.origin";
inline constexpr std::string_view kSidecarSuffix = ".meta";

// A file being received: its folder, its descriptor and names.
struct TempFile {
  common::UniqueFd dir;        // the folder that will hold the file
  common::UniqueFd fd;         // the open temporary file
  common::UniqueFd direct_fd;  // the same file opened O_DIRECT (--direct-io), or invalid
  std::string tmp_name;        // within dir; after the rename into place, the final name
  std::string base_name;       // final name within dir
  std::string rel_path;        // as announced
  std::string sidecar;         // the origin's sidecar within dir, "" when it went into an xattr
  bool renamed = false;        // renamed into place (tmp_name is then the final name)
  // The folder's identity, to sync each folder once per batch.
  uint64_t dir_dev = 0;
  uint64_t dir_ino = 0;
};

struct FailureRecord {
  common::FileIdentity file;  // the size and digest the sender announced
  uint64_t sender_id = 0;     // the sender's id (kSenderInfo); 0: not known (no "sender" member)
  uint64_t bytes_received = 0;
  std::vector<std::pair<uint64_t, uint64_t>> missing;  // [start, end) byte ranges, maybe cut
  uint64_t missing_ranges_total = 0;                   // before the cut
  std::string reason;
  std::string computed_key;   // hex digest of what arrived, "" when not computed
  bool discard_data = false;  // remove the partial data instead of keeping it (disk full)
  bool no_record = false;     // remove the temporary file and write no record (flood bound)
  bool missing_known = true;  // false: the missing ranges are "as far as known" (a leftover)
  // What FEC and later copies filled in before it failed (receiver/delivery/file_repairs.hpp).
  // repairs_known false (a leftover: no one counted them) writes them as null.
  FileRepairs repairs;
  bool repairs_known = true;
  // With several lanes: the lane that carried the file (kLaneAll: striped over every lane);
  // kLaneUnsaid (one lane) writes no "lane" field.
  int lane = common::kLaneUnsaid;
};

// A temporary file an earlier run left behind, found at start-up.
struct Leftover {
  // Its origin's, when found; else the path is the temporary file's and session and file id
  // those its name holds.
  common::FileIdentity file;
  std::string temp_path;       // the temporary file, below the output folder
  bool named = false;          // its origin was found: the identity is the sender's
  uint64_t bytes_present = 0;  // bytes of data the file held
  std::string missing_text;    // "bytes 0-1048576, 2097152-3000000" (as far as known)
  std::string record;          // where its failure record went ("" when it could not be written)
  bool data_kept = false;      // --keep-partial: the data went to the failed folder
};

// Outcome of flushing a batch of files (flush_files()): 0, or the errno of that file's flush.
using FlushErrors = std::vector<int>;

// The assembler thread owns it; the file-system pool runs the per-file calls (create_temp,
// set_times, rename_into_place, flush_files, forget_origin, fail) for it, any number at once on
// different files: they only read the object's settings.
class OutputDir {
 public:
  // Opens `root` (must exist and be writable) and creates `failed_dir` (may be inside root; must
  // be on the same file system). Throws std::runtime_error with a one-line reason.
  // With `null_sink` (--sink null, for measuring) nothing is created or renamed: temporary files
  // are /dev/null, finalize() only closes, fail() writes the record only. `root` may then be ""
  // (no --output): no folder is opened, read_state() finds nothing (the replay state lives in
  // memory only), fail() writes no record and has_records() is false (the Error line is the
  // only record).
  OutputDir(const std::string& root, const std::string& failed_dir, CollisionPolicy policy,
            bool null_sink = false);

  // True when fail() writes records (there is a failed folder): false only for --sink null
  // without an output folder.
  bool has_records() const { return static_cast<bool>(failed_fd_); }

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

  // Moves the temporary file (when there is one) to the failed folder and writes the record
  // beside it (whole: written beside and renamed), under `name` (record_name() when empty).
  // Returns the record's path (for the log), or "" when even that failed.
  [[nodiscard]] std::string fail(TempFile& f, const FailureRecord& rec, std::string name = "");
  // The name fail() gives the record of `rec` now ("<time>-<session>-<id>-<base>", no ".json"),
  // and the path of record `name`; record_exists(): a whole record is at that path.
  std::string record_name(const FailureRecord& rec) const;
  std::string record_path(const std::string& name) const;
  // The name of the record at `path` (record_path()'s inverse), "" when it is not one.
  std::string record_name_at(const std::string& path) const;
  bool record_exists(const std::string& path) const;
  // Marks the record at `path` resolved: its JSON gains a first member "resolved": `note`,
  // the file replaced whole. False (nothing changed) when it is not a record of the failed
  // folder or cannot be rewritten.
  [[nodiscard]] bool resolve_record(const std::string& path, const std::string& note) const;

  // Records a failure for every temporary file left below the output folder by an earlier run
  // (it stopped, crashed or lost power before those files were complete), named from its origin
  // with the bytes it held and the ranges missing as far as known (the holes of the file: data
  // still in the receiver's memory when it stopped counts as missing). The data is removed, or
  // moved to the failed folder with `keep_partial`. Orphan sidecars are removed. Symlinks are not
  // followed; the failed folder is skipped.
  //
  // `claim`, when given, is called for each leftover before its record is written and its data
  // removed, and returns the record's name (record_name()'s form) once it has journaled the
  // failure under it: a stop in between leaves the journal naming the record, and the next start
  // writes that same record again instead of a second one.
  using LeftoverClaim = std::function<std::string(const Leftover&, const FailureRecord&)>;
  std::vector<Leftover> recover_leftovers(bool keep_partial = false,
                                          const LeftoverClaim& claim = {});

  // Refuses announced paths beyond these limits (create_temp()).
  void set_path_limits(const PathLimits& limits) { limits_ = limits; }
  // check_wire_path() under this folder's limits: why `rel_path` is refused, or nullopt.
  [[nodiscard]] std::optional<std::string> check_path(std::string_view rel_path) const;

  // Takes the output folder for this process alone: a second receiver on the same folder would
  // move this one's temporary files away at its start-up. Throws std::runtime_error with a
  // one-line reason when another process holds it. The lock lasts as long as this object.
  void lock_exclusive();

  // The receiver's small state files in the output folder (`name`: state_file_name()).
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
  // The output folder's descriptor; lives as long as this object.
  int root_fd() const { return root_fd_.get(); }
  const std::string& failed_dir() const { return failed_path_; }

 private:
  void sweep(int dir_fd, const std::string& rel, int depth, bool keep_partial,
             const LeftoverClaim& claim, std::vector<Leftover>* out);
  Leftover recover_one(int dir_fd, const std::string& rel, const std::string& name,
                       bool keep_partial, const LeftoverClaim& claim);
  // Opens the folder that holds `rel_path` (creating the missing ones with `create`, noting in
  // *made_in the folders new ones were made in) and sets *base to the last component. False,
  // with *why set, when a folder cannot be made or opened or the path leads where it must not.
  [[nodiscard]] bool open_parent(std::string_view rel_path, common::UniqueFd* dir,
                                 std::string* base, std::string* why,
                                 std::vector<common::UniqueFd>* made_in = nullptr,
                                 bool create = true);

  std::string root_;
  std::string failed_path_;
  CollisionPolicy policy_;
  bool null_sink_;
  bool direct_io_ = false;
  PathLimits limits_;
  common::UniqueFd root_fd_;
  common::UniqueFd lock_fd_;
  common::UniqueFd failed_fd_;
  // The record reserve (kRecordReserveName): gives it up (true when there was one to give), or
  // makes it again when missing and the disk has room. Thread-safe.
  bool release_record_reserve();
  void keep_record_reserve();
  std::mutex reserve_mu_;
  std::mutex new_parents_mu_;
  std::vector<common::UniqueFd> new_parents_;  // guarded by new_parents_mu_
  dev_t failed_dev_ = 0;
  ino_t failed_ino_ = 0;
};

}  // namespace ddft::receiver
