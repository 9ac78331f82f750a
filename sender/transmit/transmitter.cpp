#include "sender/transmit/transmitter.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "common/history_wire.hpp"
#include "common/log_format.hpp"
#include "sender/source/history_feed.hpp"

namespace ddft::sender {
using common::Header;

uint64_t repeat_announce_interval(size_t announce_bytes) {
  return std::max<uint64_t>(uint64_t{1} << 20, uint64_t{1024} * announce_bytes);
}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
                         LaneHub& hub, size_t lane, LaneRouter* router)
    : Transmitter(cfg, session_id, sink, clock, pool, in, nullptr, &hub, lane, router) {}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
                         SendObserver& observer)
    : Transmitter(cfg, session_id, sink, clock, pool, in,
                  std::make_unique<LaneHub>(1, cfg.watch_dir.empty(), observer), nullptr, 0,
                  nullptr) {}

Transmitter::Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
                         common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
                         std::unique_ptr<LaneHub> own_hub, LaneHub* hub, size_t lane,
                         LaneRouter* router)
    : cfg_(cfg),
      session_id_(session_id),
      sink_(sink),
      clock_(clock),
      pool_(pool),
      in_(in),
      own_hub_(std::move(own_hub)),
      hub_(hub ? *hub : *own_hub_),
      lane_(lane),
      router_(router),
      pacer_(clock, PacingConfig{cfg.rate_mb * 1024.0 * 1024.0, cfg.intra_pkt_interval,
                                 cfg.intra_pkt_delay_ms, cfg.fs_interval_mb, cfg.fs_delay_ms,
                                 cfg.sleep_alg, cfg.eof_delay_ms}),
      chunk_size_(data_chunk_size(cfg)),
      source_size_(source_datagram_size(cfg)),
      arena_((cfg.batch + 1) * cfg.packet_size) {
  pending_.reserve(cfg.batch);
  totals_.session_id = session_id;
  if (cfg.fec.enabled()) fec_ = std::make_unique<FecEncoder>(cfg.fec, source_size_);
  if (cfg.key) {
    // A salt of the lane's own, so a key of its own: every lane numbers its datagrams from 0,
    // and a nonce must never repeat under one key.
    sealer_ = std::make_unique<common::Sealer>(*cfg.key, session_id, common::make_session_salt(),
                                               !cfg.auth_only);
  }
}

void Transmitter::set_status(SendStatus* status) {
  status_ = status;
  if (status_) status_->session_id.store(session_id_, std::memory_order_relaxed);
}

Header Transmitter::next_header(bool fec_source) {
  Header h;
  h.session_id = session_id_;
  h.seq = seq_++;
  if (fec_ && fec_source) {
    h.flags |= common::kFlagFec;
    h.fec_pos = fec_->next_pos();
  }
  return h;
}

void Transmitter::commit(std::span<uint8_t> slot, size_t n, bool send) {
  const bool full = fec_ && fec_->add(common::peek_seq(slot.data()), slot.first(n));
  if (send) enqueue(slot, n);
  if (full) close_window();
}

void Transmitter::enqueue(std::span<uint8_t> slot, size_t n) {
  // Sealed last, after FEC has taken the inner datagram: parity covers what the receiver gets
  // back when it opens the seal.
  if (sealer_) n = sealer_->seal(slot, n);
  pending_.push_back(slot.first(n));
  pending_bytes_ += n;
}

void Transmitter::close_window() {
  if (!fec_) return;
  // A keepalive while the parity goes out (a DFTS sleep in a flush below) must not take a place
  // in the window being closed.
  const FlagScope closing(closing_window_);
  fec_->close([&](const common::Parity& pa, std::span<const uint8_t> shard) {
    auto slot = next_slot();
    const size_t n = common::encode_parity(next_header(false), pa, shard,
                                           slot.first(source_size_ + common::kFecOverhead));
    if (n == 0) throw std::logic_error("parity datagram does not fit the packet size");
    enqueue(slot, n);
  });
}

std::span<uint8_t> Transmitter::next_slot() {
  // The batch also ends where an intra-packet sleep falls, so that flush() sends it in one go
  // and every DFTS sleep comes after the batch's last datagram: nothing encoded waits unsent
  // through a sleep, for a keepalive heartbeat to overtake.
  if (pending_.size() == cfg_.batch || pending_.size() >= pacer_.packets_before_sleep()) flush();
  return {arena_.data() + pending_.size() * cfg_.packet_size, cfg_.packet_size};
}

// Sends the pending batch under all pacing rules: never more packets in one go than the
// intra-packet interval allows, the rate limit before, the DFTS sleeps after.
void Transmitter::flush() {
  size_t done = 0;
  while (done < pending_.size()) {
    const size_t n = std::min(pending_.size() - done, pacer_.packets_before_sleep());
    const auto part = std::span(pending_).subspan(done, n);
    size_t bytes = 0;
    for (const auto& d : part) bytes += d.size();
    pacer_.before_send(bytes);
    send_all(part);
    done += n;
    pending_sent_ = done;
    pacer_.after_send(n, bytes);
  }
  count_sent(pending_.size(), pending_bytes_);
  pending_.clear();
  pending_bytes_ = 0;
  pending_sent_ = 0;
}

void Transmitter::count_sent(size_t datagrams, size_t bytes) {
  totals_.datagrams += datagrams;
  totals_.wire_bytes += bytes;
  if (status_ && datagrams > 0) {
    status_->datagrams.fetch_add(datagrams, std::memory_order_relaxed);
    status_->wire_bytes.fetch_add(bytes, std::memory_order_relaxed);
    status_->last_send_ns.store(clock_.now().time_since_epoch().count(), std::memory_order_relaxed);
  }
}

void Transmitter::send_all(std::span<const std::span<const uint8_t>> datagrams) {
  size_t done = 0;
  while (done < datagrams.size()) {
    size_t sent = 0;
    const auto ec = sink_.send(datagrams.subspan(done), &sent);
    done += sent;
    if (sent > 0) last_sent_ = clock_.now();
    if (!ec) continue;
    if (ec == std::errc::no_buffer_space) {
      // BUFF_FULL_DELAY: the link's buffer is full; wait and retry the same datagrams, never
      // drop them. At least once a keepalive interval: what the retry sends is what keeps the
      // receiver hearing from this sender (a heartbeat would overtake these datagrams).
      const auto wait = std::min<std::chrono::nanoseconds>(
          std::chrono::milliseconds(cfg_.buff_full_delay_ms), keepalive_interval());
      clock_.sleep_until(clock_.now() + wait);
      continue;
    }
    // One lane: the words a sender before lanes said.
    throw LinkError(ec, hub_.lanes() > 1 ? lane_label() + ": send failed" : "send failed");
  }
}

std::string Transmitter::lane_label() const {
  return fmt::format("lane {} ({})", lane_, cfg_.lane_name(lane_));
}

uint64_t Transmitter::carriers(const WorkItem& item) const {
  return item.lanes != 0 ? item.lanes : uint64_t{1} << lane_;
}

void Transmitter::send_control(
    const std::function<size_t(const Header&, std::span<uint8_t>)>& encode, uint16_t flags) {
  for (unsigned i = 0; i < cfg_.control_repeat; ++i) {
    auto slot = next_slot();
    Header h = next_header();
    h.flags |= flags;
    const size_t n = encode(h, slot.first(source_size_));
    if (n == 0) throw std::runtime_error("control packet does not fit the packet size");
    commit(slot, n);
  }
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

void Transmitter::send_sender_info_if_due() {
  const auto now = clock_.now();
  if (info_sent_ && now - last_info_ < std::chrono::seconds(common::kSenderInfoIntervalS)) return;
  common::SenderInfo si;
  si.sender_id = cfg_.sender_id;
  si.host = cfg_.lane_hosts();
  // A config that names fewer lanes than the session drives (tests): each other lane a host of
  // its own.
  for (size_t k = si.host.size(); k < hub_.lanes(); ++k) si.host.push_back(static_cast<uint8_t>(k));
  si.host.resize(hub_.lanes());
  send_control([&](const Header& h, std::span<uint8_t> buf) {
    return common::encode_sender_info(h, si, buf);
  });
  last_info_ = now;
  info_sent_ = true;
}

void Transmitter::send_heartbeat(bool final) {
  send_sender_info_if_due();
  common::Heartbeat hb = heartbeat_of(final);
  send_control([&](const Header& h, std::span<uint8_t> buf) {
    hb.packets_sent = h.seq;
    return common::encode_heartbeat(h, hb, buf);
  });
  close_window();
  flush();
  last_heartbeat_ = clock_.now();
  heartbeat_sent_ = true;
}

common::Announce Transmitter::announce_of(const FileMeta& meta) const {
  common::Announce a;
  a.file_id = meta.file_id;
  a.verify = cfg_.verify;
  a.size = meta.size;
  a.mtime_ns = meta.mtime_ns;
  a.mode = meta.mode;
  a.chunk_size = static_cast<uint32_t>(chunk_size_);
  a.path = meta.rel_path;
  return a;
}

void Transmitter::begin_file(const WorkItem& item) {
  if (item.copy == 0) {
    current_ = {item.meta, clock_.now(), 0, cfg_.report_mb * 1024 * 1024};
    ++files_announced_;
    // The announce as it goes on the wire (sealed with --key-file) sets the repeats' spacing.
    current_.repeat_every =
        repeat_announce_interval(common::announce_datagram_size(item.meta->rel_path.size()) +
                                 (sealer_ ? common::kSealOverhead : 0));
  } else {
    // A further copy: the same file id, so the receiver fills one copy's holes from the next.
    current_.meta = item.meta;
    current_.sent = 0;
    current_.next_report = cfg_.report_mb * 1024 * 1024;
  }
  current_.copy = item.copy;
  current_.striped = item.striped;
  current_.next_repeat = current_.repeat_every;  // each copy repeats its announce anew
  if (status_) {
    status_->file_size.store(item.meta->size, std::memory_order_relaxed);
    status_->file_bytes.store(0, std::memory_order_relaxed);
  }
  // The hub hears of the file before anything of it is sent: a link failing on the announce
  // fails a file the hub knows of, carried by the lanes the hub counts.
  if (item.copy == 0) hub_.file_begun(*item.meta, carriers(item), current_.started);
  if (item.copy == 0 && item.meta->resend_of) {
    // A copy of a file sent before: the receiver learns which, before the announce.
    const common::Resend r{item.meta->file_id, *item.meta->resend_of};
    send_control(
        [&](const Header& h, std::span<uint8_t> buf) { return common::encode_resend(h, r, buf); });
  }
  common::Announce a = announce_of(*item.meta);
  a.pause_s = item.copy == 0 ? static_cast<uint8_t>(pacer_.pause_for(item.meta->size)) : 0;
  send_control(
      [&](const Header& h, std::span<uint8_t> buf) { return common::encode_announce(h, a, buf); },
      static_cast<uint16_t>((item.striped ? common::kFlagStriped : 0) |
                            (item.meta->resend_of ? common::kFlagResend : 0)));
  if (a.pause_s > 0) {
    // The sleep algorithm: the receiver's Info: line says "(send pausing N seconds)".
    close_window();
    flush();
    if (cfg_.report != ReportOption::kNone) {
      spdlog::info(
          "Info: {}: pausing {} seconds before the data (sleep algorithm; "
          "-NOSLEEPALG turns it off)",
          item.meta->rel_path, a.pause_s);
    }
    pacer_.pause(a.pause_s);
  }
}

void Transmitter::send_repeat_announce() {
  // Sent once, not control_repeat times: the next one follows R bytes later, and the first
  // announces already went out control_repeat times. An ordinary sequenced datagram otherwise
  // (an FEC source, sealed with --key-file).
  const common::Announce a = announce_of(*current_.meta);
  auto slot = next_slot();
  Header h = next_header();
  h.flags = static_cast<uint16_t>(h.flags | common::kFlagRepeat |
                                  (current_.striped ? common::kFlagStriped : 0) |
                                  (current_.meta->resend_of ? common::kFlagResend : 0));
  const size_t n = common::encode_announce(h, a, slot.first(source_size_));
  if (n == 0) throw std::runtime_error("control packet does not fit the packet size");
  commit(slot, n);
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
  send_control(
      [&](const Header& h, std::span<uint8_t> buf) { return common::encode_end(h, e, buf); });
  // The file's last window is closed now, so that its end is protected without waiting for the
  // next file's packets.
  close_window();
  flush();
  if (item.copy + 1u < cfg_.repeat) return;  // more copies follow
  finish_file(item.meta, false, item.digest, {}, item.striped);
  send_list_if_due();
  // Between files, a heartbeat when the last one is an interval old (long files send none).
  if (clock_.now() - last_heartbeat_ >= std::chrono::milliseconds(cfg_.heartbeat_ms)) {
    send_heartbeat(false);
  }
  pacer_.after_file();
}

void Transmitter::abort_file(const std::shared_ptr<const FileMeta>& meta, const std::string& reason,
                             bool striped) {
  common::Abort a;
  a.file_id = meta->file_id;
  a.reason = reason;
  send_control(
      [&](const Header& h, std::span<uint8_t> buf) { return common::encode_abort(h, a, buf); });
  close_window();
  flush();
  finish_file(meta, true, {}, reason, striped);
  send_list_if_due();
}

void Transmitter::finish_file(std::shared_ptr<const FileMeta> meta, bool aborted,
                              const common::Digest& digest, const std::string& reason,
                              bool striped) {
  current_ = {};
  if (status_) {
    status_->file_size.store(0, std::memory_order_relaxed);
    status_->file_bytes.store(0, std::memory_order_relaxed);
  }
  const auto outcome = hub_.lane_finished(*meta, lane_, aborted, digest, reason);
  if (!outcome) return;  // another lane still carries it: that lane reports it
  if (outcome->aborted) {
    ++totals_.files_failed;
    if (status_) status_->files_failed.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("Error: {} not sent: {}", meta->rel_path, outcome->reason);
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
      spdlog::info("Sent: {}, Size: {} (bytes), Time: {}, Rate: {:.3f} (MB/s), {}", meta->rel_path,
                   common::with_commas(meta->size), common::format_hms_ms(elapsed),
                   common::mib_per_s(meta->size, elapsed), key);
    }
  }
  // One lane: the list's lane byte stays 0 ("not said"), the bytes a sender before lanes sent.
  const int list_lane = hub_.lanes() == 1 ? common::kLaneUnsaid
                        : striped         ? common::kLaneAll
                                          : static_cast<int>(lane_);
  hub_.file_done(*meta, *outcome, list_lane);
}

void Transmitter::send_list_if_due() {
  SessionList& list = hub_.list();
  const size_t waiting = list.waiting(lane_);
  if (waiting == 0) return;
  const auto now = clock_.now();
  if (waiting < kListBatch && now - last_list_ < kListInterval) return;
  send_list(list.take(lane_), 0);
  last_list_ = now;
}

void Transmitter::send_last_list() {
  bool complete = false;
  const std::vector<ListedFile> files = hub_.list().take_last(lane_, &complete);
  if (!files.empty()) send_list(files, complete ? common::kListComplete : 0);
  last_list_ = clock_.now();
}

void Transmitter::send_list(const std::vector<ListedFile>& files, uint16_t flags) {
  // Views into `files`, which does not change while they are encoded.
  std::vector<common::FileListEntry> entries;
  entries.reserve(files.size());
  const size_t room = common::file_list_room(source_size_);
  for (const ListedFile& f : files) {
    common::FileListEntry e;
    e.file_id = f.file_id;
    e.size = f.size;
    e.verify = cfg_.verify;
    e.aborted = f.aborted;
    e.key_len = f.digest.size;
    e.key = f.digest.bytes;
    e.lane = f.lane;
    e.resend = f.resend;
    e.path = f.path;
    if (common::file_list_entry_size(e.key_len, e.path.size()) > room) {
      // Only with a small --packet-size and a path near the announce's limit: the file was sent,
      // but the list cannot name it.
      spdlog::warn(
          "Warn: {}: path too long for a file-list datagram of {} bytes; the receiver's "
          "list will not name it",
          f.path, cfg_.packet_size);
      continue;
    }
    entries.push_back(e);
  }
  std::span<const common::FileListEntry> rest(entries);
  size_t datagrams = 0;
  while (!rest.empty()) {
    // Every copy encodes the same entries into the same room, so each takes as many.
    size_t taken = 0;
    send_control([&](const Header& h, std::span<uint8_t> buf) {
      return common::encode_file_list(h, flags, rest, buf, &taken);
    });
    rest = rest.subspan(taken);
    ++datagrams;
  }
  // Closed and sent now, as a file's end is: the list is protected without waiting for more.
  close_window();
  flush();
  spdlog::debug("file list of {} file(s){} in {} datagram(s)", entries.size(),
                flags & common::kListComplete ? " (complete)" : "", datagrams);
}

void Transmitter::wait_for_lanes() {
  SessionList& list = hub_.list();
  list.lane_done(lane_);
  // Alone, or the last lane: at once. Else the receiver keeps hearing from this lane while the
  // others finish, and its last list waits for their last files.
  while (!list.wait_all_done(std::chrono::milliseconds(cfg_.heartbeat_ms))) {
    send_list_if_due();
    send_history_if_due();
    send_heartbeat(false);
  }
}

void Transmitter::run(std::stop_token stop) {
  pacer_.set_stop(stop);
  pacer_.set_keepalive([this](common::Clock::time_point now) { return keep_link_alive(now); });
  last_heartbeat_ = clock_.now();
  last_sent_ = last_heartbeat_;
  last_list_ = last_heartbeat_;
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
    auto item = in_.pop_for(heartbeat);
    if (!item) {
      if (in_.closed()) break;
      // A hot folder waiting for files: the last files' list still goes out on time, and the
      // history's repeats as they come due.
      send_list_if_due();
      send_history_if_due();
      flush();
      send_heartbeat(false);
      hub_.idle();
      continue;
    }
    send_item(*item, stop);
    // Mid-file too: a long file must not hold back the list of the files before it.
    send_list_if_due();
    send_history_if_due();
  }
  if (current_.meta) abort_file(current_.meta, "sender stopped", current_.striped);
  flush();
  wait_for_lanes();
  send_history_if_due(/*last=*/true);
  send_last_list();
  send_heartbeat(true);
}

void Transmitter::give_back(const WorkItem& item) {
  pool_.release(item.buffer);
  if (router_) router_->block_done(lane_, item.len);
}

void Transmitter::skip_file(const WorkItem& item) {
  ++totals_.files_failed;
  if (status_) status_->files_failed.fetch_add(1, std::memory_order_relaxed);
  hub_.file_skipped(*item.meta, item.reason);
}

void Transmitter::send_item(const WorkItem& item, std::stop_token stop) {
  if (item.kind != WorkItem::Kind::kSkip) {
    if (dropped_ == item.meta->file_id) {
      if (item.kind == WorkItem::Kind::kBlock) give_back(item);
      return;
    }
    dropped_.reset();
  }
  // A striped file that another lane, gone down, carries too: the receiver could never complete
  // it, so its data stays here and it is aborted on the wire instead of ended. (The hub is asked
  // only once a lane is down.)
  std::optional<std::string> doom;
  if (item.striped && router_ && router_->lanes_up() < router_->lanes() &&
      (item.kind == WorkItem::Kind::kBlock || item.kind == WorkItem::Kind::kEnd)) {
    doom = hub_.doomed(*item.meta);
  }
  const bool doomed = doom.has_value();
  switch (item.kind) {
    case WorkItem::Kind::kBegin:
      begin_file(item);
      break;
    case WorkItem::Kind::kBlock:
      if (!stop.stop_requested() && !doomed) {
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
        dropped_ = item.meta->file_id;  // its further copies, if any
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

}  // namespace ddft::sender
