#include "common/write_mode.hpp"

namespace ddft::common {

std::string_view write_mode_name(WriteMode mode) {
  return mode == WriteMode::kDataSync ? "rwd" : mode == WriteMode::kFullSync ? "rws" : "rw";
}

bool parse_write_mode(std::string_view text, WriteMode* mode) {
  for (WriteMode m : {WriteMode::kBuffered, WriteMode::kDataSync, WriteMode::kFullSync}) {
    if (text == write_mode_name(m)) {
      *mode = m;
      return true;
    }
  }
  return false;
}

}  // namespace ddft::common
