// A file as its sender named it: the one value that says which file is meant wherever the
// product names one (the receiver's journal, failure records, a delivered file's origin and its
// hook input, the files start-up finds left behind).
//
// A plain value: no I/O, any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/protocol.hpp"

namespace ddft::common {

struct FileIdentity {
  uint64_t session = 0;  // the sender session that sent it (random per sender start); 0: unknown
  uint32_t file_id = 0;  // its id in that session (common::next_file_id()); 0: unknown
  std::string path;      // relative and '/'-separated, as announced
  uint64_t size = 0;     // bytes, as announced; 0 when unknown
  VerifyType verify = VerifyType::kNone;
  std::string digest;  // the sender's full digest in lowercase hex; "" when unknown or kNone

  bool operator==(const FileIdentity&) const = default;
  // verify's name as the log and the records print it: "B2B", "SHA256", "NONE".
  std::string_view verify_name() const { return verify_type_name(verify); }
};

}  // namespace ddft::common
