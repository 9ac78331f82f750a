// What the assembler tells the rest of the receiver about a file it has verified and renamed into
// place (the --on-complete hook's input).
#pragma once

#include <cstdint>
#include <string>

namespace ddft::receiver {

struct DeliveredFile {
  std::string final_path;  // where it is now: the output folder (as given) + "/" + rel_path
  std::string rel_path;    // as announced, and as the receive log names it
  uint64_t size = 0;
  std::string key;       // as the File: line prints it: "0x6999CF78", or "none" (--verify none)
  uint64_t session = 0;  // the sender session it came in (the log prints it {:016x})
  // --on-collision rename: where the earlier file of the same name went ("" when there was none).
  // Whatever still refers to final_path for that earlier file should follow it there.
  std::string displaced_to;
};

}  // namespace ddft::receiver
