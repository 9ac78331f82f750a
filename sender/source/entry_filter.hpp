// Which entries of the hot folder's tree are sent, and what is said of the others, once per path
// while it stays: a regular file is sent when it is of this shard (--shard: another host's file
// is left alone without a word), has no control character in its name (the receiver would refuse
// it, and the hot folder deletes what it sent) and passes --include/--exclude; a FIFO, socket or
// device is skipped with a warning; a symbolic link as --symlinks says (a Warn or an Error line,
// counted, and told to HotFolderOptions::on_link); a reserved name (".ddft-") is left in place,
// logged, but for the hot folder's own files.
//
// Not thread-safe: the hot folder calls it under its mutex. The options are the caller's and must
// outlive it. Nothing here throws.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "sender/source/hot_folder_options.hpp"

namespace ddft::sender {

class EntryFilter {
 public:
  // For the tree at opt.dir (absolute); `own_prefix`: the journal's path relative to DIR (its
  // kin start with it). `opt` must outlive this.
  EntryFilter(const HotFolderOptions& opt, std::string own_prefix);
  EntryFilter(const EntryFilter&) = delete;
  EntryFilter& operator=(const EntryFilter&) = delete;

  // Whether a regular file at `rel` is to be tracked: of this shard (silently not), no control
  // character, and through the filter (logged once when not).
  [[nodiscard]] bool admit(const std::string& rel);
  // Warns once about a non-regular file at `rel` of this shard (`mode`: its st_mode); a
  // symbolic link as --symlinks says.
  void warn_not_regular(const std::string& rel, unsigned mode);
  // Tells once that a name starting ".ddft-" is left alone (but for the hot folder's own files).
  void note_reserved(const std::string& rel);
  // `rel` went away: said again should it come back.
  void forget(const std::string& rel);

  // Symbolic links left out (each time one appeared), under --symlinks skip and error.
  uint64_t links_skipped() const { return links_skipped_; }
  uint64_t links_failed() const { return links_failed_; }
  // Files left out (each time one appeared): by the filter, a reserved or unsendable name, not a
  // regular file, a link.
  uint64_t refused() const { return refused_; }

 private:
  // Records that `rel` is left out, in `seen`; true (and counted) the first time.
  bool left_out(std::set<std::string>& seen, const std::string& rel);

  const HotFolderOptions& opt_;
  std::string own_prefix_;
  std::set<std::string> warned_;    // non-regular paths warned about
  std::set<std::string> filtered_;  // paths the filter left in place
  uint64_t links_skipped_ = 0;
  uint64_t links_failed_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace ddft::sender
