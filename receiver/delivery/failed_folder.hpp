// The failed folder: where a file that failed goes with its JSON record (its data moved there, or
// removed), each record written whole (beside, then renamed) under a name that says when and
// which file; records marked resolved when a resend delivers the file; and a record reserve in
// the receiver's state folder (state_dir.hpp), given up on a full disk so that the file that
// failed for it is still recorded.
//
// The output folder (OutputDir) owns it. open() runs at start-up and throws std::runtime_error
// with one line; after it, fail() and the record calls run on the FsPool's threads, any number at
// once on different files (only the reserve is shared, under a lock), and report a failure by
// their result.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "common/protocol.hpp"
#include "receiver/delivery/file_repairs.hpp"
#include "receiver/delivery/own_files.hpp"

namespace ddft::receiver {

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

class FailedFolder {
 public:
  FailedFolder() = default;
  FailedFolder(const FailedFolder&) = delete;
  FailedFolder& operator=(const FailedFolder&) = delete;

  // Creates `path` as needed and opens it; it must be writable and on the file system of the
  // output folder `root` (open as `root_fd`). The state folder `state_fd` (on that file system)
  // holds the record reserve and must outlive this. With `null_sink` (--sink null) the data of
  // failed files is never kept and no reserve is made. Throws std::runtime_error with a one-line
  // reason. Not called: no failed folder (has_records() false, fail() writes nothing).
  void open(const std::string& path, const std::string& root, int root_fd, int state_fd,
            bool null_sink);

  // True when fail() writes records (the folder is open).
  bool has_records() const { return static_cast<bool>(fd_); }
  // The folder's descriptor (-1 when not open); lives as long as this object.
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  // Whether the folder of identity (`dev`, `ino`) is this one.
  bool is(dev_t dev, ino_t ino) const { return dev == dev_ && ino == ino_; }
  // The file system it is on (the output folder's).
  dev_t dev() const { return dev_; }

  // Moves the temporary file (when there is one) here and writes the record beside it (whole:
  // written beside and renamed), under `name` (record_name() when empty). Returns the record's
  // path (for the log), or "" when even that failed.
  [[nodiscard]] std::string fail(TempFile& f, const FailureRecord& rec, std::string name = "");
  // The name fail() gives the record of `rec` now ("<time>-<session>-<id>-<base>", no ".json"),
  // and the path of record `name`; record_exists(): a whole record is at that path.
  std::string record_name(const FailureRecord& rec) const;
  std::string record_path(const std::string& name) const;
  // The name of the record at `path` (record_path()'s inverse), "" when it is not one.
  std::string record_name_at(const std::string& path) const;
  bool record_exists(const std::string& path) const;
  // Marks the record at `path` resolved: its JSON gains a first member "resolved": `note`,
  // the file replaced whole. False (nothing changed) when it is not a record of this folder or
  // cannot be rewritten.
  [[nodiscard]] bool resolve_record(const std::string& path, const std::string& note) const;
  // Start-up: removes the halves of records a crash cut short (never renamed into place).
  void remove_torn_records();

 private:
  // The record reserve (kRecordReserveName): gives it up (true when there was one to give), or
  // makes it again when missing and the disk has room. Thread-safe.
  bool release_record_reserve();
  void keep_record_reserve();

  std::string path_;
  int state_fd_ = -1;
  bool null_sink_ = false;
  common::UniqueFd fd_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::mutex reserve_mu_;
};

}  // namespace ddft::receiver
