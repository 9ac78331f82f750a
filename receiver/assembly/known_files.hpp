// What the receiver knows of one sender session's file ids, which every decision about a packet
// that names a file is checked against: the session, the first of its files this receiver heard
// announced, the session's ids seen (announced or named already: a late repeat is ignored) and
// filtered (their packets are dropped as expected), and the files settled over the journal's
// window, in any session (receiver/assembly/settled_files.hpp, shared by every session's).
//
// Writer thread only. A plain in-memory value that owns its sets, each bounded; nothing here
// throws. The file table keeps one per live session; that session's units (the sender's lists
// and history, admission) share it by reference.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/recent_ids.hpp"
#include "receiver/assembly/settled_files.hpp"

namespace ddft::receiver {

class KnownFiles {
 public:
  // File ids remembered per session, to ignore a finished file's late repeats: more than a
  // session's complete file list names (the sender lists at most 100,000 files at the end of a
  // session), so that no file of the list is taken for one never announced.
  static constexpr size_t kSeenIdsKept = 262144;

  // `keep_for`: how long a settled file is remembered at least (--journal-hours).
  explicit KnownFiles(std::chrono::nanoseconds keep_for)
      : own_(std::make_unique<SettledFiles>(keep_for)), settled_(*own_) {}
  // The settled files are `shared`'s (must outlive this).
  explicit KnownFiles(SettledFiles& shared) : settled_(shared) {}
  KnownFiles(const KnownFiles&) = delete;
  KnownFiles& operator=(const KnownFiles&) = delete;

  // `s` is the sender's session from now on: its file ids start afresh (the settled files of
  // every session stay).
  void start_session(uint64_t s) {
    session_ = s;
    seen_.clear();
    filtered_.clear();
    first_id_ = 0;
    first_of_channel_.clear();
  }
  uint64_t session() const { return session_; }

  // File `id` of the session, of sender channel `channel` (empty: none), is announced: the
  // first such is the first file heard (of its channel).
  void note_announced(uint32_t id, std::string_view channel = {}) {
    if (first_id_ == 0) first_id_ = id;
    if (!channel.empty() && first_of_channel_.size() < kChannelsKept) {
      first_of_channel_.emplace(std::string(channel), id);
    }
  }
  // Whether file `id` of the session comes at or after the first file this receiver heard
  // announced (false before any): it was on the wire while this receiver was receiving.
  bool while_receiving(uint32_t id) const {
    return first_id_ != 0 && !common::file_id_before(id, first_id_);
  }
  enum class Sent { kWhileReceiving, kBefore, kUnknown };
  // When file `id` of the session, at `path` on the wire, went on the wire against this
  // receiver's first file heard. Each sender channel sends its files in the order of their ids
  // but the channels interleave, so once the session has shown channels, a file is weighed
  // against the first file heard of its own channel (its path's first component), and kUnknown
  // while none of that channel was heard. Without channels: while_receiving().
  Sent sent_when(uint32_t id, std::string_view path) const {
    if (first_of_channel_.empty())
      return while_receiving(id) ? Sent::kWhileReceiving : Sent::kBefore;
    const auto it = first_of_channel_.find(path.substr(0, path.find('/')));
    if (it == first_of_channel_.end()) return Sent::kUnknown;
    return common::file_id_before(id, it->second) ? Sent::kBefore : Sent::kWhileReceiving;
  }

  // Whether file `id` of the session was seen (announced, or named by the sender) lately.
  bool seen(uint32_t id) const { return seen_.contains(id); }
  // Whether the filter dropped file `id` of the session lately.
  bool filtered(uint32_t id) const { return filtered_.contains(id); }
  // Whether file `id` of the session is settled: by this run or an earlier one (its journal).
  bool known_earlier(uint32_t id) const { return settled_.contains(session_, id); }

  // File `id` of the session is seen from now on (its late repeats are ignored) and settled.
  void remember_seen(uint32_t id, common::Clock::time_point now) {
    seen_.insert(id);
    settled_.add(session_, id, now);
  }
  // File `id` of `session`, any session, is named (by the sender's history): settled, and seen
  // when of the current session.
  void remember_named(uint64_t session, uint32_t id, common::Clock::time_point now) {
    settled_.add(session, id, now);
    if (session == session_) seen_.insert(id);
  }
  // The filter dropped file `id` of the session.
  void remember_filtered(uint32_t id) { filtered_.insert(id); }

  SettledFiles& settled() { return settled_; }
  const SettledFiles& settled() const { return settled_; }

 private:
  uint64_t session_ = 0;
  // Channels whose first file is remembered, at most (a sender has far fewer).
  static constexpr size_t kChannelsKept = 1024;
  uint32_t first_id_ = 0;  // the first file of the session this receiver heard announced
  std::map<std::string, uint32_t, std::less<>> first_of_channel_;  // the same of each channel
  RecentIds seen_{kSeenIdsKept};
  RecentIds filtered_{kSeenIdsKept};
  std::unique_ptr<SettledFiles> own_;  // when not shared
  SettledFiles& settled_;              // this run's and the journal's (FileTable::set_earlier())
};

}  // namespace ddft::receiver
