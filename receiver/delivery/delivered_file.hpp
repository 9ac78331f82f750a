// What the assembler tells the rest of the receiver about a file it has verified and renamed into
// place (the --on-complete hook's input).
// A plain value; nothing here throws.
#pragma once

#include <cstdint>
#include <string>

#include "common/file_identity.hpp"
#include "receiver/delivery/file_repairs.hpp"

namespace ddft::receiver {

struct DeliveredFile {
  common::FileIdentity file;  // as its sender named it (the log prints the session {:016x})
  std::string final_path;     // where it is now: the output folder (as given) + "/" + file.path
  std::string key;  // as the File: line prints it: "0x6999CF78", or "none" (--verify none)
  // --on-collision rename: where the earlier file of the same name went ("" when there was none).
  // Whatever still refers to final_path for that earlier file should follow it there.
  std::string displaced_to;
  std::string channel;  // the sender's channel (the first part of file.path), "" without one
  std::string sender;   // its sender: its id in hex, or "session-" and the session's without one
  FileRepairs repairs;  // what FEC and later copies (--repeat) filled in
};

}  // namespace ddft::receiver
