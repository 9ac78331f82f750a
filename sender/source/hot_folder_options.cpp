#include "sender/source/hot_folder_options.hpp"

#include <chrono>
#include <cstdint>

namespace ddft::sender {

HotFolderOptions hot_folder_options(const SenderConfig& cfg) {
  HotFolderOptions o;
  o.dir = cfg.watch_dir;
  o.sent_dir = cfg.sent_dir;
  o.retention.keep_for = std::chrono::seconds(static_cast<int64_t>(cfg.sent_keep_hours * 3600));
  o.retention.max_bytes = static_cast<uint64_t>(cfg.sent_keep_gb * 1024 * 1024 * 1024);
  // A file the history still names on the wire may still be asked for.
  if (!cfg.state_dir.empty() && !cfg.history_repeats.empty()) {
    o.retention.protect_for = cfg.history_repeats.back();
  }
  o.settle_s = cfg.settle_s;
  o.journal = cfg.watch_journal;
  o.filter = cfg.filter;
  o.shard = cfg.shard;
  o.symlinks = cfg.symlinks;
  o.crash_after_sent = cfg.test_crash_after_sent;
  return o;
}

}  // namespace ddft::sender
