#include "receiver/assembly/file_table.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/json.hpp"
#include "common/log_format.hpp"
#include "receiver/assembly/file_rules.hpp"

namespace ddft::receiver {
using namespace std::chrono;
using common::DecodeStatus;
using common::Packet;

FileTable::FileTable(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs, common::Clock& clock,
                     WriteEngine& engine, FailureRecords& records, AssemblerCounters& counters)
    : cfg_(cfg),
      out_(out),
      fs_(fs),
      clock_(clock),
      engine_(engine),
      records_(records),
      counters_(counters),
      blocks_(engine),
      finisher_(cfg, out, fs, clock, engine, blocks_, records, counters, session_files_, *this),
      files_bound_(files_in_flight_bound(cfg.max_files_in_flight)),
      settled_(duration_cast<nanoseconds>(duration<double>(cfg.journal_hours * 3600))),
      zframes_(cfg.compress_buffer_mb << 20) {
  records_.set_sender_of([this](uint64_t s) {
    return gate_ != nullptr && s == session_ ? gate_->sender_id() : uint64_t{0};
  });
  records_.set_on_recorded([this](const common::FileIdentity& f, const std::string& where) {
    settled_.add(f.session, f.file_id, clock_.now(), SettledFiles::Fate::kFailed, where);
  });
}

void FileTable::set_earlier(
    OutcomeLog* journal, const std::vector<std::pair<uint64_t, uint32_t>>& known,
    const std::vector<std::pair<std::pair<uint64_t, uint32_t>, std::string>>& failed) {
  journal_ = journal;
  const auto now = clock_.now();
  settled_.add_all(known, now, SettledFiles::Fate::kPassed);
  for (const auto& [key, record] : failed) {
    settled_.add(key.first, key.second, now, SettledFiles::Fate::kFailed, record);
  }
  finisher_.set_journal(journal);
}

void FileTable::start_session(uint64_t s) {
  session_ = s;
  seen_ids_.clear();
  filtered_ids_.clear();
  first_id_ = 0;
  records_.clear_unnamed();
  session_files_ = {};
  resends_.clear();
}

void FileTable::fail_receiving(const std::string& reason) {
  // Files still receiving never get the rest of their data. Those whose end came are only
  // waiting for their writes: they finish on their own (they are keyed by session, so a new
  // session's files cannot clash with them).
  std::vector<File*> open;
  for (auto& [key, f] : files_) {
    if (f->state == FileState::kReceiving) open.push_back(f.get());
  }
  for (File* f : open) fail(*f, reason);
}

void FileTable::close_unrecorded(const std::string& reason) {
  std::vector<File*> open;
  for (auto& [key, f] : files_) {
    if (!f->record_posted) open.push_back(f.get());
  }
  for (File* f : open) {
    f->state = FileState::kFailing;
    if (f->fail_reason.empty()) f->fail_reason = reason;
    finisher_.record_failure(*f);
  }
}

File* FileTable::find(uint32_t id) {
  auto it = files_.find({session_, id});
  return it == files_.end() ? nullptr : it->second.get();
}

void FileTable::remember_seen(uint32_t id) {
  seen_ids_.insert(id);
  settled_.add(session_, id, clock_.now());
}

void FileTable::handle_announce(const Packet& p, size_t lane) {
  common::Announce a;
  if (common::decode_announce(p.payload, &a) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  if (File* known = find(a.file_id)) {
    announce_again(*known, p, lane);
    return;
  }
  if (seen_ids_.contains(a.file_id)) return;  // a repeat of a file finished already
  held_.erase(a.file_id);                     // a list named it before it came
  // An earlier run of this receiver finished it, or named it as failed at start-up (the file it
  // left behind), or the sender's history named it missed: the rest of its packets are not
  // recorded a second time.
  const bool earlier = known_earlier(a.file_id);
  remember_seen(a.file_id);  // from now on a repeat of this announce is ignored
  if (first_id_ == 0) first_id_ = a.file_id;
  if (earlier) {
    ++counters_.listed_known;
    return;
  }
  // A repeated announce of a file this receiver never saw start: it joined mid-file.
  const bool joined_late = (p.header.flags & common::kFlagRepeat) != 0;
  close_lane(lane, a.file_id);
  std::unique_ptr<File> f =
      file_from_announce(a, session_, clock_.now(), cfg_.report_mb * 1024 * 1024);
  f->lane = lane;
  f->striped = (p.header.flags & common::kFlagStriped) != 0;
  f->lanes_seen = uint64_t{1} << lane;
  // A striped file comes down every lane (those that have not announced it yet may still be
  // busy with earlier files).
  const size_t lanes = gate_ == nullptr ? 1 : gate_->lanes();
  f->open_lanes = !f->striped   ? f->lanes_seen
                  : lanes >= 64 ? ~uint64_t{0}
                                : (uint64_t{1} << lanes) - 1;
  if (skip_copy(*f, (p.header.flags & common::kFlagResend) != 0)) return;
  if (filtered(*f)) return;
  std::optional<std::string> why = f->striped ? striped_refusal() : std::nullopt;
  if (!why) why = refusal(a, *f);
  if (why) {
    refuse(*f, *why);
    return;
  }
  accept(std::move(f), joined_late);
}

// Receive filters are policy, not a failure: logged and counted, no record. They apply to
// acceptable names only, so a hostile name is refused (and recorded) as such whatever the
// patterns say. The file's data and end packets are then dropped as of an unknown file.
bool FileTable::filtered(const File& f) {
  if (cfg_.filter.empty() || out_.check_path(f.path)) return false;
  auto why = cfg_.filter.refusal(f.path);
  if (!why) return false;
  ++counters_.files_filtered;
  ++session_files_.filtered;
  filtered_ids_.insert(f.id);
  spdlog::info("Info: filtered {}: {}", common::json_quote(f.path), *why);
  return true;
}

// Why the announce of `f` is refused (nullopt when it is accepted: room was made for it).
std::optional<std::string> FileTable::refusal(const common::Announce& a, const File& f) {
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
  if (std::string why; !make_room(&why)) return why;
  return std::nullopt;
}

bool FileTable::make_room(std::string* why) {
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
  File* oldest = nullptr;
  for (auto& [key, f] : files_) {
    if (f->state == FileState::kFailing) ++failing;
    if (f->state != FileState::kReceiving) continue;
    ++receiving;
    if (oldest == nullptr || f->announced < oldest->announced) oldest = f.get();
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
    fail(*oldest, fmt::format("more than {} files in flight (--max-files-in-flight): the "
                              "oldest fails to make room for a new one",
                              cfg_.max_files_in_flight));
  }
  return true;
}

// Accepted. The temporary file is made on the pool; data that comes meanwhile waits in its
// write blocks.
void FileTable::accept(std::unique_ptr<File> f, bool joined_late) {
  f->bitmap.assign(f->chunks_total / 64 + 1, 0);
  f->hasher = common::make_hasher(f->verify);
  f->joined_late = joined_late;
  if (joined_late) ++counters_.files_joined_late;
  Origin o = origin_of(*f, sender_ ? sender_() : std::string());
  File* raw = f.get();
  files_.emplace(std::make_pair(session_, raw->id), std::move(f));
  ++raw->ops_pending;  // keeps it in the table until on_created()
  auto ok = std::make_shared<bool>(false);
  auto why = std::make_shared<std::string>();
  fs_.post(
      [this, raw, o = std::move(o), ok, why, tmp = temp_name(session_, raw->id)] {
        *ok = out_.create_temp(o.file.path, tmp, &raw->tmp, why.get(), &o);
      },
      [this, raw, ok, why] { on_created(*raw, *ok, *why); });
}

void FileTable::on_created(File& f, bool ok, const std::string& reason) {
  --f.ops_pending;
  if (!ok) {
    // Refused after all (the folder or the disk would not have it): like a refusal at the
    // announce, with what arrived meanwhile dropped.
    if (f.state == FileState::kFailing) {
      f.fail_reason = "cannot create the temporary file: " + reason;
      advance(f);
      return;
    }
    refuse(f, reason);
    f.state = FileState::kFailing;
    f.record_posted = true;  // refuse() wrote the record
    end(f);
    return;
  }
  f.tmp_ready = true;
  if (f.state != FileState::kFailing) {
    spdlog::info("Info: {}, Size: {} (bytes) . . . receiving{}{}", f.path,
                 common::with_commas(f.size),
                 f.pause_s ? fmt::format(" (send pausing {} seconds)", f.pause_s) : "",
                 f.joined_late ? " (joined mid-file: its first packets went before this "
                                 "receiver started)"
                               : "");
  }
  // Blocks filled while the file was being made go out now.
  blocks_.submit_waiting(f, /*full_only=*/f.state == FileState::kReceiving);
  advance(f);
}

// A refused announce: counted, logged, and recorded in the failed folder (at a bounded rate).
void FileTable::refuse(const File& f, const std::string& reason) {
  ++counters_.files_refused;
  if (f.session == session_) ++session_files_.refused;
  records_.refuse(refusal_record(f, session_, reason), reason);
}

void FileTable::handle_end(const Packet& p, size_t lane) {
  common::End e;
  if (common::decode_end(p.payload, &e) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = find(e.file_id);
  if (f == nullptr || f->state != FileState::kReceiving) return;  // finished, or finishing
  // The last copy's end closes its lane for the file: a striped file's data may still come
  // down the lanes that have not sent theirs.
  const uint64_t bit = uint64_t{1} << lane;
  const bool closes = e.copy + 1u >= std::max<uint8_t>(1, e.copies) && (f->open_lanes & bit);
  if (closes) f->open_lanes &= ~bit;
  if (closes && f->end_seen && f->open_lanes == 0) f->end_seen_at = clock_.now();
  if (f->end_seen && e.copy <= f->end.copy) return;  // a repeat of an end already seen
  const bool key_changed = f->end_seen && (e.key_len != f->end.key_len || e.key != f->end.key);
  f->end_seen = true;
  f->end = e;
  f->last_packet = clock_.now();
  if (e.size != f->size || e.verify != f->verify) {
    fail(*f, "end packet does not match the announce (size or verification type)");
    return;
  }
  if (key_changed) {
    fail(*f, fmt::format("the file changed between copy {} and copy {} (--repeat)", e.copy,
                         e.copy + 1));
    return;
  }
  // Missing data may still be in flight behind the end packet (reordering): check_timeouts()
  // fails the file if it is still incomplete after a short grace.
  f->end_seen_at = f->last_packet;
  advance(*f);
}

void FileTable::handle_abort(const Packet& p) {
  common::Abort a;
  if (common::decode_abort(p.payload, &a) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = find(a.file_id);
  if (f == nullptr || f->state == FileState::kFailing) return;
  fail(*f, "sender aborted the file: " + std::string(a.reason));
}

// Block `index` of *f. When every block is taken, makes room: what that reaps may fail or end
// any file, *f too, so *f is found again by its key afterwards (null: the caller drops the
// packet's data, as the file is no longer receiving).
Block* FileTable::get_block(File*& f, uint64_t index) {
  if (Block* b = blocks_.find_or_take(*f, index)) return b;
  const uint32_t id = f->id;
  f = nullptr;  // may dangle from here until found again
  while (!engine_.has_free()) {
    pump(false);
    if (engine_.has_free()) break;
    if (!engine_.backlog_empty() || engine_.in_flight() > 0) {
      pump(true);
    } else if (!evict_one()) {
      // Every block is held by files whose temporary file is still being made, or by the
      // committer's work: wait for the pool (the ring holds the link's data meanwhile).
      fs_.wait(milliseconds(10));
    }
  }
  f = find(id);
  if (f == nullptr || f->state != FileState::kReceiving) return nullptr;
  return blocks_.find_or_take(*f, index);
}

// Called when every block is taken and no write is in flight: blocks are held either because an
// earlier hole keeps them from being hashed, or because they have holes themselves. Give up
// in-order hashing for one file (it is verified by reading it back) and write its blocks out.
bool FileTable::evict_one() {
  File* victim = nullptr;
  for (auto& [key, f] : files_) {
    if (f->state == FileState::kReceiving && f->tmp_ready && !f->blocks.empty() &&
        (victim == nullptr || f->announced < victim->announced)) {
      victim = f.get();
    }
  }
  if (victim == nullptr) {
    if (fs_.pending() > 0) return false;  // blocks wait for files being made
    throw std::logic_error("write pool exhausted with no block to evict");
  }
  spdlog::warn(
      "Warn: {}: data arrived out of order beyond the write buffers; it will be "
      "verified by reading it back",
      victim->path);
  blocks_.evict(*victim);
  return true;
}

void FileTable::pump(bool wait) {
  engine_.flush_backlog();
  size_t n = fs_.reap() + engine_.reap(false);
  process_completions();
  if (wait && n == 0) {
    const bool io = engine_.in_flight() > 0;
    const bool calls = fs_.pending() > 0;
    if (io && !calls) {
      engine_.reap(true);
      process_completions();
    } else if (calls && !io) {
      fs_.wait(milliseconds(50));
      fs_.reap();
    } else if (calls && io) {
      // Either may finish first and neither can wake the other's wait: short naps.
      fs_.wait(milliseconds(1));
      fs_.reap();
      engine_.reap(false);
      process_completions();
    }
  }
  engine_.flush_backlog();
}

void FileTable::process_completions() {
  engine_.handle_completions([this](const common::IoCompletion& c) {
    if ((c.cookie & Committer::kCookieMask) == Committer::kCookieTag) {
      finisher_.on_dir_synced(c.cookie, c.error);
      return;
    }
    progress_.note_write(c.latency_ns);
    advance(blocks_.on_write_done(c));
  });
}

// Moves a file on once its outstanding I/O allows it.
void FileTable::advance(File& f) {
  if (f.state == FileState::kFailing) {
    if (f.ops_pending == 0 && !f.record_posted) finisher_.record_failure(f);
    return;
  }
  if (f.state == FileState::kCommitting || f.state == FileState::kVerifying) return;  // not ours
  if (f.io_error != 0) {
    fail(f, fmt::format("write error: {}", std::strerror(f.io_error)));
    return;
  }
  if (f.state == FileState::kReceiving) {
    if (!f.end_seen || f.chunks_received < f.chunks_total) return;
    // All its data is in: it no longer counts as receiving (bounds, timeouts, a new session),
    // even while its temporary file is still being made.
    f.state = FileState::kEnding;
    if (!f.tmp_ready) return;  // on_created() writes its blocks and comes back here
    // Blocks written early (evicted) hold partial data that was not yet written.
    blocks_.submit_waiting(f, /*full_only=*/false);
  }
  if (f.state == FileState::kEnding && f.tmp_ready && f.ops_pending == 0) finisher_.finish(f);
}

void FileTable::fail(File& f, const std::string& reason) {
  if (f.state == FileState::kFailing || f.state == FileState::kCommitting ||
      f.state == FileState::kVerifying || f.state == FileState::kDone) {
    return;
  }
  f.state = FileState::kFailing;
  f.fail_reason = reason + lane_note(f);
  if (f.bytes_received == 0) f.record_slot = records_.take_slot(f.end_seen);
  blocks_.flush_for_failure(f);
  advance(f);
}

// The one place a file's life ends: its blocks go back and it leaves the table (freed now: see
// the header for why nothing up the stack still holds it).
void FileTable::end(File& f) {
  // A task or write still pending holds &f and would find it freed: the rule the header states,
  // checked here so that breaking it fails loudly and frees nothing.
  if (f.ops_pending != 0) {
    throw std::logic_error(
        fmt::format("file {} of session {:016x} ended with {} operation(s) pending", f.id,
                    f.session, f.ops_pending));
  }
  blocks_.release_all(f);
  zframes_.drop_file(f.session, f.id);
  f.state = FileState::kDone;
  auto it = files_.find({f.session, f.id});
  if (it != files_.end() && it->second.get() == &f) files_.erase(it);
}

void FileTable::note_ring_drops(const std::vector<DropLedger::Entry>& dropped, bool keyed) {
  uint64_t other = 0;
  for (const auto& e : dropped) {
    File* f = nullptr;
    // The ledger reads headers unchecked: with a key they may be forged, so drops are not pinned
    // on a file.
    if (e.file_id != 0 && !keyed) {
      auto it = files_.find({e.session, e.file_id});
      if (it != files_.end()) f = it->second.get();
    }
    if (f == nullptr) {
      other += e.count;
      continue;
    }
    f->ring_drops += e.count;
    spdlog::warn(
        "Warn: {}: {} packet(s) dropped, the receive buffer was full (the disk is not "
        "keeping up)",
        f->path, e.count);
  }
  if (other > 0) {
    spdlog::warn(
        "Warn: {} other packet(s) dropped, the receive buffer was full (the disk is not "
        "keeping up)",
        other);
  }
}

void FileTable::tick(common::Clock::time_point now) {
  if (now - last_timeout_check_ < milliseconds(100)) return;
  last_timeout_check_ = now;
  check_timeouts();
  release_held(now);
}

void FileTable::check_timeouts() {
  const auto now = clock_.now();
  const auto timeout = duration_cast<nanoseconds>(duration<double>(cfg_.file_timeout_s));
  std::vector<std::pair<File*, std::string>> expired;
  for (auto& [key, f] : files_) {
    if (f->state != FileState::kReceiving) continue;
    auto why = expiry_reason(*f, now, timeout, cfg_.file_timeout_s, final_due(*f, now));
    if (why) expired.emplace_back(f.get(), std::move(*why));
  }
  for (auto& [f, reason] : expired) fail(*f, reason);
}

size_t FileTable::finishing(uint64_t s) const {
  size_t n = 0;
  for (const auto& [key, f] : files_) {
    if (key.first == s && f->state != FileState::kReceiving && f->state != FileState::kFailing) {
      ++n;
    }
  }
  return n;
}

}  // namespace ddft::receiver
