// Private to HotFolder's implementation (sender/source/hot_folder*.cpp): what its parts share.
// Nothing else includes this. Called under HotFolder's mutex; the helpers are pure.
#pragma once

#include <sys/inotify.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "sender/source/hot_folder.hpp"

namespace ddft::sender::hot_folder_detail {

// The events watched on every folder of the tree.
inline constexpr uint32_t kWatchMask = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |
                                       IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_DELETE_SELF |
                                       IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;
// With a folder that could not be watched (fs.inotify.max_user_watches), how often the whole tree
// is scanned instead.
inline constexpr auto kPeriodicRescan = std::chrono::seconds(30);
// On a network filesystem, how often the whole tree is scanned too: inotify reports only what goes
// through this host's kernel (inotify(7)), so files other machines write there come to light only
// by scanning.
inline constexpr auto kNetworkRescan = std::chrono::seconds(10);
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

}  // namespace ddft::sender::hot_folder_detail
