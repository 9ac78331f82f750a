// What the fuzz harnesses share: a hard check that ends the run, quiet logs, an independent
// statement of the wire-path rules, and a per-process sandbox folder with planted symlinks that
// the receiver's files must never escape.
//
// Every harness defines LLVMFuzzerTestOneInput(). Built with clang and -fsanitize=fuzzer it is a
// libFuzzer program; built with corpus_main.cpp instead it replays a folder of inputs (ctest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "common/seal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace ddft::fuzz {

// Ends the process with one line on stderr when `ok` is false: libFuzzer then saves the input as
// a crash reproducer. For invariants the product must keep, not for bad input.
void require(bool ok, std::string_view what);

// The pre-shared key of the receiver harness's keyed runs (--key-file) and of the sealed seeds.
inline common::Key fuzz_key() {
  common::Key k{};
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(0x5A ^ (i * 37));
  return k;
}

// Makes `datagram` (at least a header long, payload at most 65535 bytes) pass the header checks
// of decode_packet(): writes magic, version and payload_len, then recomputes the checksum as
// the sender does (common::reseal(), or reseal_header() for a sealed datagram, kFlagAuth).
void fix_header(std::span<uint8_t> datagram);

// Sends spdlog's default logger to a null sink (still formatting every message, so the log code
// runs on hostile names too). Call once per process. With DDFT_FUZZ_LOG set in the environment
// the log stays on (stderr), to read what a reproducer does.
void quiet_logs();

// The rules of receiver::check_wire_path(), written again from its contract in output_dir.hpp,
// so the harnesses can compare the two: "" when `path` is acceptable under these limits (the
// defaults of receiver::PathLimits), else a short reason.
std::string reference_path_verdict(std::string_view path, size_t max_length = 4096,
                                   size_t max_depth = 64);

// A sandbox below the temporary folder, one per process and harness:
//
//   <tmp>/ddft_fuzz_<name>_<pid>/
//     jail/
//       out/            the receiver's output folder
//         link    -> <jail>/outside            (a planted folder symlink)
//         flink   -> <jail>/outside/planted    (a planted, dangling file symlink)
//         dir/link -> <jail>/outside           (the same, one level down)
//         exists        a regular file (collisions)
//         .failed/      the failed-files folder (made by OutputDir)
//       outside/        must stay empty
//
// Trees below out/ are walked and removed through descriptors (openat, one open at a time), not
// by path: a path from the wire may nest folders deeper than PATH_MAX allows a path to reach.
// Not thread-safe. The folder is removed when the object is destroyed (at exit).
class Sandbox {
 public:
  explicit Sandbox(const std::string& name);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Empties out/ and outside/ and plants the symlinks and files again. Call before each input.
  void reset();
  // Requires (see require()) that outside/ is empty, that nothing appeared beside out/ and
  // outside/ or above them, and that below out/, walked without following symlinks, the only
  // symlinks are the planted ones (so every file found there really is below out/).
  void verify() const;
  // Requires that `name` in the folder open as `dir_fd` exists, is not a symlink, and that the
  // folder's real location is below out/ (walked up through ".."). With `fd` >= 0, also that
  // `fd` is open on that very file.
  void verify_file(int dir_fd, const std::string& name, int fd, std::string_view what) const;

  const std::filesystem::path& out() const { return out_; }
  const std::filesystem::path& outside() const { return outside_; }

 private:
  std::filesystem::path base_;
  std::filesystem::path jail_;
  std::filesystem::path out_;
  std::filesystem::path outside_;
  uint64_t out_dev_ = 0;
  uint64_t out_ino_ = 0;
};

}  // namespace ddft::fuzz
