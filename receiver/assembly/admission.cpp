#include "receiver/assembly/admission.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json.hpp"
#include "receiver/assembly/file_rules.hpp"

namespace ddft::receiver {

Admission::Admission(const ReceiverConfig& cfg, OutputDir& out, FailureRecords& records,
                     AssemblerCounters& counters, SessionFiles& session_files, KnownFiles& known,
                     const FilesInFlight& files)
    : cfg_(cfg),
      out_(out),
      records_(records),
      counters_(counters),
      session_files_(session_files),
      known_(known),
      files_(files),
      files_bound_(files_in_flight_bound(cfg.max_files_in_flight)) {}

// Receive filters are policy, not a failure: logged and counted, no record. The file's data and
// end packets are then dropped as of an unknown file.
bool Admission::filtered(const File& f) {
  if (cfg_.filter.empty() || out_.check_path(f.path)) return false;
  auto why = cfg_.filter.refusal(f.path);
  if (!why) return false;
  ++counters_.files_filtered;
  ++session_files_.filtered;
  known_.remember_filtered(f.id);
  spdlog::info("Info: filtered {}: {}", common::json_quote(f.path), *why);
  return true;
}

std::optional<std::string> Admission::refusal(const common::Announce& a, const File& f,
                                              File** evict) {
  *evict = nullptr;
  // Room for it: the free space less what the files still in flight will write.
  uint64_t promised = 0;
  for (const auto& [key, other] : files_) {
    if (other->state == FileState::kReceiving) promised += other->size - other->bytes_received;
  }
  if (auto why = size_refusal(cfg_, a.size, f.chunks_total, promised, out_.free_bytes())) {
    return why;
  }
  if (auto why = out_.check_path(f.path)) return why;
  // Only an acceptable file makes a file in flight give way.
  if (std::string why; !make_room(&why, evict)) return why;
  return std::nullopt;
}

bool Admission::make_room(std::string* why, File** evict) {
  // Files finishing their I/O (or being made, or recorded) hold a descriptor each: far beyond
  // the bound, new ones are refused, and no file still receiving is failed for them.
  if (files_.size() >= files_bound_) {
    *why = fmt::format(
        "{} files in flight are still being written (the disk is not keeping "
        "up)",
        files_.size());
    return false;
  }
  // The bound is on files still receiving: a file finishing its writes or its sync (a slow disk,
  // --write-mode rwd) has all its data and must not cost a later file its place. Failed files
  // whose records are still being written (on the pool) have a bound of the same size: a flood
  // of announces at wire speed then makes refusals, not an unbounded queue of temporary files.
  size_t receiving = 0;
  size_t failing = 0;
  std::map<uint64_t, size_t> by_session;  // files receiving
  for (const auto& [key, f] : files_) {
    if (f->state == FileState::kFailing) ++failing;
    if (f->state != FileState::kReceiving) continue;
    ++receiving;
    ++by_session[key.first];
  }
  // The oldest file of the sender with the most files receiving gives way: one sender's flood
  // of announces costs its own files, not another sender's.
  const uint64_t busiest = busiest_session(by_session);
  File* oldest = nullptr;
  for (auto it = files_.lower_bound({busiest, 0}); it != files_.end() && it->first.first == busiest;
       ++it) {
    const File* f = it->second.get();
    if (f->state == FileState::kReceiving &&
        (oldest == nullptr || f->announced < oldest->announced)) {
      oldest = it->second.get();
    }
  }
  if (failing >= cfg_.max_files_in_flight && receiving >= cfg_.max_files_in_flight) {
    *why = fmt::format(
        "{} failed files are still being recorded (the disk is not keeping "
        "up)",
        failing);
    return false;
  }
  if (receiving >= cfg_.max_files_in_flight) {
    ++counters_.files_evicted;
    *evict = oldest;
  }
  return true;
}

std::string Admission::evict_reason() const {
  return fmt::format(
      "more than {} files in flight (--max-files-in-flight): the "
      "oldest fails to make room for a new one",
      cfg_.max_files_in_flight);
}

// A refused announce: counted, logged, and recorded in the failed folder (at a bounded rate).
void Admission::refuse(const File& f, const std::string& reason) {
  ++counters_.files_refused;
  if (f.session == known_.session()) ++session_files_.refused;
  records_.refuse(refusal_record(f, known_.session(), reason), reason);
}

}  // namespace ddft::receiver
