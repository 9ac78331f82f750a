// Fuzz harness: the announce parser as the receiver uses it, decode_announce() on the payload,
// then receiver::check_wire_path() on the path it carries.
//
// Input: an announce payload (the bytes after the 32-byte header).
//
// Checked: nothing is read outside the payload (ASan); the path is exactly the payload's tail;
// and check_wire_path() accepts exactly the paths that the rules written in output_dir.hpp accept
// (fuzz_support.cpp states them again, independently).
#include <span>
#include <string>

#include "common/protocol.hpp"
#include "fuzz_support.hpp"
#include "receiver/delivery/output_dir.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddft::common;
  using ddft::fuzz::require;
  // A copy of exactly the input's size, so that ASan sees a read past its end (the fuzzer's own
  // buffer is exact too, but the corpus driver's need not be).
  const std::vector<uint8_t> payload(data, data + size);
  Announce a;
  if (decode_announce(payload, &a) != DecodeStatus::kOk) return 0;
  require(
      !a.path.empty() && a.path.size() <= kMaxPathSize &&
          a.path.size() + kAnnounceFixedSize == payload.size() &&
          reinterpret_cast<const uint8_t*>(a.path.data()) == payload.data() + kAnnounceFixedSize,
      "an announce's path is not the rest of its payload");
  require(static_cast<uint8_t>(a.verify) <= static_cast<uint8_t>(VerifyType::kSha256),
          "an announce with an unknown verification type was accepted");
  const std::string verdict = ddft::receiver::check_wire_path(a.path).value_or("");
  const std::string reference = ddft::fuzz::reference_path_verdict(a.path);
  require(verdict.empty() == reference.empty(),
          verdict.empty() ? "check_wire_path accepted a path the rules refuse (" + reference + ")"
                          : "check_wire_path refused a path the rules accept (" + verdict + ")");
  return 0;
}
