// --resend-after D[,D...]: each file sent goes again after each delay, with no one asking: from
// where it is then (its source, or the hot folder's retention folder it was moved to), and only
// while its size and mtime are the ones sent. Each goes as a resend (kResend), so a receiver that
// has the file skips the copy unwritten and one that failed or missed it delivers it.
//
//   transmit threads ── file_sent_via ──> ResendSchedule ── due() ──> the reader's source
//   hot folder ── moved(tag, path) ──────┘                           (ResendingSource for a
//                                                                      one-shot send, the hot
//                                                                      folder's next())
//
// Thread-safe (one mutex). The clock is the caller's and must outlive it. Nothing here throws: a
// file that changed or went is logged once and not resent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.hpp"
#include "common/file_identity.hpp"
#include "sender/events.hpp"
#include "sender/source/file_list.hpp"

namespace ddft::sender {

class ResendSchedule final : public SendObserver {
 public:
  // `delays`: after each, counted from the file's send, it goes again (ascending, at least
  // one). `verify`: the session's verification (the digest each resend names).
  ResendSchedule(std::vector<std::chrono::seconds> delays, common::VerifyType verify,
                 common::Clock& clock);

  void session_started(uint64_t session_id) override;
  void file_sent_via(const FileMeta& file, const common::Digest& digest, int list_lane) override;
  void file_failed(const FileMeta& file, const std::string& reason) override;

  // The file of `tag` (SourceFile::tag) is now at `path` (the hot folder moved it there).
  void moved(uint64_t tag, const std::string& path);
  // A file handed to the reader (one-shot sends: the session ends only once each is reported).
  void handed_out();

  // The next resend due now, if any: a source whose file is unchanged since it was sent (one
  // that changed or went is logged once and not resent again).
  std::optional<SourceFile> due();
  // Whether nothing is left to resend and every file handed out was reported.
  bool done() const;
  // Waits until a resend may be due, a file is reported, or `stop`; at most `most`.
  void wait(std::chrono::milliseconds most, std::stop_token stop);

 private:
  struct Entry {
    common::FileIdentity of;  // as first sent
    std::string path;         // where it is now
    int64_t mtime_ns = 0;
    size_t next = 0;  // index of its next delay
    common::Clock::time_point sent{};
    uint64_t tag = 0;  // SourceFile::tag
  };
  void schedule_locked(Entry e);

  const std::vector<std::chrono::seconds> delays_;
  const common::VerifyType verify_;
  common::Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t session_ = 0;
  std::multimap<common::Clock::time_point, Entry> due_;
  std::unordered_map<uint64_t, common::Clock::time_point> by_tag_;  // tag -> its due time
  std::unordered_map<uint64_t, std::string> moved_early_;           // moved before scheduled
  uint64_t handed_out_ = 0;
  uint64_t reported_ = 0;
};

// A one-shot send with --resend-after: the files of `inner`, then each resend as it comes due;
// over once every file is reported and no resend is left.
class ResendingSource final : public FileSource {
 public:
  ResendingSource(FileSource& inner, ResendSchedule& schedule)
      : inner_(inner), schedule_(schedule) {}
  std::optional<SourceFile> next(std::stop_token stop) override;
  std::string describe() const override { return inner_.describe(); }

 private:
  FileSource& inner_;
  ResendSchedule& schedule_;
  bool inner_done_ = false;
};

}  // namespace ddft::sender
