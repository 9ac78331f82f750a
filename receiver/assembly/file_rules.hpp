// Pure decisions about one file, kept apart from the file table's state so that each can be
// tested alone: what an announce makes, why an announce is refused for its size, what the origin
// beside a temporary file says, what the record of a refused or never-announced file says, why a
// receiving file has expired, and whether a compressed piece fits it. No I/O, no logging; any
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/config.hpp"
#include "receiver/delivery/output_dir.hpp"

namespace ddft::receiver {

// How long a file whose end packet has arrived (or that a later announce superseded) may wait
// for reordered data before it fails.
inline constexpr auto kEndGrace = std::chrono::milliseconds(500);

// Files in flight at most, whatever their state: at least 16 x `max_receiving`
// (--max-files-in-flight) and as many as the descriptor limit allows, up to 8192.
size_t files_in_flight_bound(size_t max_receiving);
// The file `a` announces in `session` at `now` (its chunk bitmap not allocated yet); progress
// lines every `report_bytes`.
std::unique_ptr<File> file_from_announce(const common::Announce& a, uint64_t session,
                                         common::Clock::time_point now, uint64_t report_bytes);
// Why a file of `size` bytes in `chunks_total` chunks is refused for its size or for the free
// space (`free`: bytes free on the output file system, UINT64_MAX when unknown; `promised`: what
// the files still receiving will write). nullopt when it fits.
[[nodiscard]] std::optional<std::string> size_refusal(const ReceiverConfig& cfg, uint64_t size,
                                                      uint64_t chunks_total, uint64_t promised,
                                                      uint64_t free);
// The origin written beside `f`'s temporary file.
Origin origin_of(const File& f, std::string sender);
// The file `id` names as a File (its session, name, id, size and verification).
File named_file(const common::FileIdentity& id);
// The record of `f`, refused in `session` for `reason`.
FailureRecord refusal_record(const File& f, uint64_t session, const std::string& reason);
// The record of a file of `session` that only the sender's file list names.
FailureRecord unannounced_record(const common::FileListEntry& e, uint64_t session);
// Why receiving file `f` has expired at `now` (nullopt when it has not): its end came and its
// grace is over, a later file superseded it, nothing came for `timeout` (+ its pause), or the
// session's final heartbeat is due (`final_due`). `sleep_heard`: the latest heartbeat saying the
// sender sleeps on a lane of the file (FileLanes::sleep_heard()); when it came after the file's
// last packet, the file's silence counts from it, so a sleep longer than `timeout` fails no file
// while its heartbeats come, and a sender gone quiet in it fails the file `timeout` after its last.
[[nodiscard]] std::optional<std::string> expiry_reason(const File& f, common::Clock::time_point now,
                                                       std::chrono::nanoseconds timeout,
                                                       double timeout_s, bool final_due,
                                                       common::Clock::time_point sleep_heard = {});
// Whether a kZData piece of `piece_len` bytes fits file `f`: its block starts on a chunk, ends on
// one or at the file's end, and the piece sits where the file's piece size puts it.
bool zdata_fits(const File& f, const common::ZDataHeader& z, size_t piece_len);
// The channel of an announce with kFlagChannel: its path's first component ("" for a path of one
// component, which a sender never sends).
inline std::string_view channel_of(std::string_view path) {
  const size_t slash = path.find('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

}  // namespace ddft::receiver
