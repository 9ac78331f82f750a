#include "receiver/assembly/assembler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ddft::receiver {
using common::DecodeStatus;
using common::Packet;
using common::PacketType;

namespace {
// Why a sender's files still receiving fail when it starts session `s` anew; `sender` is one of
// its sessions, identified.
std::string restart_reason(uint64_t s, const SenderSession& sender) {
  return fmt::format("sender restarted (new session {:016x} of {})", s, sender.name());
}

// File-system calls at once (creates, renames, flushes, records): enough for a slow disk's
// latency to overlap, few enough for a small host.
constexpr unsigned kFsThreads = 4;
}  // namespace

Assembler::Assembler(const ReceiverConfig& cfg, OutputDir& out, common::BlockIo& writer,
                     common::AlignedBuffer& block_memory, common::Clock& clock)
    : cfg_(cfg),
      clock_(clock),
      fs_(std::make_unique<FsPool>(cfg.null_sink ? 0 : kFsThreads)),
      engine_(writer, block_memory, cfg.write_block_kb * 1024),
      records_(out, *fs_, clock, !cfg.keys.empty(), counters_),
      gate_(cfg, out, *fs_, clock, counters_, cfg.lanes()),
      slots_(cfg, clock, counters_),
      lane_lost_past_(cfg.lanes(), 0),
      table_(cfg, out, *fs_, clock, engine_, records_, counters_) {}

FecCounters Assembler::fec() const {
  FecCounters sum = fec_past_;
  slots_.for_each([&](const SenderSlot& slot) { sum += slot.fec_counters(); });
  return sum;
}

uint64_t Assembler::lost() const {
  uint64_t n = counters_.lost_in_past_sessions;
  slots_.for_each([&](const SenderSlot& slot) { n += slot.session->lost(); });
  return n;
}

uint64_t Assembler::lost(size_t lane) const {
  uint64_t n = lane_lost_past_[lane];
  slots_.for_each([&](const SenderSlot& slot) { n += slot.session->seq(lane).lost(); });
  return n;
}

std::vector<std::pair<uint64_t, uint64_t>> Assembler::senders() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  slots_.for_each([&](const SenderSlot& slot) {
    out.emplace_back(slot.session->session(), slot.session->sender_id());
  });
  return out;
}

Assembler::~Assembler() {
  // A destructor must not throw: an IO engine that already failed reports it again here.
  try {
    if (!table_.empty() || io_pending()) fail_all("receiver stopped");
    gate_.save_if_changed();
    while (fs_->pending() > 0) {
      fs_->wait(std::chrono::milliseconds(100));
      fs_->reap();
    }
  } catch (const std::exception& e) {
    spdlog::error("Error: files in flight could not be recorded as failed: {}", e.what());
  }
}

void Assembler::set_earlier(
    OutcomeLog* journal, const std::vector<std::pair<uint64_t, uint32_t>>& known,
    const std::vector<std::pair<std::pair<uint64_t, uint32_t>, std::string>>& failed) {
  records_.set_journal(journal);
  table_.set_earlier(journal, known, failed);
}

// ---------------------------------------------------------------------------------------------
// Datagrams

void Assembler::on_datagram(std::span<const uint8_t> data, size_t real_len, size_t lane) {
  Packet p;
  if (gate_.open(&data, real_len, &p, lane)) on_admitted(data, p, lane);
}

void Assembler::on_prechecked(const Prechecked& pre) {
  std::span<const uint8_t> data;
  Packet p;
  if (gate_.admit(pre, &data, &p)) on_admitted(data, p, pre.lane);
}

void Assembler::on_admitted(std::span<const uint8_t> data, Packet& p, size_t lane) {
  SenderSlot* slot = slot_for(p);
  if (slot == nullptr || !slot->session->note_packet(lane, p)) return;
  FecDecoder& fec = *slot->fec[lane];
  const auto rebuilt = [this, lane, slot](std::span<const uint8_t> d) {
    on_rebuilt(d, lane, *slot);
  };
  // Nothing a datagram does may stop the receiver: a failure to handle one (memory, the disk)
  // is logged and the daemon goes on with the next.
  try {
    if (p.header.type == PacketType::kParity) {
      common::Parity pa;
      std::span<const uint8_t> shard;
      if (common::decode_parity(p.payload, &pa, &shard) != DecodeStatus::kOk) {
        ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
        return;
      }
      fec.add_parity(pa, shard, rebuilt);
      return;
    }
    if ((p.header.flags & common::kFlagFec) && !fec.add_source(p.header, data, rebuilt)) {
      ++counters_.duplicates;  // it was rebuilt before it came
      return;
    }
  } catch (const std::exception& e) {
    ++counters_.handling_errors;
    spdlog::error("Error: FEC could not handle a packet: {}", e.what());
  }
  dispatch(p, lane, *slot);
  // A repeated announce comes mid-file: the data of its window went to the file already.
  if (p.header.type == PacketType::kAnnounce && (p.header.flags & common::kFlagFec) &&
      !(p.header.flags & common::kFlagRepeat)) {
    replay_window(p.header, lane, *slot);  // data of its window rebuilt before it came
  }
}

SenderSlot* Assembler::slot_for(const Packet& p) {
  const uint64_t s = p.header.session_id;
  if (SenderSlot* slot = slots_.find(s)) return slot;
  if (!slots_.may_open(p)) return nullptr;
  if (slots_.full()) {
    // The sender of a live slot starting anew takes its own place; else a quiet one gives way.
    common::SenderInfo si;
    SenderSlot* give = nullptr;
    if (p.header.type == PacketType::kSenderInfo &&
        common::decode_sender_info(p.payload, &si) == DecodeStatus::kOk) {
      give = slots_.same_sender(s, si.sender_id);
    }
    std::string reason;
    if (give != nullptr) {
      reason = restart_reason(s, *give->session);
    } else if ((give = slots_.quiet_slot(clock_.now())) != nullptr) {
      reason = fmt::format("{} silent, its place given to a new sender (--max-senders {})",
                           give->session->name(), slots_.max());
    } else {
      slots_.refuse(p);
      return nullptr;
    }
    end_slot(*give, reason);
  }
  return &open_slot(s);
}

SenderSlot& Assembler::open_slot(uint64_t s) {
  heard_ = true;
  SenderSlot& slot = slots_.open(s);
  table_.start_session(s, slot.session.get());
  return slot;
}

void Assembler::end_slot(SenderSlot& slot, const std::string& reason) {
  const uint64_t s = slot.session->session();
  if (!reason.empty()) table_.fail_receiving(s, reason);
  table_.settle_lists(s);  // before the summary, which counts what they record
  log_summary(slot);
  table_.end_session(s);
  fec_past_ += slot.fec_counters();
  for (size_t i = 0; i < lane_lost_past_.size(); ++i) {
    lane_lost_past_[i] += slot.session->seq(i).lost();
  }
  slots_.close(s);
}

bool Assembler::slot_idle(const SenderSlot& slot) const {
  const uint64_t s = slot.session->session();
  return table_.in_flight(s) == 0 && !table_.holds_list_entries(s);
}

void Assembler::end_finished_slots() {
  const auto now = clock_.now();
  std::vector<SenderSlot*> done;
  slots_.for_each([&](SenderSlot& slot) {
    const SenderSession& ss = *slot.session;
    bool all_final = true;
    for (size_t i = 0; i < ss.lanes(); ++i) all_final = all_final && ss.final_due(i, now);
    if (all_final && slot_idle(slot)) done.push_back(&slot);
  });
  for (SenderSlot* slot : done) {
    // A sender that ended its session sends no more status, and is not missing.
    if (board_ != nullptr) board_->ended(slot->session->session());
    end_slot(*slot, "");
  }
}

void Assembler::replay_window(const common::Header& announce, size_t lane, SenderSlot& slot) {
  if (announce.fec_pos > announce.seq) return;
  const auto again = [this, lane, &slot](std::span<const uint8_t> d, bool rebuilt) {
    // Data, and the end or abort of a small file whose whole life fits in the window: all of it
    // went to no file while the announce was missing. Seq order: data before its end.
    Packet q;
    if (common::decode_packet(d, &q) == DecodeStatus::kOk &&
        (q.header.type == PacketType::kData || q.header.type == PacketType::kZData ||
         q.header.type == PacketType::kEnd || q.header.type == PacketType::kAbort)) {
      dispatch(q, lane, slot, rebuilt);
    }
  };
  slot.fec[lane]->replay(announce.seq - announce.fec_pos, again);
}

// A datagram FEC rebuilt: checked like any other, not counted as received on the link.
void Assembler::on_rebuilt(std::span<const uint8_t> data, size_t lane, SenderSlot& slot) {
  Packet p;
  if (common::decode_packet(data, &p) != DecodeStatus::kOk ||
      p.header.session_id != slot.session->session() || !(p.header.flags & common::kFlagFec) ||
      (p.header.flags & common::kSealFlags) || p.header.type == PacketType::kParity) {
    ++counters_.rebuilt_bad;
    return;
  }
  dispatch(p, lane, slot, /*rebuilt=*/true);
  // The file's data of this window came before its announce was rebuilt and was dropped as of
  // an unknown file: offer it again (what was taken already counts as a duplicate).
  if (p.header.type == PacketType::kAnnounce) replay_window(p.header, lane, slot);
}

void Assembler::dispatch(const Packet& p, size_t lane, SenderSlot& slot, bool rebuilt) {
  try {
    switch (p.header.type) {
      case PacketType::kAnnounce:
        table_.handle_announce(p, lane);
        break;
      case PacketType::kData:
        table_.handle_data(p, rebuilt);
        break;
      case PacketType::kZData:
        table_.handle_zdata(p, rebuilt);
        break;
      case PacketType::kEnd:
        table_.handle_end(p, lane);
        break;
      case PacketType::kAbort:
        table_.handle_abort(p);
        break;
      case PacketType::kHeartbeat:
        handle_heartbeat(p, lane, slot);
        break;
      case PacketType::kFileList:
        table_.handle_file_list(p, lane);
        break;
      case PacketType::kSenderInfo:
        handle_sender_info(p, slot);
        break;
      case PacketType::kHistory:
        table_.handle_history(p);
        break;
      case PacketType::kResend:
        table_.handle_resend(p);
        break;
      case PacketType::kParity:
        break;  // handled before
    }
  } catch (const std::exception& e) {
    ++counters_.handling_errors;
    spdlog::error("Error: a {} packet could not be handled: {}", static_cast<int>(p.header.type),
                  e.what());
  }
}

void Assembler::handle_sender_info(const Packet& p, SenderSlot& slot) {
  common::SenderInfo si;
  if (common::decode_sender_info(p.payload, &si) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  slot.session->on_sender_info(si);
  if (board_ != nullptr && !si.tail.empty()) {
    common::SenderStatus status;
    if (common::decode_sender_status(si.tail, &status) == DecodeStatus::kOk) {
      board_->take(slot.session->label(), p.header.session_id, si.host.size(), status);
    } else {
      ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    }
  }
  // The sender's earlier session is over: its files still receiving never get the rest.
  if (SenderSlot* old = slots_.same_sender(p.header.session_id, si.sender_id)) {
    end_slot(*old, restart_reason(p.header.session_id, *slot.session));
  }
}

void Assembler::handle_heartbeat(const Packet& p, size_t lane, SenderSlot& slot) {
  common::Heartbeat hb;
  if (common::decode_heartbeat(p.payload, &hb) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  slot.session->on_heartbeat(lane, hb);
}

// ---------------------------------------------------------------------------------------------
// Polling, shutdown, reports

void Assembler::poll(bool wait) {
  table_.pump(wait);
  const auto now = clock_.now();
  table_.tick(now);
  slots_.for_each([&](SenderSlot& slot) {
    slot.session->report_loss(now, slot.fec_counters().rebuilt);
    slot.session->poll(now);
  });
  end_finished_slots();
  if (board_ != nullptr) board_->poll(now);
  records_.roll_window(now);
  records_.retry(now);
  gate_.poll(now);
}

void Assembler::note_ring_drops(const std::vector<DropLedger::Entry>& dropped) {
  table_.note_ring_drops(dropped, gate_.keyed());
}

void Assembler::note_read_wait(std::chrono::nanoseconds waited) { table_.note_read_wait(waited); }

void Assembler::fail_all(const std::string& reason) {
  // Files still receiving never get the rest; those with all their data in finish (writes,
  // verification, the committer).
  table_.fail_receiving(reason);
  table_.settle_lists(/*receiver_stopping=*/true);
  while (io_pending()) table_.pump(true);
  // Files still waiting (none should be) are closed as failed now.
  table_.close_unrecorded(reason);
  while (io_pending()) table_.pump(true);
  // Records the file system refused earlier: one last try.
  records_.retry(clock_.now(), /*force=*/true);
  while (io_pending()) table_.pump(true);
  records_.roll_window(clock_.now(), /*force=*/true);  // say how many went unrecorded, if any
  gate_.save_if_changed();
}

bool Assembler::session_finished() const {
  if (!heard_) return false;
  bool all = true;
  slots_.for_each(
      [&](const SenderSlot& slot) { all = all && slot.session->finished(slot_idle(slot)); });
  return all && !io_pending();
}

void Assembler::log_summary() const {
  slots_.for_each([this](const SenderSlot& slot) { log_summary(slot); });
}

void Assembler::log_summary(const SenderSlot& slot) const {
  const SenderSession& ss = *slot.session;
  const uint64_t session = ss.session();
  uint64_t rejected = 0;
  for (size_t i = 1; i < common::kDecodeStatusCount; ++i) rejected += counters_.rejected[i];
  const FecCounters fc = slot.fec_counters();
  const uint64_t lost_groups = fc.groups_lost + slot.fec_unrepaired_open();
  uint64_t auth = 0;
  for (uint64_t n : counters_.auth_rejected) auth += n;
  const size_t finishing = table_.finishing(session);
  const SessionFiles sf = table_.session_files(session);
  spdlog::info(
      "Info: session {:016x}{}: {} file(s) passed, {} failed, {} refused, {} filtered{}; "
      "packets: {} received, {} lost, {} rejected, {} from other sessions{}{}",
      session, ss.sender_id() != 0 ? fmt::format(" (sender {:016x})", ss.sender_id()) : "",
      sf.passed, sf.failed, sf.refused, sf.filtered,
      finishing > 0 ? fmt::format(", {} still being written", finishing) : "", ss.received(),
      ss.lost(), rejected, counters_.other_session,
      fc.rebuilt + lost_groups > 0
          ? fmt::format("; FEC rebuilt {}, {} group(s) beyond repair", fc.rebuilt, lost_groups)
          : "",
      auth > 0 ? fmt::format("; {} failed authentication", auth) : "");
}

}  // namespace ddft::receiver
