#include "receiver/assembly/listed_files.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "common/json.hpp"
#include "receiver/assembly/file_rules.hpp"

namespace ddft::receiver {
using common::DecodeStatus;
using common::Packet;

ListedFiles::ListedFiles(const ReceiverConfig& cfg, OutputDir& out, FailureRecords& records,
                         common::Clock& clock, AssemblerCounters& counters,
                         SessionFiles& session_files, KnownFiles& known, const FilesInFlight& files)
    : cfg_(cfg),
      out_(out),
      records_(records),
      clock_(clock),
      counters_(counters),
      session_files_(session_files),
      known_(known),
      files_(files) {}

bool ListedFiles::heard_of(uint32_t id) const {
  return files_.count({known_.session(), id}) != 0 || known_.seen(id) || known_.filtered(id);
}

void ListedFiles::handle(const Packet& p, size_t lane) {
  common::FileList list;
  if (common::decode_file_list(p.payload, &list) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  // The sender's lane this list came down, as its heartbeats say (before the first, a receiver
  // of one lane takes it for the sender's lane 0).
  int here = gate_ == nullptr ? 0 : gate_->sender_lane(lane);
  if (here < 0 && (gate_ == nullptr || gate_->lanes() == 1)) here = 0;
  for (const common::FileListEntry& e : list.entries) {
    // Known to this run (in flight, finished, refused or filtered), or to an earlier one: its
    // outcome is written already, or will be.
    if (auto rec = records_.take_unnamed(known_.session(), e.file_id)) {
      // It failed with nothing received and its record was left out under the flood bound:
      // the list vouches for it now.
      records_.write_named(std::move(*rec), /*vouched=*/true);
      continue;
    }
    if (heard_of(e.file_id)) continue;
    if (known_.known_earlier(e.file_id)) {
      known_.remember_seen(e.file_id, clock_.now());
      ++counters_.listed_known;
      continue;
    }
    // A resend that never came: a copy; the file it copies is named (or delivered) on its own.
    if (e.resend) {
      known_.remember_seen(e.file_id, clock_.now());
      continue;
    }
    // A list that came down the lane that carried the file comes after the file's end there:
    // the file is lost. A list from another lane may overtake the file: it waits for its lane.
    // (A sender before lanes does not say, and has one lane.)
    const bool own_lane = e.lane == common::kLaneUnsaid || (e.lane >= 0 && e.lane == here);
    if (!own_lane) {
      hold(e);
      continue;
    }
    held_.erase(e.file_id);
    known_.remember_seen(e.file_id, clock_.now());
    record_unannounced(e);
  }
}

void ListedFiles::hold(const common::FileListEntry& e) {
  if (held_.count(e.file_id) != 0) return;
  if (held_.size() >= kHeldMax) release(common::Clock::time_point::max());
  auto h = std::make_unique<HeldEntry>();
  h->path = std::string(e.path);
  h->entry = e;
  h->entry.path = h->path;
  held_.emplace(e.file_id, std::move(h));
}

std::optional<std::string> ListedFiles::held_due(int sender_lane, common::Clock::time_point now,
                                                 const char* ended, bool* drop) const {
  *drop = false;
  if (now == common::Clock::time_point::max()) return std::string(" (too many files waiting)");
  const size_t lanes = gate_ == nullptr ? 1 : gate_->lanes();
  const auto gone = [&](size_t lane) {
    return ended != nullptr || gate_ == nullptr || gate_->gone(lane, now);
  };
  const auto all_gone = [&] {
    for (size_t i = 0; i < lanes; ++i) {
      if (!gone(i)) return false;
    }
    return true;
  };
  if (sender_lane == common::kLaneAll) {
    if (!all_gone()) return std::nullopt;
    return std::string(" (striped over every lane)");
  }
  const int lane = gate_ == nullptr ? 0 : gate_->lane_of_sender(sender_lane);
  if (lane >= 0) {
    if (!gone(static_cast<size_t>(lane))) return std::nullopt;
    return fmt::format(" (lane {}, {}{}{})", lane, cfg_.lane_name(static_cast<size_t>(lane)),
                       ended != nullptr ? "; " : "", ended != nullptr ? ended : "");
  }
  // No lane here carries it. When every lane here has said which it carries, that lane is not
  // listened on here: if the sender says it goes to this host, nothing here will ever bring the
  // file; else it is another receiver's. Otherwise it is perhaps the lane here that never came
  // up, settled once every lane is gone.
  if (gate_ != nullptr && gate_->all_lanes_named()) {
    if (gate_->sender_lane_to_this_host(sender_lane)) {
      return fmt::format(
          " (the sender's lane {} goes to this receiver's host, but no --listen here takes it)",
          sender_lane);
    }
    *drop = true;
    return std::nullopt;
  }
  if (!all_gone()) return std::nullopt;
  return fmt::format(" (the sender's lane {}: no packet of it reached this receiver)", sender_lane);
}

void ListedFiles::end_session(bool receiver_stopping) {
  release(clock_.now(), receiver_stopping ? "the receiver stopped before that lane brought it"
                                          : "the session ended before that lane brought it");
  held_.clear();  // none is left: each was recorded or left to another receiver
}

void ListedFiles::release(common::Clock::time_point now, const char* ended) {
  for (auto it = held_.begin(); it != held_.end();) {
    const uint32_t id = it->first;
    if (heard_of(id)) {
      it = held_.erase(it);  // it came after all
      continue;
    }
    bool drop = false;
    const std::optional<std::string> note = held_due(it->second->entry.lane, now, ended, &drop);
    if (drop) {
      ++counters_.listed_elsewhere;
      spdlog::info("Info: {}: left to the receiver of the sender's lane {}{}",
                   common::json_quote(it->second->path), it->second->entry.lane,
                   gate_->knows_lane_hosts() ? " (another host)"
                                             : " (the sender does not say where its lanes go)");
      it = held_.erase(it);
      continue;
    }
    if (!note) {
      ++it;
      continue;
    }
    const std::unique_ptr<HeldEntry> h = std::move(it->second);
    it = held_.erase(it);
    known_.remember_seen(id, clock_.now());
    record_unannounced(h->entry, *note);
    if (now == common::Clock::time_point::max()) return;  // one made room
  }
}

std::optional<std::string> ListedFiles::sent_before_joining(const common::FileListEntry& e) const {
  if (gate_ == nullptr) return std::nullopt;
  const int lane = e.lane >= 0 ? gate_->lane_of_sender(e.lane) : gate_->lanes() == 1 ? 0 : -1;
  if (lane < 0) return std::nullopt;
  const uint64_t first = gate_->first_seq(static_cast<size_t>(lane));
  // The receiver heard its lane from the session's first packet on, or the file came after the
  // first file it heard announced (of its channel): it was on the wire while the receiver was
  // receiving.
  if (first == 0 || first == UINT64_MAX) return std::nullopt;
  const KnownFiles::Sent sent = known_.sent_when(e.file_id, e.path);
  if (sent == KnownFiles::Sent::kWhileReceiving) return std::nullopt;
  return fmt::format(
      "never announced to this receiver: sent before its first packet of the session (packet "
      "{} of the lane{}), while it was not receiving{}",
      first, e.aborted ? "; the sender aborted it" : "",
      sent == KnownFiles::Sent::kUnknown
          ? ", or all its packets lost (no file of its channel was heard yet)"
          : "");
}

void ListedFiles::record_unannounced(const common::FileListEntry& e, const std::string& lane_note) {
  FailureRecord rec = unannounced_record(e, known_.session());
  if (auto before = sent_before_joining(e)) rec.reason = std::move(*before);
  rec.reason += lane_note;
  if (record_unheard(std::move(rec), e.lane, "file list")) ++counters_.files_unannounced;
}

bool ListedFiles::record_unheard(FailureRecord rec, int sender_lane, const char* named_by) {
  const bool current = rec.file.session == known_.session();
  // What its announce would have met: a name the receiver refuses is refused, a filtered one is
  // policy; either way as the announce would have been handled.
  if (auto why = out_.check_path(rec.file.path)) {
    ++counters_.files_refused;
    if (current) ++session_files_.refused;
    records_.refuse(refusal_record(named_file(rec.file), rec.file.session, *why), *why);
    return false;
  }
  if (!cfg_.filter.empty()) {
    if (auto why = cfg_.filter.refusal(rec.file.path)) {
      ++counters_.files_filtered;
      if (current) {
        ++session_files_.filtered;
        known_.remember_filtered(rec.file.file_id);
      }
      spdlog::info("Info: filtered {}: {} (named by the sender's {})",
                   common::json_quote(rec.file.path), *why, named_by);
      return false;
    }
  }
  ++counters_.files_failed;
  if (current) ++session_files_.failed;
  if (current && gate_ != nullptr && gate_->lanes() > 1) {
    if (sender_lane == common::kLaneAll) {
      rec.lane = common::kLaneAll;  // "lane": "striped", as for a striped file that failed
    } else if (sender_lane >= 0) {
      const int lane = gate_->lane_of_sender(sender_lane);
      rec.lane = lane >= 0 ? lane : sender_lane;
    }
  }
  records_.write_named(std::move(rec), /*vouched=*/true);
  return true;
}

}  // namespace ddft::receiver
