// What the receiver does at start-up, before it takes a datagram, to keep its promise across a
// crash or a power cut: every file an earlier run was working on ends as delivered or as named.
//
// Runs once, in the Receiver's constructor on main's thread, before any thread of the receiver
// starts. The folder and the journal are the caller's. A damaged journal line is skipped, never
// thrown.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

struct StartRecovery {
  // (session, file id) of every file an earlier run finished or that was named now: the
  // assembler does not record them again (Assembler::set_earlier()).
  std::vector<std::pair<uint64_t, uint32_t>> known;
  // Of those, the files whose last word is a failure (not resolved by a resend since), with the
  // path of their record: a resend of one is delivered and resolves it.
  std::vector<std::pair<std::pair<uint64_t, uint32_t>, std::string>> failed;
  size_t delivered = 0;  // renamed into place before the stop, logged Passed now
  size_t leftovers = 0;  // recorded as failed now
};

// 1. A file the journal shows renamed into place (or about to be) but never logged Passed, that
//    sits under its final name with its origin still on it: synced with its folder and logged
//    Passed now (it was verified before its rename), after a line saying so.
// 2. Every temporary file left behind: a failure record and an `Error: PATH FAILED:` line naming
//    the file, its session and id, the bytes it held and what was missing as far as known.
// Logs what it does. Throws nothing on a damaged journal (damaged lines are skipped).
StartRecovery recover_at_start(OutputDir& out, OutcomeLog& journal, bool keep_partial);

}  // namespace ddft::receiver
