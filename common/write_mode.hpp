// How durably a received file is written (--write-mode), shared by the receiver and the disk
// self-test (dd_iotest --mode), which must time the same syncs.
//
// Pure functions: any thread; nothing throws.
#pragma once

#include <string_view>

namespace ddft::common {

// rw: never synced; rwd: data synced, renamed, folder synced; rws: the same with fsync.
enum class WriteMode { kBuffered, kDataSync, kFullSync };

// "rw", "rwd" or "rws", as --write-mode spells it.
std::string_view write_mode_name(WriteMode mode);
// Parses "rw", "rwd" or "rws"; false (and *mode untouched) for anything else.
[[nodiscard]] bool parse_write_mode(std::string_view text, WriteMode* mode);

}  // namespace ddft::common
