#include "receiver/assembly/file_table.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/channel_name.hpp"
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
      finisher_(cfg, out, fs, clock, engine, blocks_, records, counters, *this),
      settled_(duration_cast<nanoseconds>(duration<double>(cfg.journal_hours * 3600))),
      one_lane_(cfg),
      zframes_(cfg.compress_buffer_mb << 20) {
  records_.set_sender_of([this](uint64_t s) {
    const Scope* sc = scope_of(s);
    return sc != nullptr && sc->gate != nullptr ? sc->gate->sender_id() : uint64_t{0};
  });
  records_.set_on_recorded([this](const common::FileIdentity& f, const std::string& where) {
    for (auto& [s, sc] : scopes_) {
      if (sc->history.resolves(f)) {
        sc->history.recorded(f, where);
        return;
      }
    }
    settled_.add(f.session, f.file_id, clock_.now(), SettledFiles::Fate::kFailed, where);
  });
}

FileTable::~FileTable() = default;

void FileTable::set_earlier(
    OutcomeLog* journal, const std::vector<std::pair<uint64_t, uint32_t>>& known,
    const std::vector<std::pair<std::pair<uint64_t, uint32_t>, std::string>>& failed) {
  journal_ = journal;
  for (auto& [s, sc] : scopes_) sc->history.set_journal(journal);
  const auto now = clock_.now();
  settled_.add_all(known, now, SettledFiles::Fate::kPassed);
  for (const auto& [key, record] : failed) {
    settled_.add(key.first, key.second, now, SettledFiles::Fate::kFailed, record);
  }
  finisher_.set_journal(journal);
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
  auto it = files_.find({cur_->session, id});
  return it == files_.end() ? nullptr : it->second.get();
}

void FileTable::handle_announce(const Packet& p, size_t lane) {
  Scope* sc = select(p);
  if (sc == nullptr) return;
  common::Announce a;
  if (common::decode_announce(p.payload, &a) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  const bool striped = (p.header.flags & common::kFlagStriped) != 0;
  if (File* known = find(a.file_id)) {
    // A striped file's announce on one more lane: that lane is done with its earlier files.
    if (sc->lanes.announced_again(*known, lane, striped)) {
      close_lane(lane, a.file_id, known->channel);
    }
    return;
  }
  if (sc->known.seen(a.file_id)) return;  // a repeat of a file finished already
  sc->listed.drop(a.file_id);             // a list named it before it came
  // An earlier run of this receiver finished it, or named it as failed at start-up (the file it
  // left behind), or the sender's history named it missed: the rest of its packets are not
  // recorded a second time.
  const bool earlier = sc->known.known_earlier(a.file_id);
  // A channel's name as the sender's --channel allows it; anything else is no channel.
  std::string channel((p.header.flags & common::kFlagChannel) != 0 ? channel_of(a.path)
                                                                   : std::string_view());
  if (!channel.empty() && common::channel_name_refusal(channel)) channel.clear();
  remember_seen(a.file_id);  // from now on a repeat of this announce is ignored
  sc->known.note_announced(a.file_id, channel);
  if (earlier) {
    ++counters_.listed_known;
    return;
  }
  // A repeated announce of a file this receiver never saw start: it joined mid-file.
  const bool joined_late = (p.header.flags & common::kFlagRepeat) != 0;
  close_lane(lane, a.file_id, channel);
  std::unique_ptr<File> f =
      file_from_announce(a, sc->session, clock_.now(), cfg_.report_mb * 1024 * 1024);
  f->channel = channel;
  if (sc->gate != nullptr) f->sender = sc->gate->label();
  sc->lanes.open(*f, lane, striped);
  if (sc->history.skip_copy(*f, (p.header.flags & common::kFlagResend) != 0)) return;
  if (sc->admission.filtered(*f)) return;
  std::optional<std::string> why = striped ? sc->lanes.striped_refusal() : std::nullopt;
  File* evict = nullptr;
  if (!why) why = sc->admission.refusal(a, *f, &evict);
  if (why) {
    sc->admission.refuse(*f, *why);
    return;
  }
  if (evict != nullptr) fail(*evict, sc->admission.evict_reason());
  accept(std::move(f), joined_late);
}

// Each lane sends a channel's files one after the other, in the order of their ids (the sender
// numbers them as it reads them and hands each lane its share in that order); other channels'
// files interleave with them.
void FileTable::close_lane(size_t lane, uint32_t next_id, const std::string& channel) {
  const auto now = clock_.now();
  for (auto& [key, f] : files_) {
    if (key.first == cur_->session && f->channel == channel) {
      cur_->lanes.close(*f, lane, next_id, now);
    }
  }
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
  files_.emplace(std::make_pair(raw->session, raw->id), std::move(f));
  ++raw->ops_pending;  // keeps it in the table until on_created()
  auto ok = std::make_shared<bool>(false);
  auto why = std::make_shared<std::string>();
  fs_.post(
      [this, raw, o = std::move(o), ok, why, tmp = temp_name(raw->session, raw->id)] {
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
    if (Scope* sc = scope_of(f.session)) {
      sc->admission.refuse(f, reason);
    } else {
      ++counters_.files_refused;
      records_.refuse(refusal_record(f, f.session, reason), reason);
    }
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

void FileTable::handle_end(const Packet& p, size_t lane) {
  Scope* sc = select(p);
  if (sc == nullptr) return;
  common::End e;
  if (common::decode_end(p.payload, &e) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = find(e.file_id);
  if (f == nullptr || f->state != FileState::kReceiving) return;  // finished, or finishing
  const bool closes = sc->lanes.close_on_end(*f, e, lane);
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
  if (select(p) == nullptr) return;
  common::Abort a;
  if (common::decode_abort(p.payload, &a) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = find(a.file_id);
  if (f == nullptr || f->state == FileState::kFailing) return;
  fail(*f, "sender aborted the file: " + std::string(a.reason));
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
  f.fail_reason = reason + lanes_of(f).note(f);
  if (f.bytes_received == 0) f.record_slot = records_.take_slot(f.end_seen);
  blocks_.flush_for_failure(f);
  advance(f);
}

void FileTable::passed(File& f) {
  settled_.add(f.session, f.id, clock_.now(), SettledFiles::Fate::kPassed);
  if (!f.resend_of) return;
  if (Scope* sc = scope_of(f.session)) {
    sc->history.resolve(f);
  } else {
    settled_.add(f.resend_of->session, f.resend_of->file_id, clock_.now(),
                 SettledFiles::Fate::kPassed);
  }
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
  for (auto& [s, sc] : scopes_) sc->listed.release(now);
}

void FileTable::check_timeouts() {
  const auto now = clock_.now();
  const auto timeout = duration_cast<nanoseconds>(duration<double>(cfg_.file_timeout_s));
  std::vector<std::pair<File*, std::string>> expired;
  for (auto& [key, f] : files_) {
    if (f->state != FileState::kReceiving) continue;
    const FileLanes& lanes = lanes_of(*f);
    auto why = expiry_reason(*f, now, timeout, cfg_.file_timeout_s, lanes.final_due(*f, now),
                             lanes.sleep_heard(*f));
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

// The data path: kData packets, and kZData pieces gathered into compressed blocks and taken,
// once decompressed, as the data packets of their chunks.

File* FileTable::receiving(uint32_t id) {
  File* f = find(id);
  if (f != nullptr && f->state == FileState::kReceiving) return f;
  // A filtered file's packets are expected: counted apart from those of unknown files, which
  // point at trouble.
  if (f == nullptr && cur_->known.filtered(id)) {
    ++counters_.filtered_packets;
  } else {
    ++counters_.unknown_file;
  }
  return nullptr;
}

void FileTable::handle_data(const Packet& p, bool rebuilt) {
  if (select(p) == nullptr) return;
  common::DataHeader d;
  std::span<const uint8_t> data;
  if (common::decode_data(p.payload, &d, &data) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = receiving(d.file_id);
  if (f == nullptr) return;
  const uint64_t idx = d.offset / f->chunk_size;
  const uint64_t expect_len =
      idx < f->chunks_total ? std::min<uint64_t>(f->chunk_size, f->size - d.offset) : 0;
  if (d.offset % f->chunk_size != 0 || idx >= f->chunks_total || data.size() != expect_len) {
    ++counters_.bad_data;
    return;
  }
  f->last_packet = clock_.now();
  if (f->has_chunk(idx)) {
    ++counters_.duplicates;
    return;
  }
  if (!store_chunk(f, idx, data, d.copy)) return;
  if (rebuilt) {
    ++f->repairs.fec_rebuilt;
    ++counters_.fec_rebuilt_used;
  }
  if (f->end_seen && f->chunks_received == f->chunks_total) advance(*f);
}

bool FileTable::store_chunk(File*& f, uint64_t idx, std::span<const uint8_t> data, uint8_t copy) {
  if (f->bytes_received == 0) f->first_data = f->last_packet;
  // A chunk may straddle two write blocks: copy each piece into its block.
  const size_t block_size = blocks_.block_size();
  uint64_t off = idx * f->chunk_size;
  size_t pos = 0;
  while (pos < data.size()) {
    const uint64_t bidx = off / block_size;
    const size_t in_block = static_cast<size_t>(off % block_size);
    const size_t take = std::min(data.size() - pos, block_size - in_block);
    Block* b = get_block(f, bidx);
    if (b == nullptr) return false;  // the file failed while room was being made
    const bool full = FileBlocks::fill(*b, in_block, data.subspan(pos, take));
    pos += take;
    off += take;
    if (full && !f->evicted.count(bidx)) blocks_.on_filled(*f, *b);
  }
  f->set_chunk(idx);
  ++f->chunks_received;
  f->last_copy = copy;
  if (copy > 0) {  // the first copy missed it (else this one would have been a duplicate)
    ++f->repairs.repeat_filled;
    ++counters_.repeat_filled;
  }
  f->bytes_received += data.size();
  // The clock is read only when a line is due (not once a packet).
  if (f->bytes_received >= f->next_report) {
    progress_.report(*f, clock_.now(), cfg_.report_mb * 1024 * 1024);
  }
  return true;
}

void FileTable::handle_zdata(const Packet& p, bool rebuilt) {
  if (select(p) == nullptr) return;
  common::ZDataHeader z;
  std::span<const uint8_t> piece;
  if (common::decode_zdata(p.payload, &z, &piece) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = receiving(z.file_id);
  if (f == nullptr) return;
  if (!zdata_fits(*f, z, piece.size())) {
    ++counters_.bad_data;
    return;
  }
  f->last_packet = clock_.now();
  const uint64_t first = z.offset / f->chunk_size;
  const uint64_t chunks = (z.raw_len + f->chunk_size - 1) / f->chunk_size;
  uint64_t have = 0;
  while (have < chunks && f->has_chunk(first + have)) ++have;
  if (have == chunks) {  // the block came whole already (an earlier copy)
    ++counters_.duplicates;
    return;
  }
  const ZFrames::Result r =
      zframes_.add(f->session, f->id, z, piece, common::zdata_piece_size(f->chunk_size), rebuilt);
  publish_zframe_counters();
  switch (r.status) {
    case ZFrames::Status::kPending:
      return;
    case ZFrames::Status::kDuplicate:
      ++counters_.duplicates;
      return;
    case ZFrames::Status::kMismatch:
      ++counters_.bad_data;
      return;
    case ZFrames::Status::kBad:
      fail(*f, r.error);
      return;
    case ZFrames::Status::kComplete:
      break;
  }
  for (uint64_t i = 0; i < chunks; ++i) {
    if (f->has_chunk(first + i)) continue;
    const size_t at = static_cast<size_t>(i * f->chunk_size);
    const size_t len = std::min<size_t>(f->chunk_size, r.raw.size() - at);
    if (!store_chunk(f, first + i, r.raw.subspan(at, len), z.copy)) return;
  }
  // The block's rebuilt pieces went into the file now (a piece of a block never completed, or
  // dropped for room, went into nothing).
  f->repairs.fec_rebuilt += r.rebuilt;
  counters_.fec_rebuilt_used += r.rebuilt;
  if (f->end_seen && f->chunks_received == f->chunks_total) advance(*f);
}

void FileTable::publish_zframe_counters() {
  const ZFrames::Counters& z = zframes_.counters();
  // Dropped unfinished blocks: the first, then each time the count doubles (a bounded log).
  if (z.frames_evicted > counters_.zblocks_evicted &&
      (z.frames_evicted & (z.frames_evicted - 1)) == 0) {
    spdlog::warn(
        "Warn: the compressed-block buffer (--compress-buffer-mb {}) is full: {} unfinished "
        "block(s) dropped so far, each missing unless a later copy brings it whole; on a lossy "
        "link use --fec, or a larger --compress-buffer-mb",
        cfg_.compress_buffer_mb, z.frames_evicted);
  }
  counters_.zblocks_done = z.frames_done;
  counters_.zblocks_bad = z.frames_bad;
  counters_.zblocks_evicted = z.frames_evicted;
  counters_.zframe_bytes = z.frame_bytes;
  counters_.zraw_bytes = z.raw_bytes;
}

}  // namespace ddft::receiver
