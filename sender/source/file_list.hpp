// Turns the command line's files and folders into the list of files to send.
//
// Runs on main's thread before the session. It reads folders and stats files but opens none for
// reading; what cannot be listed is an entry of FileList::errors, never an exception.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.hpp"
#include "common/file_identity.hpp"
#include "common/path_filter.hpp"
#include "sender/source/shard.hpp"

namespace ddft::sender {

struct SourceFile {
  std::string path;      // where to read it
  std::string rel_path;  // what the receiver calls it: '/'-separated, relative
  // "synthetic:SIZE": generated data of this many bytes, read from memory (no disk), for
  // measuring the other stages alone.
  bool synthetic = false;
  uint64_t synthetic_size = 0;
  // Opaque to the pipeline: the FileSource that made this entry finds it again by it in the
  // SendObserver callbacks (FileMeta::tag).
  uint64_t tag = 0;
  // Bytes when listed (discover_files stats every file; synthetic: synthetic_size). What the
  // reader sends is the size when it opens the file; this one only sizes the batch for a
  // progress display.
  uint64_t size = 0;
  // Already open, when the source had to check what it hands out (the hot folder: the version it
  // found settled, and not one renamed over the name since). The reader reads this descriptor
  // (taking it over) instead of opening `path`, which still names the file in messages.
  std::shared_ptr<common::UniqueFd> opened = nullptr;
  // Under --symlinks skip and error, a file found inside a folder: the folder named on the command
  // line (`root`) and the file's path below it (`below`, '/'-separated). The reader opens it there
  // following no symbolic link below `root` (common/open_below.hpp): the listing followed none, so
  // a link that has taken the place of the file or of a folder on its way since is refused, never
  // read through. Empty `root`: `path` is opened as it is, links followed (a file named on the
  // command line, --symlinks follow, a copy from the retention folder).
  std::string root = {};
  std::string below = {};
  // A resend (--resend-request, --resend-after): the file as it was first sent; the receiver
  // is told (kResend) before its announce.
  std::optional<common::FileIdentity> resend_of = std::nullopt;
};

// A source, or an entry of a folder, that cannot be sent.
struct SourceError {
  std::string rel_path;  // what the receiver would have called it (the folder's, for a folder)
  std::string message;   // one line: "cannot send '/x/y': No such file or directory"
};

// --symlinks: what a symbolic link found inside a folder being sent becomes (a link named on the
// command line is always followed: the operator named it).
//   kSkip    not sent, not followed; named once (FileList::skipped_links) and counted
//   kFollow  followed to a file (sent under the link's name) or a folder (walked under the link's
//            name), resolved when the list is made; a folder reached a second time (by device
//            and inode: a loop, or two links to one folder) is walked once and the second way
//            named in skipped_links; a link leading nowhere is an error
//   kError   an error for that entry (FileList::errors), as an unreadable file is
enum class SymlinkMode { kSkip, kFollow, kError };
// "skip", "follow" or "error", as --symlinks spells it; parse: false for anything else.
std::string_view symlink_mode_name(SymlinkMode mode);
[[nodiscard]] bool parse_symlink_mode(std::string_view text, SymlinkMode* out);

// A link left out (--symlinks skip), or a folder not walked a second time (--symlinks follow).
struct SkippedLink {
  std::string rel_path;  // what the receiver would have called it
  // One line: "skipping symbolic link '/src/a/l' (to 'x'; --symlinks skip)".
  std::string message;
};

struct FileList {
  std::vector<SourceFile> files;
  std::vector<SourceError> errors;
  std::vector<std::string> filtered;  // relative paths --include/--exclude left out
  size_t other_shards = 0;            // files left to the other hosts' shards (--shard)
  std::vector<SkippedLink> skipped_links;
  // --symlinks follow: one line per link followed, saying where it leads ("following symbolic
  // link '/src/a/l' to '/data/x'").
  std::vector<std::string> followed_links;
};

// Expands `sources`: a file is sent under its base name; a folder recursively, under its own name
// ("photos" -> "photos/a.jpg"), or, written with a trailing slash ("photos/"), its contents only
// ("a.jpg"), as rsync does. Symbolic links inside folders (to files, to folders, leading nowhere)
// are what `symlinks` says (SymlinkMode); a source named on the command line that is a link is
// followed. Sockets, FIFOs and devices are skipped with an error line. A missing or unreadable
// source gives an error line and the others are still listed. Files of one folder are in name
// order. "synthetic:SIZE" (SIZE in bytes, or with K, M, G or T for powers of 1024) adds a
// generated file named "synthetic-SIZE.bin" that costs nothing to produce. `filter`
// (--include/--exclude) is applied to every relative path, a file named on the command line
// included; what it refuses goes to `filtered`, not to `files`. With `shard` (--shard K/N), a
// file of another shard is neither listed nor filtered, only counted in `other_shards`, and an
// entry of a folder that cannot be sent (or a link skipped) is another shard's to report; a
// source named on the command line that cannot be sent is reported by every host (each was
// given it). A link to a folder is reported whatever the filter (it filters files).
FileList discover_files(const std::vector<std::string>& sources,
                        const common::PathFilter& filter = {}, const Shard& shard = {},
                        SymlinkMode symlinks = SymlinkMode::kSkip);

// Parses "123", "64K", "2G"... into bytes. Returns false on anything else.
[[nodiscard]] bool parse_size(std::string_view text, uint64_t* out);

}  // namespace ddft::sender
