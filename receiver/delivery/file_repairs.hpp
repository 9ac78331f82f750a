// What repaired one file on its way: the counts its `repaired:` Info line (after its File:
// line), its journal's P line, its failure record and the metrics report.
// A plain value; nothing here throws.
#pragma once

#include <cstdint>

namespace ddft::receiver {

struct FileRepairs {
  // Data packets of the file (kData, or kZData pieces of a compressed block) that FEC rebuilt
  // and that went into it: a rebuilt packet whose chunk (or piece) had come already is a
  // duplicate, not counted; a rebuilt piece counts once its block is whole.
  uint64_t fec_rebuilt = 0;
  // Chunks (data packets' worth of the file's bytes) that a copy after the first (--repeat)
  // filled, the first having missed them; a compressed block counts all the chunks it filled
  // when a later copy's piece completed it. A packet both rebuilt and of a later copy counts in
  // both.
  uint64_t repeat_filled = 0;

  bool any() const { return fec_rebuilt != 0 || repeat_filled != 0; }
};

}  // namespace ddft::receiver
