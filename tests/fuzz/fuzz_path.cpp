// Fuzz harness: the path sanitiser and the output folder behind it.
//
// Input: one control byte, then a path as it comes off the wire. Control bits:
//   bit 0      finalize the file (rename into place); clear: fail it (move it to .failed/)
//   bits 1-2   collision policy: 0 rename, 1 overwrite, 2 reject, 3 rename
//   bit 3      receive the same path twice (the second one collides with the first)
//   bit 4      tight path limits (--max-path-length 100 --max-path-depth 4) instead of the defaults
//
// receiver::check_wire_path() must agree with the rules of output_dir.hpp (restated in
// fuzz_support.cpp). When it accepts, OutputDir::create_temp() runs in a sandbox whose output
// folder holds planted symlinks to a sibling "outside" folder, then finalize() or fail(). Checked:
// the temporary file and the finished file are really below the output folder (their folder's
// ".." chain reaches it), and afterwards nothing is in "outside", nothing appeared beside the
// output folder, and no symlink but the planted ones exists below it.
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::fuzz {
namespace {

// One file received under `path`: created, then finished or failed. Returns whether
// create_temp() accepted it.
bool receive_one(receiver::OutputDir& out, const Sandbox& box, std::string_view path, uint32_t id,
                 bool finalize) {
  receiver::TempFile tmp;
  std::string reason;
  if (!out.create_temp(path, receiver::temp_name(7, id), &tmp, &reason)) {
    require(!reason.empty(), "create_temp refused without a reason");
    return false;
  }
  require(tmp.fd.valid() && tmp.dir.valid(), "create_temp accepted without a file");
  box.verify_file(tmp.dir.get(), tmp.tmp_name, tmp.fd.get(), "the temporary file");
  require(::write(tmp.fd.get(), "data\n", 5) == 5, "cannot write the temporary file");
  if (finalize) {
    std::string moved_old;
    if (out.finalize(tmp, 0644, 1'600'000'000'000'000'000, &moved_old, &reason)) {
      box.verify_file(tmp.dir.get(), tmp.base_name, -1, "the finished file");
      if (!moved_old.empty()) box.verify_file(tmp.dir.get(), moved_old, -1, "the file moved aside");
      return true;
    }
    require(!reason.empty(), "finalize failed without a reason");
  }
  receiver::FailureRecord rec;
  rec.file.path = std::string(path);
  rec.file.session = 7;
  rec.file.file_id = id;
  rec.file.size = 5;
  rec.bytes_received = 5;
  rec.reason = finalize ? "finalize refused: " + reason : "failed by the fuzz harness";
  rec.file.verify = common::VerifyType::kNone;
  require(!out.fail(tmp, rec).empty(), "the failure record could not be written");
  return true;
}

}  // namespace
}  // namespace ddft::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ddft;
  using fuzz::require;
  static fuzz::Sandbox box("path");
  if (size < 1) return 0;
  const uint8_t ctl = data[0];
  const std::string path(reinterpret_cast<const char*>(data + 1), size - 1);
  receiver::PathLimits limits;
  if (ctl & 16) limits = {100, 4};
  const std::string verdict = receiver::check_wire_path(path, limits).value_or("");
  const std::string reference =
      fuzz::reference_path_verdict(path, limits.max_length, limits.max_depth);
  require(verdict.empty() == reference.empty(),
          verdict.empty() ? "check_wire_path accepted a path the rules refuse (" + reference + ")"
                          : "check_wire_path refused a path the rules accept (" + verdict + ")");
  if (!verdict.empty()) return 0;  // create_temp() checks again first: nothing to see on disk

  static const receiver::CollisionPolicy kPolicies[] = {
      receiver::CollisionPolicy::kRename, receiver::CollisionPolicy::kOverwrite,
      receiver::CollisionPolicy::kReject, receiver::CollisionPolicy::kRename};
  box.reset();
  {
    receiver::OutputDir out(box.out().string(), (box.out() / ".failed").string(),
                            kPolicies[(ctl >> 1) & 3]);
    out.set_path_limits(limits);
    const bool finalize = (ctl & 1) != 0;
    fuzz::receive_one(out, box, path, 1, finalize);
    if (ctl & 8) fuzz::receive_one(out, box, path, 2, finalize);
  }
  box.verify();
  return 0;
}
