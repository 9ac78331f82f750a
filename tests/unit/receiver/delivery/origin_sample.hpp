// An origin as the receiver writes one beside a file it is receiving: fixed times, mode, verify,
// chunk size and sender, with the path, session, file id and size a test chooses. Shared by the
// origin's own tests and the output folder's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "receiver/delivery/origin.hpp"

namespace ddft::receiver {

inline Origin sample_origin(std::string path, uint64_t session, uint32_t id, uint64_t size) {
  Origin o;
  o.file.path = std::move(path);
  o.file.size = size;
  o.mtime_ns = 1'600'000'000'123'456'789;
  o.mode = 0640;
  o.file.verify = common::VerifyType::kB2B;
  o.file.session = session;
  o.file.file_id = id;
  o.chunk_size = 8192;
  o.sender = "127.0.0.1:40000";
  o.announced_ns = 1'700'000'000'000'000'001;
  return o;
}

}  // namespace ddft::receiver
