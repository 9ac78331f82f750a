#include "sender/transmit/transmitter.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "common/history_wire.hpp"
#include "common/log_format.hpp"
#include "common/status_wire.hpp"
#include "sender/source/history_feed.hpp"
#include "sender/transmit/status_report.hpp"

namespace ddft::sender {
using common::Header;

uint64_t repeat_announce_interval(size_t announce_bytes) {
  return std::max<uint64_t>(uint64_t{1} << 20, uint64_t{1024} * announce_bytes);
}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
                         LaneHub& hub, size_t lane, LaneLoad* load)
    : Transmitter(cfg, session_id, sink, clock, pool, std::make_unique<QueueFeed>(in), nullptr,
                  nullptr, &hub, lane, load) {}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, WorkFeed& in, LaneHub& hub,
                         size_t lane, LaneLoad* load)
    : Transmitter(cfg, session_id, sink, clock, pool, nullptr, &in, nullptr, &hub, lane, load) {}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
                         SendObserver& observer)
    : Transmitter(cfg, session_id, sink, clock, pool, std::make_unique<QueueFeed>(in), nullptr,
                  std::make_unique<LaneHub>(1, cfg.watch_dir.empty(), observer), nullptr, 0,
                  nullptr) {}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, std::unique_ptr<WorkFeed> own_feed,
                         WorkFeed* feed, std::unique_ptr<LaneHub> own_hub, LaneHub* hub,
                         size_t lane, LaneLoad* load)
    : cfg_(cfg),
      session_id_(session_id),
      clock_(clock),
      pool_(pool),
      own_feed_(std::move(own_feed)),
      in_(feed ? *feed : *own_feed_),
      own_hub_(std::move(own_hub)),
      hub_(hub ? *hub : *own_hub_),
      lane_(lane),
      load_(load),
      chunk_size_(data_chunk_size(cfg)),
      // One lane: the words a sender before lanes said.
      out_(cfg, session_id, sink, clock,
           hub_.lanes() > 1 ? lane_label() + ": send failed" : "send failed", totals_,
           [this] { return heartbeat_of(false); }),
      lists_(cfg, out_, hub_.list(), clock, lane) {
  totals_.session_id = session_id;
}

void Transmitter::set_status(SendStatus* status) {
  status_ = status;
  out_.set_status(status);
  if (status_) status_->session_id.store(session_id_, std::memory_order_relaxed);
}

std::string Transmitter::lane_label() const {
  return fmt::format("lane {} ({})", lane_, cfg_.lane_name(lane_));
}

uint64_t Transmitter::carriers(const WorkItem& item) const {
  return item.lanes != 0 ? item.lanes : uint64_t{1} << lane_;
}

common::Heartbeat Transmitter::heartbeat_of(bool final) const {
  common::Heartbeat hb;
  hb.flags = final ? common::kHeartbeatFinal : 0;
  hb.interval_ms = cfg_.heartbeat_ms;
  hb.files_announced = files_announced_;  // by this lane
  hb.lane = static_cast<uint16_t>(lane_);
  hb.lanes = static_cast<uint16_t>(hub_.lanes());
  return hb;
}

void Transmitter::send_sender_info_if_due(bool last) {
  const auto now = clock_.now();
  // The session's first and then one every kSenderInfoIntervalS go control_repeat times; the
  // statuses between them once each (a receiver before kSenderInfo counts each as lost).
  bool full = !info_sent_ || now - last_info_ >= std::chrono::seconds(common::kSenderInfoIntervalS);
  std::optional<common::SenderStatus> status;
  if (report_ != nullptr) status = report_->due(lane_, now);
  if (!full && !status) return;
  if (full && report_ != nullptr && !status) status = report_->current(now);
  // The session's last word: the status as it ends (a short session's only other one was its
  // first), control_repeat times.
  if (last && report_ != nullptr) {
    status = report_->sample_now(now);
    full = true;
  }
  common::SenderInfo si;
  si.sender_id = cfg_.sender_id;
  si.host = cfg_.lane_hosts();
  // A config that names fewer lanes than the session drives (tests): each other lane a host of
  // its own.
  for (size_t k = si.host.size(); k < hub_.lanes(); ++k) si.host.push_back(static_cast<uint8_t>(k));
  si.host.resize(hub_.lanes());
  std::vector<uint8_t> tail;
  out_.send_control(
      [&](const Header& h, std::span<uint8_t> buf) {
        if (status && tail.empty()) {
          // The status takes the room the hosts leave (its channels as many as fit).
          const size_t used = common::kHeaderSize + common::kSenderInfoFixedSize + si.host.size();
          tail.resize(buf.size() > used ? buf.size() - used : 0);
          tail.resize(common::encode_sender_status(*status, tail));
          si.tail = tail;
        }
        return common::encode_sender_info(h, si, buf);
      },
      0, full ? 0 : 1);
  if (full) last_info_ = now;
  info_sent_ = true;
}

void Transmitter::send_heartbeat(bool final) {
  send_sender_info_if_due(final);
  common::Heartbeat hb = heartbeat_of(final);
  out_.send_control([&](const Header& h, std::span<uint8_t> buf) {
    hb.packets_sent = h.seq;
    return common::encode_heartbeat(h, hb, buf);
  });
  out_.close_window();
  out_.flush();
  out_.heartbeat_sent();
}

common::Announce Transmitter::announce_of(const FileMeta& meta) const {
  common::Announce a;
  a.file_id = meta.file_id;
  a.verify = cfg_.verify;
  a.size = meta.size;
  a.mtime_ns = meta.mtime_ns;
  a.mode = meta.mode;
  a.chunk_size = static_cast<uint32_t>(chunk_size_);
  a.path = meta.path_on_wire();
  return a;
}

uint16_t Transmitter::announce_flags(const FileMeta& meta, bool striped) {
  return static_cast<uint16_t>((striped ? common::kFlagStriped : 0) |
                               (meta.resend_of ? common::kFlagResend : 0) |
                               (meta.channel.empty() ? 0 : common::kFlagChannel));
}

void Transmitter::begin_file(const WorkItem& item) {
  FileProgress& f = open_[item.meta->file_id];
  cur_ = &f;
  if (item.copy == 0) {
    f = {item.meta, clock_.now(), 0, cfg_.report_mb * 1024 * 1024};
    ++files_announced_;
    // The announce as it goes on the wire (sealed with --key-file) sets the repeats' spacing.
    f.repeat_every = repeat_announce_interval(
        common::announce_datagram_size(item.meta->path_on_wire().size()) + out_.seal_overhead());
  } else {
    // A further copy: the same file id, so the receiver fills one copy's holes from the next.
    f.meta = item.meta;
    f.sent = 0;
    f.next_report = cfg_.report_mb * 1024 * 1024;
  }
  f.copy = item.copy;
  f.striped = item.striped;
  f.next_repeat = f.repeat_every;  // each copy repeats its announce anew
  if (status_) {
    status_->file_size.store(item.meta->size, std::memory_order_relaxed);
    status_->file_bytes.store(0, std::memory_order_relaxed);
  }
  // The hub hears of the file before anything of it is sent: a link failing on the announce
  // fails a file the hub knows of, carried by the lanes the hub counts.
  if (item.copy == 0) hub_.file_begun(*item.meta, carriers(item), f.started);
  if (item.copy == 0 && item.meta->resend_of) {
    // A copy of a file sent before: the receiver learns which, before the announce.
    const common::Resend r{item.meta->file_id, *item.meta->resend_of};
    out_.send_control(
        [&](const Header& h, std::span<uint8_t> buf) { return common::encode_resend(h, r, buf); });
  }
  common::Announce a = announce_of(*item.meta);
  a.pause_s = item.copy == 0 ? static_cast<uint8_t>(out_.pacer().pause_for(item.meta->size)) : 0;
  out_.send_control(
      [&](const Header& h, std::span<uint8_t> buf) { return common::encode_announce(h, a, buf); },
      announce_flags(*item.meta, item.striped));
  if (a.pause_s > 0) {
    // The sleep algorithm: the receiver's Info: line says "(send pausing N seconds)".
    out_.close_window();
    out_.flush();
    if (cfg_.report != ReportOption::kNone) {
      spdlog::info(
          "Info: {}: pausing {} seconds before the data (sleep algorithm; "
          "-NOSLEEPALG turns it off)",
          item.meta->path_on_wire(), a.pause_s);
    }
    out_.pacer().pause(a.pause_s);
  }
}

void Transmitter::send_repeat_announce() {
  // Sent once, not control_repeat times: the next one follows R bytes later, and the first
  // announces already went out control_repeat times. An ordinary sequenced datagram otherwise
  // (an FEC source, sealed with --key-file).
  const common::Announce a = announce_of(*cur_->meta);
  auto slot = out_.next_slot();
  Header h = out_.next_header();
  h.flags = static_cast<uint16_t>(h.flags | common::kFlagRepeat |
                                  announce_flags(*cur_->meta, cur_->striped));
  const size_t n = common::encode_announce(h, a, slot.first(out_.source_size()));
  if (n == 0) throw std::runtime_error("control packet does not fit the packet size");
  out_.commit(slot, n);
}

void Transmitter::end_file(const WorkItem& item) {
  common::End e;
  e.file_id = item.meta->file_id;
  e.verify = cfg_.verify;
  e.size = item.meta->size;
  e.key_len = item.digest.size;
  e.copy = item.copy;
  e.copies = static_cast<uint8_t>(cfg_.repeat);
  std::memcpy(e.key.data(), item.digest.bytes.data(), item.digest.size);
  out_.send_control(
      [&](const Header& h, std::span<uint8_t> buf) { return common::encode_end(h, e, buf); });
  // The file's last window is closed now, so that its end is protected without waiting for the
  // next file's packets.
  out_.close_window();
  out_.flush();
  if (item.copy + 1u < cfg_.repeat) return;  // more copies follow
  finish_file(item.meta, false, item.digest, {}, item.striped);
  lists_.send_if_due();
  // Between files, a heartbeat when the last one is an interval old (long files send none).
  if (clock_.now() - out_.last_heartbeat() >= std::chrono::milliseconds(cfg_.heartbeat_ms)) {
    send_heartbeat(false);
  }
  out_.pacer().after_file();
}

void Transmitter::abort_file(const std::shared_ptr<const FileMeta>& meta, const std::string& reason,
                             bool striped) {
  common::Abort a;
  a.file_id = meta->file_id;
  a.reason = reason;
  out_.send_control(
      [&](const Header& h, std::span<uint8_t> buf) { return common::encode_abort(h, a, buf); });
  out_.close_window();
  out_.flush();
  finish_file(meta, true, {}, reason, striped);
  lists_.send_if_due();
}

void Transmitter::finish_file(std::shared_ptr<const FileMeta> meta, bool aborted,
                              const common::Digest& digest, const std::string& reason,
                              bool striped) {
  if (cur_ != nullptr && cur_->meta && cur_->meta->file_id == meta->file_id) cur_ = nullptr;
  open_.erase(meta->file_id);
  if (status_) {
    status_->file_size.store(0, std::memory_order_relaxed);
    status_->file_bytes.store(0, std::memory_order_relaxed);
  }
  const auto outcome = hub_.lane_finished(*meta, lane_, aborted, digest, reason);
  if (!outcome) return;  // another lane still carries it: that lane reports it
  if (outcome->aborted) {
    ++totals_.files_failed;
    if (status_) status_->files_failed.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("Error: {} not sent: {}", meta->path_on_wire(), outcome->reason);
  } else {
    ++totals_.files_sent;
    if (status_) status_->files_sent.fetch_add(1, std::memory_order_relaxed);
    const common::Digest& d = outcome->digest;
    const std::string key =
        cfg_.verify == common::VerifyType::kNone
            ? std::string("Key: none, NONE")
            : fmt::format("Key: 0x{:08X}, {}", d.key32(), common::verify_type_name(cfg_.verify));
    if (cfg_.report != ReportOption::kNone) {
      const auto elapsed = clock_.now() - outcome->started;
      spdlog::info("Sent: {}, Size: {} (bytes), Time: {}, Rate: {:.3f} (MB/s), {}",
                   meta->path_on_wire(), common::with_commas(meta->size),
                   common::format_hms_ms(elapsed), common::mib_per_s(meta->size, elapsed), key);
    }
  }
  // One lane: the list's lane byte stays 0 ("not said"), the bytes a sender before lanes sent.
  const int list_lane = hub_.lanes() == 1 ? common::kLaneUnsaid
                        : striped         ? common::kLaneAll
                                          : static_cast<int>(lane_);
  hub_.file_done(*meta, *outcome, list_lane);
}

void Transmitter::wait_for_lanes() {
  SessionList& list = hub_.list();
  list.lane_done(lane_);
  // Alone, or the last lane: at once. Else the receiver keeps hearing from this lane while the
  // others finish, and its last list waits for their last files.
  while (!list.wait_all_done(std::chrono::milliseconds(cfg_.heartbeat_ms))) {
    lists_.send_if_due();
    send_history_if_due();
    send_heartbeat(false);
  }
}

void Transmitter::run(std::stop_token stop) {
  const auto now = clock_.now();
  out_.start(stop, now);
  lists_.start(now);
  hub_.session_started(session_id_);
  try {
    send_session(stop);
  } catch (const LinkError& e) {
    if (history_ != nullptr) history_->lane_done(lane_);
    go_down(e);  // or rethrows: the session ends
  }
  if (history_ != nullptr) history_->lane_done(lane_);
  hub_.session_finished(session_id_);
}

void Transmitter::send_session(std::stop_token stop) {
  const auto heartbeat = std::chrono::milliseconds(cfg_.heartbeat_ms);
  send_sender_info_if_due();
  while (true) {
    // From the stop on, every item is dropped: the feed need not pace them.
    if (stop.stop_requested()) in_.draining();
    auto item = in_.pop_for(heartbeat);
    if (!item) {
      if (in_.closed()) break;
      // A hot folder waiting for files: the last files' list still goes out on time, and the
      // history's repeats as they come due.
      lists_.send_if_due();
      send_history_if_due();
      out_.flush();
      send_heartbeat(false);
      hub_.idle();
      continue;
    }
    send_item(*item, stop);
    // Mid-file too: a long file must not hold back the list of the files before it, nor the
    // sender's status.
    lists_.send_if_due();
    send_history_if_due();
    send_sender_info_if_due();
  }
  abort_open("sender stopped");
  out_.flush();
  wait_for_lanes();
  send_history_if_due(/*last=*/true);
  lists_.send_last();
  send_heartbeat(true);
}

void Transmitter::give_back(const WorkItem& item) {
  pool_.release(item.buffer);
  if (load_) load_->block_done(lane_, item.len);
}

void Transmitter::skip_file(const WorkItem& item) {
  ++totals_.files_failed;
  if (status_) status_->files_failed.fetch_add(1, std::memory_order_relaxed);
  hub_.file_skipped(*item.meta, item.reason);
}

void Transmitter::abort_open(const std::string& reason) {
  for (const auto& [meta, striped] : open_files()) abort_file(meta, reason, striped);
}

std::vector<std::pair<std::shared_ptr<const FileMeta>, bool>> Transmitter::open_files() const {
  std::vector<std::pair<std::shared_ptr<const FileMeta>, bool>> open;
  for (const auto& [id, f] : open_) open.emplace_back(f.meta, f.striped);
  return open;
}

// Whether `item` is the last of its file this lane will see: its last copy's end, or an abort.
bool Transmitter::last_of_file(const WorkItem& item) const {
  return item.kind == WorkItem::Kind::kAbort ||
         (item.kind == WorkItem::Kind::kEnd && item.copy + 1u >= cfg_.repeat);
}

void Transmitter::send_item(const WorkItem& item, std::stop_token stop) {
  if (item.kind != WorkItem::Kind::kSkip) {
    if (dropped_.contains(item.meta->file_id)) {
      if (item.kind == WorkItem::Kind::kBlock) give_back(item);
      if (last_of_file(item)) dropped_.erase(item.meta->file_id);
      return;
    }
    const auto it = open_.find(item.meta->file_id);
    cur_ = it == open_.end() ? nullptr : &it->second;
  }
  // A striped file that another lane, gone down, carries too: the receiver could never complete
  // it, so its data stays here and it is aborted on the wire instead of ended. (The hub is asked
  // only once a lane is down.)
  std::optional<std::string> doom;
  if (item.striped && load_ && load_->lanes_up() < load_->lanes() &&
      (item.kind == WorkItem::Kind::kBlock || item.kind == WorkItem::Kind::kEnd)) {
    doom = hub_.doomed(*item.meta);
  }
  const bool doomed = doom.has_value();
  switch (item.kind) {
    case WorkItem::Kind::kBegin:
      begin_file(item);
      break;
    case WorkItem::Kind::kBlock:
      // (A block of a file this lane has not begun cannot come: the router sends every file's
      // begin down each lane that carries it. Dropped, not sent, if it ever did.)
      if (!stop.stop_requested() && !doomed && cur_ != nullptr) {
        try {
          send_block(item);
        } catch (...) {
          give_back(item);
          throw;
        }
      }
      give_back(item);
      break;
    case WorkItem::Kind::kEnd:
      if (stop.stop_requested()) {
        abort_file(item.meta, "sender stopped", item.striped);
      } else if (doomed) {
        abort_file(item.meta, *doom, item.striped);
        if (!last_of_file(item)) dropped_.insert(item.meta->file_id);  // its further copies
      } else {
        end_file(item);
      }
      break;
    case WorkItem::Kind::kAbort:
      abort_file(item.meta, item.reason, item.striped);
      break;
    case WorkItem::Kind::kSkip:  // never announced: nothing goes on the wire
      skip_file(item);
      break;
  }
}

// A block's data on the wire, as kData packets or, compressed (--compress), as the kZData
// pieces of its frame.
void Transmitter::send_block(const WorkItem& item) {
  if (item.compressed) {
    send_frame(item);
    return;
  }
  // Reader blocks are whole multiples of the chunk size (but for a file's last block), so every
  // chunk lies inside one block and its offset is a multiple of the chunk size.
  const uint8_t* src = pool_.data(item.buffer);
  for (size_t pos = 0; pos < item.len; pos += chunk_size_) {
    const size_t len = std::min(chunk_size_, item.len - pos);
    auto slot = out_.next_slot();
    std::memcpy(common::data_bytes_of(slot.data()), src + pos, len);
    common::DataHeader d;
    d.file_id = item.meta->file_id;
    d.copy = item.copy;
    d.offset = item.offset + pos;
    commit_data(slot, common::encode_data_in_place(out_.next_header(), d, len, slot), d.offset);
    // After every R bytes this lane sent of the copy (a whole file's: its offset), and never
    // once the file's last data packet is out (its end follows): a receiver that joined
    // mid-file learns which file the data belongs to.
    repeat_announce_if_due(cur_->sent + pos + len, d.offset + len, *item.meta);
  }
  block_sent(item, item.len);
}

// A compressed block: its frame in pieces of zdata_piece_size(chunk size), as kZData packets.
void Transmitter::send_frame(const WorkItem& item) {
  const uint8_t* frame = pool_.data(item.buffer);
  const size_t piece = common::zdata_piece_size(chunk_size_);
  common::ZDataHeader z;
  z.file_id = item.meta->file_id;
  z.copy = item.copy;
  z.offset = item.offset;
  z.raw_len = item.raw_len;
  z.frame_len = static_cast<uint32_t>(item.len);
  for (size_t pos = 0; pos < item.len; pos += piece) {
    const size_t len = std::min(piece, item.len - pos);
    auto slot = out_.next_slot();
    std::memcpy(common::zdata_bytes_of(slot.data()), frame + pos, len);
    z.frame_off = static_cast<uint32_t>(pos);
    commit_data(slot, common::encode_zdata_in_place(out_.next_header(), z, len, slot), item.offset);
  }
  repeat_announce_if_due(cur_->sent + item.raw_len, item.offset + item.raw_len, *item.meta);
  block_sent(item, item.raw_len);
}

void Transmitter::commit_data(std::span<uint8_t> slot, size_t n, uint64_t offset) {
  const bool drop = static_cast<long long>(data_index_++) == cfg_.test_drop_data;
  if (drop) {
    spdlog::warn("Warn: test hook dropped the data packet at offset {} of {}", offset,
                 cur_->meta->path_on_wire());
  }
  out_.commit(slot, n, !drop);
}

void Transmitter::repeat_announce_if_due(uint64_t done, uint64_t data_end, const FileMeta& meta) {
  if (cur_->repeat_every > 0 && done >= cur_->next_repeat && data_end < meta.size) {
    send_repeat_announce();
    while (cur_->next_repeat <= done) cur_->next_repeat += cur_->repeat_every;
  }
}

// A block's `raw` bytes of the file are out: totals, progress and the Progress: lines.
void Transmitter::block_sent(const WorkItem& item, size_t raw) {
  FileProgress& f = *cur_;
  totals_.bytes += raw;
  f.sent += raw;
  if (status_) {
    status_->bytes.fetch_add(raw, std::memory_order_relaxed);
    status_->file_bytes.store(f.sent, std::memory_order_relaxed);
  }
  hub_.file_progress(*item.meta, raw);
  // A striped file's lane sees only its own stripes: the progress lines are a whole file's.
  if (cfg_.report == ReportOption::kVerbose && !f.striped && f.sent >= f.next_report &&
      f.sent < item.meta->size) {
    while (f.next_report <= f.sent) f.next_report += cfg_.report_mb << 20;
    const auto elapsed = clock_.now() - f.started;
    spdlog::info("Progress: {}, Sent: {} ({:.2f}%) Rate: {:.3f} (MB/s)", item.meta->path_on_wire(),
                 common::with_commas(f.sent),
                 100.0 * static_cast<double>(f.sent) / static_cast<double>(item.meta->size),
                 common::mib_per_s(f.sent, elapsed));
  }
}

// The sender's history on the wire (sender/source/history_feed.hpp): each lane sends every
// payload the feed packs, once, as a source of its FEC window like any control datagram.
void Transmitter::send_history_if_due(bool last) {
  if (history_ == nullptr) return;
  uint64_t waiting = 0;
  const std::vector<HistoryFeed::Payload> payloads = history_->take(lane_, &waiting, last);
  if (status_) status_->history_waiting.store(waiting, std::memory_order_relaxed);
  for (const HistoryFeed::Payload& payload : payloads) {
    auto slot = out_.next_slot();
    common::Header h = out_.next_header();
    h.type = common::PacketType::kHistory;
    const size_t n = common::encode_payload(h, *payload, slot.first(out_.source_size()));
    if (n == 0) continue;  // packed for this lane's room: never
    out_.commit(slot, n);
    const size_t wire = n + out_.seal_overhead();
    totals_.history_bytes += wire;
    if (status_) status_->history_bytes.fetch_add(wire, std::memory_order_relaxed);
  }
}

// A lane whose link failed (--lane-down): it ends the session, or leaves it while the other
// lanes go on.
void Transmitter::go_down(const LinkError& e) {
  const bool may_leave = cfg_.lane_down == LaneDownPolicy::kContinue && load_ != nullptr;
  if (!may_leave || !load_->take_down(lane_)) {
    // --lane-down stop, one lane, or every other lane already down: the session ends here.
    if (may_leave && hub_.lanes() > 1) {
      throw LinkError(e.code(), lane_label() + ": send failed and no other lane is up");
    }
    throw e;
  }
  const std::string reason =
      fmt::format("{} is down: send failed: {}", lane_label(), e.code().message());
  spdlog::error("Error: {}; its files in flight fail, the other lanes go on", reason);
  // Nothing more goes out on this link: what was batched goes with it.
  out_.discard();
  if (status_) {
    status_->lanes_up.fetch_sub(1, std::memory_order_relaxed);
    status_->lanes_up_mask.fetch_and(~(uint64_t{1} << lane_), std::memory_order_relaxed);
  }
  // Before the file in flight is failed: a striped one is then doomed on the other lanes too.
  hub_.lane_down(lane_, reason);
  for (const auto& [meta, striped] : open_files()) {
    dropped_.insert(meta->file_id);
    finish_file(meta, true, {}, reason, striped);
  }
  // What the router gave this lane before it went down, and the rest of the files it carries,
  // until the reader closes the queue: failed, their buffers back at once (the reader must not
  // wait for a lane that sends nothing).
  in_.draining();
  while (auto item = in_.pop()) drop_item(*item, reason);
  // Only now: the other lanes' last lists must name the files failed here.
  hub_.list().lane_done(lane_);
}

void Transmitter::drop_item(const WorkItem& item, const std::string& reason) {
  if (item.kind == WorkItem::Kind::kSkip) {
    skip_file(item);  // never announced: fails with its own reason, on no lane
    return;
  }
  if (item.kind == WorkItem::Kind::kBlock) give_back(item);
  if (dropped_.contains(item.meta->file_id)) return;
  // The first item of a file this lane was to carry: the file fails, reported once, by the last
  // of its lanes.
  dropped_.insert(item.meta->file_id);
  hub_.file_begun(*item.meta, carriers(item), clock_.now());
  finish_file(item.meta, true, {}, reason, item.striped);
}

}  // namespace ddft::sender
