#include "receiver/recovery.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "common/logging.hpp"

namespace ddft::receiver {

namespace {
std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}
}  // namespace

StartRecovery recover_at_start(OutputDir& out, OutcomeLog& journal, bool keep_partial) {
  StartRecovery r;
  // The last word on each file, in journal order.
  std::map<std::pair<uint64_t, uint32_t>, Outcome> last;
  for (Outcome& o : journal.read_all()) last[{o.session, o.file_id}] = std::move(o);
  for (auto& [key, o] : last) {
    r.known.push_back(key);
    if (o.kind != Outcome::Kind::kCommitting) continue;
    std::string error;
    if (!out.finish_renamed(o.rel_path, o.session, o.file_id, o.size, &error)) {
      if (!error.empty()) {
        // Not delivered: it stays under its name, but the next file list names it as failed.
        r.known.pop_back();
        spdlog::error(
            "Error: {}: renamed into place by an earlier run, but it cannot be synced "
            "now: {}",
            o.rel_path, error);
      }
      continue;  // not there: its temporary file, if any, is a leftover below
    }
    ++r.delivered;
    o.kind = Outcome::Kind::kPassed;
    journal.append(o);
    spdlog::info(
        "Info: {}: delivered by an earlier run of the receiver (session {:016x}, file "
        "{}), which stopped before logging it; synced now",
        o.rel_path, o.session, o.file_id);
    const std::string key_text =
        o.key_hex.size() >= 8
            ? fmt::format("Key: 0x{}, {} Passed", upper(o.key_hex.substr(0, 8)), o.verify)
            : std::string("Key: none, NONE Not verified");
    spdlog::info("File: {}, Trans: {} (bytes), Time: 00:00:00.000, Rate: 0.000 (MB/s), {}",
                 o.rel_path, common::with_commas(o.size), key_text);
  }
  for (const Leftover& l : out.recover_leftovers(keep_partial)) {
    ++r.leftovers;
    const std::string where = l.record.empty() ? "could not be written" : l.record;
    if (!l.named) {
      // A file from before origins were written (or whose origin is damaged): only its
      // temporary name says which session and file it was.
      spdlog::warn(
          "Warn: {}: left incomplete by an earlier run of the receiver; moved to the "
          "failed folder (record: {})",
          l.temp_path, where);
    } else {
      Outcome o;
      o.kind = Outcome::Kind::kFailed;
      o.session = l.session;
      o.file_id = l.file_id;
      o.size = l.size;
      o.rel_path = l.rel_path;
      journal.append(o);
      spdlog::error(
          "Error: {} FAILED: the receiver stopped (crash, kill or power cut) while the "
          "file was being received; found at start-up (session {:016x}, file {}); "
          "received {} of {} bytes{}{}; record: {}",
          l.rel_path, l.session, l.file_id, common::with_commas(l.bytes_present),
          common::with_commas(l.size),
          l.missing_text.empty() ? "" : "; missing bytes " + l.missing_text + " (as far as known)",
          l.data_kept ? "; partial data kept" : "; partial data removed", where);
    }
    if (l.session != 0) r.known.emplace_back(l.session, l.file_id);
  }
  return r;
}

}  // namespace ddft::receiver
