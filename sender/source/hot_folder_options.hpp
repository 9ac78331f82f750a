// The hot folder's settings (dd_file_send --watch and the options around it), shared by the hot
// folder (sender/source/hot_folder.hpp) and its units.
//
// A plain value; hot_folder_options() is a pure function.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/path_filter.hpp"
#include "sender/config.hpp"
#include "sender/source/file_list.hpp"
#include "sender/source/resend_schedule.hpp"
#include "sender/source/retention.hpp"
#include "sender/source/shard.hpp"

namespace ddft::sender {

struct HotFolderOptions {
  std::string dir;       // --watch
  std::string sent_dir;  // --sent-dir; empty: delete sent files
  // --sent-keep-hours, --sent-keep-gb: sent_dir is a retention folder pruned to these
  // (sender/source/retention.hpp); both 0: kept for good.
  RetentionLimits retention;
  // --resend-after: the resends next() hands out as they come due, told where each sent file
  // was moved (may be null; must outlive the hot folder).
  ResendSchedule* resends = nullptr;
  double settle_s = 5;  // --settle
  // --watch-journal; empty: DIR/.ddft-watch-journal, or with --shard K/N
  // DIR/.ddft-watch-journal.shard-K-of-N (hosts sharing DIR must not share a journal)
  std::string journal;
  common::PathFilter filter;
  // --shard: a file of another shard is left alone entirely (not tracked, sent, removed or logged)
  Shard shard;
  // Seconds between scans of the whole tree besides inotify; < 0: every 10 s on a network
  // filesystem (NFS, SMB, Ceph, FUSE...), where inotify misses what other machines write, else
  // only when events were lost. Tests set it.
  double rescan_s = -1;
  // --symlinks: kSkip or kError (kFollow is refused by the config; taken as kSkip here).
  SymlinkMode symlinks = SymlinkMode::kSkip;
  // Told of each link left out, once as it appears, with its line (`failed`: --symlinks error).
  // Called under the hot folder's lock, from the constructor or the reader thread; may be empty.
  std::function<void(const std::string& rel, const std::string& message, bool failed)> on_link;
  // Test seam: called under the hot folder's lock at named points, so that a test changes the
  // folder exactly there: "scan" (a folder of the tree watched, not yet read; `rel` is the
  // folder), "handout" (a file found ready, not yet opened for the reader), "finish" (a sent file
  // checked, not yet renamed to its private name), "finish-moved" (renamed to its private name,
  // not yet checked). Empty in production.
  std::function<void(std::string_view point, const std::string& rel)> test_hook;
  // Test hook: after this many "sent" records (1-based), the process kills itself with SIGKILL
  // before deleting or moving the file, as a crash there would. 0 = off.
  unsigned crash_after_sent = 0;
};

// The options of `cfg` that concern the hot folder.
HotFolderOptions hot_folder_options(const SenderConfig& cfg);

}  // namespace ddft::sender
