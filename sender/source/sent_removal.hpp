// How a sent file leaves the hot folder: deleted, or moved to --sent-dir (a retention folder when
// --sent-keep-hours or --sent-keep-gb prune it), through a private name. The file is first renamed
// to finishing_name() in its own folder, atomically, and only then is the inode that moved
// checked: the version that was sent is removed, and a new version renamed over the name in that
// instant is put back (under its name, or "name.N.ext" when that is taken again) to be sent,
// never removed. Nothing in the sent folder is ever overwritten.
//
// Not thread-safe: the hot folder calls it under its mutex. The options are the caller's and must
// outlive it; it owns the retention folder's bookkeeping. The constructor throws
// std::runtime_error with one line when the retention index cannot be opened (start-up); a file
// that cannot be removed is reported by the result, with a one-line reason, never thrown.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "sender/source/hot_folder_options.hpp"
#include "sender/source/retention.hpp"
#include "sender/source/watch_journal.hpp"

namespace ddft::sender {

// The private name, relative to DIR, that sent file `r` is renamed to before it is deleted or
// moved: in its own folder (so on its file system), reserved (".ddft-finishing-<inode>", never
// scanned or sent), and derived from the journal record, so that a restart finds a file left
// there by a stop in between.
std::string finishing_name(const JournalRecord& r);

class SentRemoval {
 public:
  // For the tree at opt.dir and the sent folder opt.sent_dir (both absolute and checked; "":
  // delete), pruned as opt.retention says. `opt` must outlive this.
  explicit SentRemoval(const HotFolderOptions& opt);
  SentRemoval(const SentRemoval&) = delete;
  SentRemoval& operator=(const SentRemoval&) = delete;

  // Deletes or moves the sent file of `r` (still its version: checked first), through its
  // private name; on failure returns false with a one-line reason in *why. `*moved_to` gets the
  // destination of a move; `*put_back` the name (relative) a new version found under the private
  // name went back to ("" when none).
  [[nodiscard]] bool finish(const JournalRecord& r, std::string* moved_to, std::string* put_back,
                            std::string* why);
  // The file at `priv` (r's private name, absolute): deleted or moved when it is r's version,
  // else put back (a new version). Arguments as finish()'s.
  [[nodiscard]] bool finish_private(const JournalRecord& r, const std::string& priv,
                                    std::string* moved_to, std::string* put_back, std::string* why);
  // The retention folder's bookkeeping (thread-safe), or null when what is moved is kept for good.
  const Retention* retention() const { return retention_.get(); }

 private:
  // Moves `from` (absolute) to the sent folder under `rel`'s path. False, with *why set, when it
  // cannot.
  [[nodiscard]] bool move_to_sent(const std::string& rel, const std::string& from,
                                  std::string* moved_to, std::string* why);
  // Renames `priv` (absolute) back to `rel`, or the first free "name.N.ext" beside it. False,
  // with *why set, when it cannot.
  [[nodiscard]] bool put_back(const std::string& rel, const std::string& priv, std::string* where,
                              std::string* why);
  std::string abs(const std::string& rel) const;
  void hook(std::string_view point, const std::string& rel) const {
    if (opt_.test_hook) opt_.test_hook(point, rel);
  }

  const HotFolderOptions& opt_;
  std::unique_ptr<Retention> retention_;  // --sent-keep-hours / --sent-keep-gb
};

}  // namespace ddft::sender
