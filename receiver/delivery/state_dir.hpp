// The receiver's state folder: everything the receiver keeps that is not a delivered file, in one
// folder on the output folder's file system, by default OUTPUT/.ddft (--state-dir puts it
// elsewhere). Every name in it is here:
//
//   STATE/outcomes               the journal of what became of each file (outcome_log.hpp)
//   STATE/session-state[.laneK]  the replay state of lane K (--key-file; no suffix for lane 0)
//   STATE/record-reserve         space kept for failure records on a full disk (failed_folder.hpp)
//   STATE/failed/                the failed folder, unless --failed-dir puts it elsewhere
//   STATE/sender-status.json     each sender's last status, for operators (status_board.hpp)
//   STATE/outcomes.1, ...        an earlier version's entry set aside (move_old_state())
//
// Any other file the receiver keeps goes here too, named here. A replaced file is written as
// NAME.new first (common::replace_file_at()). Temporary files of
// files being received stay beside their final names (own_files.hpp): their rename must stay
// atomic. Earlier versions kept the same entries in the output folder itself; move_old_state()
// moves them here once.
//
// Names and paths are pure functions; move_old_state() runs once at start-up on one thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.hpp"

namespace ddft::receiver {

// The default state folder's name, below --output. No path from the wire may name it
// (check_wire_path()).
inline constexpr std::string_view kStateDirName = ".ddft";
// Made with this mode when missing (less the umask): the service's group may read the failure
// records, nobody else anything.
inline constexpr mode_t kStateDirMode = 0750;

inline constexpr const char* kJournalName = "outcomes";
inline constexpr const char* kSessionStateName = "session-state";
inline constexpr const char* kRecordReserveName = "record-reserve";
inline constexpr off_t kRecordReserveBytes = 256 * 1024;
inline constexpr const char* kFailedDirName = "failed";
inline constexpr const char* kSenderStatusName = "sender-status.json";

// Lane k's replay state (--key-file): kSessionStateName for lane 0 (the name a receiver of one
// lane uses), else kSessionStateName + ".laneK".
std::string session_state_name(size_t lane);
// OUTPUT/.ddft, and STATE/failed (the default --failed-dir), with no doubled '/'.
std::string default_state_dir(std::string_view output);
std::string default_failed_dir(std::string_view state_dir);

// A folder's identity, to tell the state folder from others whatever path leads there. An
// identity of ino 0 (none) matches nothing.
struct FolderId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool is(dev_t d, ino_t i) const { return ino != 0 && d == dev && i == ino; }
};

// Opens the state folder `path` for the output folder `output` (open as `output_fd`), making it
// (mode kStateDirMode, its entry synced) when missing; its parent must exist. It must be a folder
// (not a symlink) the receiver may write in, on the output folder's file system, and not the
// output folder itself. Sets *id to its identity. Throws std::runtime_error with a one-line
// reason.
common::UniqueFd open_state_dir(const std::string& path, int output_fd, const std::string& output,
                                FolderId* id);

// Where earlier versions kept the state, in the output folder: the journal, the replay state
// (lane k's: the name plus ".laneK"), the record reserve and the failed folder.
inline constexpr const char* kOldJournalName = ".ddft-outcomes";
inline constexpr const char* kOldSessionStateName = ".ddft-session-state";
inline constexpr const char* kOldRecordReserveName = ".ddft-record-reserve";
inline constexpr const char* kOldFailedDirName = ".failed";

// What move_old_state() moved, and what it could not.
struct MovedState {
  bool journal = false;
  size_t session_states = 0;   // replay state files (one per lane)
  bool reserve = false;        // the record reserve (moved, or removed: the new one stays)
  bool failed_folder = false;  // the old failed folder was there (its entries moved, it removed)
  size_t records = 0;          // of its entries, failure records (*.json)
  // One line each (no level): an old entry whose name was taken in the state folder, and where
  // it went instead; an entry that could not be moved, and why.
  std::vector<std::string> warnings;

  // True when anything was moved or removed.
  bool any() const { return journal || session_states > 0 || reserve || failed_folder; }
  // "moved the receiver's state (journal, session state, 3 failed records) from OUTPUT to
  // STATE": the Info line of a start-up that moved anything.
  std::string describe(std::string_view output, std::string_view state) const;
};

// The folders move_old_state() works on: each open (O_DIRECTORY) with its path, for the lines.
struct StatePlaces {
  int output_fd = -1;
  std::string output;
  int state_fd = -1;
  std::string state;
  // The failed folder in use, or -1 when it is not the default one (--failed-dir elsewhere): the
  // old failed folder then stays where it is.
  int failed_fd = -1;
};

// Moves the state an earlier version kept in the output folder into the state folder, by rename
// (one file system), and syncs the folders it changed before it returns. An entry whose name the
// state folder already has is never lost nor replaced: the state folder's stays in use, and the
// old one moves beside it under the first free collision_name() ("outcomes.1"), with a warning;
// only the old record reserve, which holds nothing, is removed instead. Failure records and their
// data move one by one into the failed folder under the same rule, and the old folder is removed
// once empty. Leftover NAME.new files of the old journal and replay state (a replace cut short)
// are removed. Only regular files (and the old failed folder, a real folder) are moved: anything
// else under those names is left alone. Nothing is thrown: what a rename refused stays where it
// is, named in a warning.
MovedState move_old_state(const StatePlaces& where);

}  // namespace ddft::receiver
