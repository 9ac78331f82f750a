// The names the hot folder (sender/source/hot_folder.hpp) keeps for itself, and the path helpers
// its units share: which names are reserved (the journal's, the private names sent files pass
// through), a file's identity from its stat, and a relative path's folder and last component.
//
// Pure functions and constants; any thread.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "sender/source/readiness.hpp"

namespace ddft::sender::hot_folder_paths {

// Names the hot folder leaves alone (the journal's among them).
inline constexpr std::string_view kReservedPrefix = ".ddft-";

inline bool reserved(std::string_view name) { return name.starts_with(kReservedPrefix); }
// The private names sent files pass through on their way out (finishing_name()).
inline constexpr std::string_view kFinishingPrefix = ".ddft-finishing-";
// The default journal's name in DIR; with --shard K/N it ends ".shard-K-of-N", and its kin
// (.tmp, .damaged) add to the name.
inline constexpr std::string_view kJournalName = ".ddft-watch-journal";

// A file's identity and version: device, inode, size and mtime from `st`.
inline FileIdentity identity_of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// The folder part of relative path `rel` ("" for a name in DIR) and its last component.
inline std::string parent_of(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}
inline std::string base_of(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

}  // namespace ddft::sender::hot_folder_paths
