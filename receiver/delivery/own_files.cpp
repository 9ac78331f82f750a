#include "receiver/delivery/own_files.hpp"

#include <fmt/format.h>

namespace ddft::receiver {

std::string temp_name(uint64_t session, uint32_t file_id) {
  return fmt::format("{}{:016x}-{}{}", kTempPrefix, session, file_id, kTempSuffix);
}

bool is_temp_name(std::string_view name) {
  return name.size() > kTempPrefix.size() + kTempSuffix.size() && name.starts_with(kTempPrefix) &&
         name.ends_with(kTempSuffix);
}

std::string sidecar_name(const std::string& tmp) {
  return tmp.substr(0, tmp.size() - kTempSuffix.size()) + std::string(kSidecarSuffix);
}

}  // namespace ddft::receiver
