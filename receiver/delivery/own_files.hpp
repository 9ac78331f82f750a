// The receiver's own files beside the files it receives, and what each is called: the temporary
// file of a file being received (".ddft-<session>-<id>.part", made first under a scratch name,
// its origin in a sidecar ".ddft-<session>-<id>.meta" where the file system has no user xattrs).
// They stay in the file's own folder so that its rename into place is atomic; everything else the
// receiver keeps is in its state folder (state_dir.hpp). Every such name starts with ".ddft-",
// which no path from the wire may (check_wire_path()).
//
// Names are pure functions; any thread. A TempFile owns its descriptors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/fd.hpp"

namespace ddft::receiver {

inline constexpr std::string_view kTempPrefix = ".ddft-";
inline constexpr std::string_view kTempSuffix = ".part";
inline constexpr std::string_view kScratchSuffix = ".new";  // a temporary file before its origin
inline constexpr std::string_view kSidecarSuffix = ".meta";
// The longest name of one folder entry (NAME_MAX).
inline constexpr size_t kNameMax = 255;

// Temporary name of file `file_id` of session `session`: ".ddft-<session>-<id>.part".
std::string temp_name(uint64_t session, uint32_t file_id);
// True for names made by temp_name().
bool is_temp_name(std::string_view name);
// The sidecar's name for temporary file `tmp` (".ddft-<session>-<id>.part" ->
// ".ddft-<session>-<id>.meta"): the last kTempSuffix.size() bytes of `tmp` replaced.
std::string sidecar_name(const std::string& tmp);

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

}  // namespace ddft::receiver
