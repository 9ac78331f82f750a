// The hot folder's retention folder (--sent-dir with --sent-keep-hours / --sent-keep-gb): what it
// sent, kept for a while so that a resend (--resend-request) finds the bytes first sent, then
// pruned oldest first.
//
// An index of its own, SENT_DIR/.ddft-retention, one line per file moved in, appended:
// "<moved ns> <size> <path below SENT_DIR as a JSON string>". Pruning reads it from the oldest
// line on, removes each file past the window (or, past the size bound, the oldest ones), and
// appends "X <offset>": the lines before that offset are of files removed. The index is
// rewritten without them once they are half of it (and over 1 MiB). A file younger than
// `protect_for` (the history's last repeat on the wire, after which a receiver can no longer name
// it as missed) is never removed for the size bound; the bound is then exceeded, with a warning.
//
// Thread-safe (the transmit threads' observer calls, the hot folder's start). The constructor
// throws std::runtime_error with one line when the index cannot be opened (start-up); pruning
// that fails is logged, never thrown.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace ddft::sender {

inline constexpr const char* kRetentionIndex = ".ddft-retention";

struct RetentionLimits {
  std::chrono::seconds keep_for{0};     // 0: no age bound
  uint64_t max_bytes = 0;               // 0: no size bound
  std::chrono::seconds protect_for{0};  // never removed for the size bound while younger
};

class Retention {
 public:
  using WallNs = std::function<int64_t()>;
  // Opens (creating) `dir`/.ddft-retention and sums what it holds. Throws std::runtime_error
  // with one line when it cannot.
  Retention(std::string dir, RetentionLimits limits, WallNs wall_ns = {});
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;

  // `path` (below the folder) was moved in, `size` bytes.
  void kept(const std::string& path, uint64_t size);
  // Removes what is past the limits, oldest first; at most once a minute unless `now_anyway`.
  // Returns the files removed.
  size_t prune(bool now_anyway = false);
  uint64_t bytes() const;
  uint64_t files() const;

 private:
  void prune_locked(int64_t now, size_t* removed);  // mu_ held
  // The oldest file kept (moved in at `moved_ns`, `size` bytes, `path` below the folder): removed
  // when past the limits, and true; false when it stays, and so does every later one (mu_ held).
  bool remove_oldest(int64_t moved_ns, uint64_t size, const std::string& path, int64_t now);
  void compact_locked();  // mu_ held

  std::string dir_;
  std::string index_;
  RetentionLimits limits_;
  WallNs wall_ns_;
  mutable std::mutex mu_;
  uint64_t head_ = 0;   // offset of the oldest line still kept
  uint64_t end_ = 0;    // the index's size
  uint64_t bytes_ = 0;  // of the files kept
  uint64_t files_ = 0;
  int64_t last_prune_ns_ = 0;
  bool warned_ = false;
};

}  // namespace ddft::sender
