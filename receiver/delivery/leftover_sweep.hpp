// The start-up sweep of the output folder for what an earlier run left behind (it stopped,
// crashed or lost power): each temporary file is recorded as failed in the failed folder, named
// from its origin with the bytes it held and the ranges missing as far as known (the holes of the
// file: data still in the receiver's memory when it stopped counts as missing), its data removed
// or, with `keep_partial`, kept there; scratch files (made, never named) and orphan sidecars are
// removed. Symlinks are not followed; the failed folder, the receiver's state folder and other
// file systems mounted below are skipped.
//
// Runs once, at start-up, on the calling thread. The folder descriptor and the failed folder are
// the caller's and must outlive it. A file it cannot read is recorded as far as it can tell;
// nothing is thrown.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/file_identity.hpp"
#include "receiver/delivery/failed_folder.hpp"
#include "receiver/delivery/state_dir.hpp"

namespace ddft::receiver {

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

// `claim`, when given, is called for each leftover before its record is written and its data
// removed, and returns the record's name (FailedFolder::record_name()'s form) once it has
// journaled the failure under it: a stop in between leaves the journal naming the record, and the
// next start writes that same record again instead of a second one.
using LeftoverClaim = std::function<std::string(const Leftover&, const FailureRecord&)>;

class LeftoverSweep {
 public:
  // Below the output folder `root_fd`, recording in `failed`, never entering the state folder
  // `state`. References must outlive this.
  LeftoverSweep(int root_fd, FailedFolder& failed, bool keep_partial, LeftoverClaim claim,
                FolderId state = {});
  LeftoverSweep(const LeftoverSweep&) = delete;
  LeftoverSweep& operator=(const LeftoverSweep&) = delete;

  // Sweeps the whole tree; the leftovers found, each recorded.
  std::vector<Leftover> run();
  // The same below folder `dir_fd`, whose files the receiver names `rel`... ("NAME/": a
  // channel's folder).
  std::vector<Leftover> run_below(int dir_fd, const std::string& rel);

 private:
  // Folder `dir_fd`, at `rel` ("" or "a/b/") below the output folder, `depth` deep.
  void sweep(int dir_fd, const std::string& rel, int depth, std::vector<Leftover>* out);
  // Temporary file `name` of folder `dir_fd`: its record written, its data removed or kept.
  Leftover recover_one(int dir_fd, const std::string& rel, const std::string& name);

  int root_fd_;
  FailedFolder& failed_;
  bool keep_partial_;
  LeftoverClaim claim_;
  FolderId state_;
};

}  // namespace ddft::receiver
