#include "receiver/assembly/assembler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace ddft::receiver {
using common::DecodeStatus;
using common::Packet;
using common::PacketType;

namespace {
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
      table_(cfg, out, *fs_, clock, engine_, records_, counters_) {
  for (size_t i = 0; i < cfg.lanes(); ++i) {
    fec_.push_back(std::make_unique<FecDecoder>(cfg.max_packet_size, cfg.fec_buffer_mb << 20));
  }
  table_.set_gate(&gate_);
}

FecCounters Assembler::fec() const {
  FecCounters sum;
  for (const auto& f : fec_) sum += f->counters();
  return sum;
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
  switch (gate_.classify(p)) {
    case SessionGate::Session::kRefused:
      return;
    case SessionGate::Session::kNew:
      start_session(p.header.session_id);
      break;
    case SessionGate::Session::kCurrent:
      break;
  }
  if (!gate_.note_packet(lane, p)) return;
  FecDecoder& fec = *fec_[lane];
  const auto rebuilt = [this, lane](std::span<const uint8_t> d) { on_rebuilt(d, lane); };
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
  dispatch(p, lane);
  // A repeated announce comes mid-file: the data of its window went to the file already.
  if (p.header.type == PacketType::kAnnounce && (p.header.flags & common::kFlagFec) &&
      !(p.header.flags & common::kFlagRepeat)) {
    replay_window(p.header, lane);  // data of its window rebuilt before it came went to no file
  }
}

// A packet of session `s` came while another (or none) was current: the old one's files still
// receiving fail, its summary is logged, and `s` starts afresh.
void Assembler::start_session(uint64_t s) {
  if (gate_.session() != 0) {
    table_.fail_receiving("sender restarted (new session)");
    table_.end_session();
    log_summary();
    gate_.retire();
  }
  gate_.start(s);
  for (auto& f : fec_) f->reset();
  fec_at_session_ = fec();
  table_.start_session(s);
}

void Assembler::replay_window(const common::Header& announce, size_t lane) {
  if (announce.fec_pos > announce.seq) return;
  const auto again = [this, lane](std::span<const uint8_t> d, bool rebuilt) {
    // Data, and the end or abort of a small file whose whole life fits in the window: all of it
    // went to no file while the announce was missing. Seq order: data before its end.
    Packet q;
    if (common::decode_packet(d, &q) == DecodeStatus::kOk &&
        (q.header.type == PacketType::kData || q.header.type == PacketType::kZData ||
         q.header.type == PacketType::kEnd || q.header.type == PacketType::kAbort)) {
      dispatch(q, lane, rebuilt);
    }
  };
  fec_[lane]->replay(announce.seq - announce.fec_pos, again);
}

// A datagram FEC rebuilt: checked like any other, not counted as received on the link.
void Assembler::on_rebuilt(std::span<const uint8_t> data, size_t lane) {
  Packet p;
  if (common::decode_packet(data, &p) != DecodeStatus::kOk ||
      p.header.session_id != gate_.session() || !(p.header.flags & common::kFlagFec) ||
      (p.header.flags & common::kSealFlags) || p.header.type == PacketType::kParity) {
    ++counters_.rebuilt_bad;
    return;
  }
  dispatch(p, lane, /*rebuilt=*/true);
  // The file's data of this window came before its announce was rebuilt and was dropped as of
  // an unknown file: offer it again (what was taken already counts as a duplicate).
  if (p.header.type == PacketType::kAnnounce) replay_window(p.header, lane);
}

void Assembler::dispatch(const Packet& p, size_t lane, bool rebuilt) {
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
        handle_heartbeat(p, lane);
        break;
      case PacketType::kFileList:
        table_.handle_file_list(p, lane);
        break;
      case PacketType::kSenderInfo:
        handle_sender_info(p);
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

void Assembler::handle_sender_info(const Packet& p) {
  common::SenderInfo si;
  if (common::decode_sender_info(p.payload, &si) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  if (gate_.sender_id() != si.sender_id && si.sender_id != 0) {
    spdlog::info("Info: sender session {:016x} comes from sender {:016x}", gate_.session(),
                 si.sender_id);
  }
  gate_.on_sender_info(si);
}

void Assembler::handle_heartbeat(const Packet& p, size_t lane) {
  common::Heartbeat hb;
  if (common::decode_heartbeat(p.payload, &hb) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  gate_.on_heartbeat(lane, hb);
}

// ---------------------------------------------------------------------------------------------
// Polling, shutdown, reports

void Assembler::poll(bool wait) {
  table_.pump(wait);
  const auto now = clock_.now();
  table_.tick(now);
  gate_.report_loss(now, fec().rebuilt - fec_at_session_.rebuilt);
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
  table_.end_session(/*receiver_stopping=*/true);
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
  return gate_.finished(idle() && !table_.holds_list_entries());
}

void Assembler::log_summary() const {
  const uint64_t session = gate_.session();
  if (session == 0) return;
  uint64_t rejected = 0;
  for (size_t i = 1; i < common::kDecodeStatusCount; ++i) rejected += counters_.rejected[i];
  const FecCounters fc = fec();
  uint64_t open = 0;
  for (const auto& f : fec_) open += f->unrepaired_open();
  const uint64_t rebuilt = fc.rebuilt - fec_at_session_.rebuilt;
  const uint64_t lost_groups = fc.groups_lost - fec_at_session_.groups_lost + open;
  uint64_t auth = 0;
  for (uint64_t n : counters_.auth_rejected) auth += n;
  const size_t finishing = table_.finishing(session);
  const SessionFiles& sf = table_.session_files();
  spdlog::info(
      "Info: session {:016x}: {} file(s) passed, {} failed, {} refused, {} filtered{}; "
      "packets: {} received, {} lost, {} rejected, {} from other sessions{}{}",
      session, sf.passed, sf.failed, sf.refused, sf.filtered,
      finishing > 0 ? fmt::format(", {} still being written", finishing) : "", gate_.received(),
      gate_.lost(), rejected, counters_.other_session,
      rebuilt + lost_groups > 0
          ? fmt::format("; FEC rebuilt {}, {} group(s) beyond repair", rebuilt, lost_groups)
          : "",
      auth > 0 ? fmt::format("; {} failed authentication", auth) : "");
}

}  // namespace ddft::receiver
