// Resend requests: the human loop across the diode. The receiving side writes, for each file it
// failed or missed and has not had since, one JSON line (dd_resend_request OUTPUT):
//
//   {"sender":"36572ab571c95b5d","session":"fb0ab33640f015ae","file_id":6,"path":"src/f14.bin",
//    "size":20000,"verify":"B2B","digest":"1eb05e527a7947b05f0920cff0e5bceb"}
//
// The operator carries the file to the sending side; `dd_file_send --resend-request FILE
// [SOURCES...]` sends exactly those files again, each found in the sender's retention folder
// (--state-dir) or under the sources given, and only when its bytes are still the ones first
// sent (size and digest): a file that changed or cannot be found is refused with one line. Each
// goes as a resend (kResend), so the receiver delivers it under its name and marks its failure
// resolved.
//
// Runs on main's thread before the session. read_resend_requests() throws std::runtime_error
// with one line ("FILE:LINE: ...") when the file cannot be read or a line is not a request
// (start-up); a request that cannot be served goes to the error list, never thrown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_identity.hpp"
#include "sender/source/file_list.hpp"

namespace ddft::sender {

struct ResendRequest {
  uint64_t sender_id = 0;  // 0: the request does not say
  common::FileIdentity file;
};

// Reads a request file. Blank lines are skipped. Throws std::runtime_error with one line
// ("FILE:LINE: ...") when it cannot be read or a line is not a request.
std::vector<ResendRequest> read_resend_requests(const std::string& path);

// Where each request's file is, as a source to send again (resend_of set): the retention copy
// (`retention`/<session>/<file id>/<path>, when `retention` is not empty) or the one of `listed`
// (the sources given, as listed) with the request's path. Each request that cannot be sent
// (another sender's, not found, not a regular file, or its size or digest not the ones first
// sent) goes to *errors, one line naming it and why.
std::vector<SourceFile> resend_sources(const std::vector<ResendRequest>& requests,
                                       const std::vector<SourceFile>& listed,
                                       const std::string& retention, uint64_t sender_id,
                                       std::vector<SourceError>* errors);

}  // namespace ddft::sender
