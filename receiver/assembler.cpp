#include "receiver/assembler.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/json.hpp"
#include "common/logging.hpp"

namespace ddft::receiver {
using namespace std::chrono;
using common::DecodeStatus;
using common::Packet;
using common::PacketType;

// ---------------------------------------------------------------------------------------------
// SeqCounter, IntervalStat

void SeqCounter::reset() { *this = SeqCounter(); }

bool SeqCounter::record(uint64_t seq) {
  const bool first = !window_.started();
  switch (window_.take(seq)) {
    case Window::Take::kTooOld:
      ++received_;  // too old to tell a late packet from a duplicate; count it as late
      return true;
    case Window::Take::kSeen:
      return false;
    case Window::Take::kNew:
      break;
  }
  if (first || seq < first_) first_ = seq;
  ++received_;
  return true;
}

uint64_t SeqCounter::lost() const {
  if (!window_.started()) return 0;
  const uint64_t expected = window_.max() - first_ + 1;
  return expected > received_ ? expected - received_ : 0;
}

std::string IntervalStat::format() const {
  const double avg = count ? static_cast<double>(sum_ns) / static_cast<double>(count) / 1e6 : 0.0;
  const auto peak = std::max<uint64_t>(1, (max_ns + 999'999) / 1'000'000);
  return fmt::format("{:.2f}/{}", avg, peak);
}

// ---------------------------------------------------------------------------------------------
// Files in flight

struct Assembler::File {
  uint64_t session = 0;
  uint32_t id = 0;
  std::string path;
  common::VerifyType verify = common::VerifyType::kNone;
  uint8_t pause_s = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint64_t chunk_size = 0;
  uint64_t chunks_total = 0;
  uint64_t chunks_received = 0;
  uint64_t bytes_received = 0;
  std::vector<uint64_t> bitmap;
  std::map<uint64_t, Block*> blocks;  // resident blocks by block index
  std::set<uint64_t> evicted;         // block indexes written out early (partial)
  uint64_t hash_next = 0;             // next block index to hash
  bool hash_stream = true;            // false: verify by reading the file back
  std::unique_ptr<common::Hasher> hasher;
  TempFile tmp;
  State state = State::kReceiving;
  int ops_pending = 0;
  int io_error = 0;
  std::string fail_reason;
  bool end_seen = false;
  common::Clock::time_point end_seen_at{};
  common::End end;
  common::Clock::time_point announced{};
  common::Clock::time_point first_data{};
  common::Clock::time_point last_packet{};
  uint64_t next_report = 0;
  uint8_t last_copy = 0;      // --repeat: the copy whose data came last
  uint64_t ring_drops = 0;    // its packets dropped in a full receive buffer
  bool superseded = false;    // the sender has announced a later file
  common::Clock::time_point superseded_at{};
  bool tmp_ready = false;     // its temporary file exists (created on the pool)
  bool joined_late = false;   // announced by a repeat: its start went before this receiver
  bool record_posted = false; // its failure record is being written
  bool sync_failed = false;   // a flush or folder sync failed: its data is not to be kept

  bool has_chunk(uint64_t i) const { return (bitmap[i / 64] >> (i % 64)) & 1; }
  void set_chunk(uint64_t i) { bitmap[i / 64] |= uint64_t{1} << (i % 64); }
  uint64_t block_count(size_t block_size) const {
    return size / block_size + (size % block_size != 0);
  }
};

namespace {
// A write's cookie is its Block* (8-aligned: low bits clear); the committer's folder syncs carry
// Committer::kCookieTag in theirs.
static_assert(alignof(std::max_align_t) >= 4 && Committer::kCookieTag != 0);
constexpr size_t kMissingRangesInRecord = 1000;
constexpr size_t kMissingRangesInLog = 5;
// More than a session's complete file list names (the sender lists at most 100,000 files at
// the end of a session), so that no file of the list is taken for one never announced.
constexpr size_t kSeenIdsKept = 262144;
// File-system calls at once (creates, renames, flushes, records): enough for a slow disk's
// latency to overlap, few enough for a small host.
constexpr unsigned kFsThreads = 4;
// Bounds on what one announce may make the receiver hold: 2^60 bytes, and a chunk bitmap of
// 16 MiB (1.2 TB at the smallest chunk, 1.1 PB at the default one).
constexpr uint64_t kMaxFileSize = uint64_t{1} << 60;
constexpr uint64_t kMaxBitmapWords = (uint64_t{16} << 20) / 8;
// How long a file whose end packet has arrived may wait for reordered data before it fails.
constexpr auto kEndGrace = std::chrono::milliseconds(500);
// A flood of forged announces (without --key-file anyone on the link can send them) must not
// fill the failed folder: records of refused files and of failed files that brought no data,
// beyond this many a minute, are left out (each is still counted, and the number left out is
// logged).
constexpr uint64_t kRecordsPerMinute = 120;
// Files the sender's later packets vouch for (their end came, or the session's file list names
// them) get a budget of their own, high enough that a real burst is named whole: a stalled disk
// that drops thousands of small files' packets stays well inside it.
constexpr uint64_t kVouchedRecordsPerMinute = 20000;
// Files in flight (receiving, finishing their writes, waiting for the committer's flush): at
// least this multiple of --max-files-in-flight, and as many as the descriptor limit allows (two
// descriptors each, a third while O_DIRECT writes run), up to kMaxFilesInFlight. A slow flush
// (hundreds of small files a batch under rws) must not make later files be refused.
constexpr size_t kFinishingPerBound = 16;
constexpr size_t kMaxFilesInFlight = 8192;
constexpr size_t kDescriptorsKept = 256;  // for the ring, the log, sockets, hooks...

size_t files_in_flight_bound(size_t max_receiving) {
  rlimit rl{};
  size_t by_fds = 0;
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur > kDescriptorsKept) {
    by_fds = (static_cast<size_t>(rl.rlim_cur) - kDescriptorsKept) / 3;
  } else if (rl.rlim_cur == RLIM_INFINITY) {
    by_fds = kMaxFilesInFlight;
  }
  return std::max(kFinishingPerBound * max_receiving, std::min(kMaxFilesInFlight, by_fds));
}
// Authentication failures: the first in detail at once, then a count at most this often.
constexpr auto kAuthLogInterval = std::chrono::seconds(10);
// How often the replay state is saved while a session runs (it is saved at once when a session
// starts).
constexpr auto kMarkSaveInterval = std::chrono::seconds(1);
}  // namespace

std::string_view auth_reject_name(AuthReject r) {
  switch (r) {
    case AuthReject::kNoKey: return "sealed but this receiver has no --key-file";
    case AuthReject::kNotSealed: return "not sealed";
    case AuthReject::kMalformed: return "malformed seal";
    case AuthReject::kBadTag: return "bad tag";
    case AuthReject::kReplayed: return "replayed";
    case AuthReject::kStaleSession: return "of an earlier session";
  }
  return "?";
}

Assembler::Assembler(const ReceiverConfig& cfg, OutputDir& out, common::BlockIo& writer,
                     common::AlignedBuffer& block_memory, common::Clock& clock)
    : cfg_(cfg),
      out_(out),
      writer_(writer),
      clock_(clock),
      fs_(std::make_unique<FsPool>(cfg.null_sink ? 0 : kFsThreads)),
      files_bound_(files_in_flight_bound(cfg.max_files_in_flight)),
      block_size_(cfg.write_block_kb * 1024),
      fec_(cfg.max_packet_size, cfg.fec_buffer_mb << 20) {
  make_committer();
  const size_t count = block_memory.size() / block_size_;
  blocks_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    blocks_[i].mem = block_memory.data() + i * block_size_;
    free_blocks_.push_back(static_cast<int>(count - 1 - i));
  }
  if (!cfg.keys.empty()) {
    opener_ = std::make_unique<common::Opener>(cfg.keys);
    open_buf_.resize(cfg.max_packet_size);
    std::optional<SessionMark> restored;
    if (const auto text = out_.read_state()) {
      std::string error;
      restored = parse_session_mark(*text, &error);
      if (!restored) {
        throw std::runtime_error(fmt::format(
            "session state '{}/{}' is damaged ({}): remove it to accept the next session the "
            "sender starts",
            out_.root(), kStateFileName, error));
      }
      spdlog::info("Info: replay protection: newest session {:016x} (started {} ns after the "
                   "epoch by the sender's clock), datagrams up to seq {} taken",
                   restored->session_id, restored->start_ns(), restored->max_seq);
    }
    guard_ = std::make_unique<ReplayGuard>(restored);
  }
}

Assembler::Scope::~Scope() {
  if (--a_.depth_ == 0) a_.graveyard_.clear();
}

Assembler::~Assembler() {
  // A destructor must not throw: an IO engine that already failed reports it again here.
  try {
    if (!files_.empty() || io_pending()) fail_all("receiver stopped");
    if (guard_ && guard_->take_changed()) save_session_mark();
    while (fs_->pending() > 0) {
      fs_->wait(std::chrono::milliseconds(100));
      fs_->reap();
    }
  } catch (const std::exception& e) {
    spdlog::error("Error: files in flight could not be recorded as failed: {}", e.what());
  }
}

void Assembler::set_earlier(OutcomeLog* journal,
                            const std::vector<std::pair<uint64_t, uint32_t>>& known) {
  journal_ = journal;
  earlier_.insert(known.begin(), known.end());
  make_committer();  // it writes the journal's "C" lines
}

void Assembler::make_committer() {
  // Folder syncs go through the writer's queue like the data writes (and its backlog when full).
  auto submit_sync = [this](int fd, uint64_t cookie) {
    PendingOp op;
    op.sync = true;
    op.fd = fd;
    op.cookie = cookie;
    submit(op);
  };
  committer_ = std::make_unique<Committer>(
      out_, *fs_, cfg_.null_sink ? WriteMode::kBuffered : cfg_.write_mode, journal_, submit_sync,
      [this](const CommitResult& r) { on_committed(r); });
}

bool Assembler::known_earlier(uint64_t session, uint32_t id) const {
  return earlier_.count({session, id}) != 0;
}

// ---------------------------------------------------------------------------------------------
// Datagrams

void Assembler::on_datagram(std::span<const uint8_t> data, size_t real_len) {
  Scope scope(*this);
  ++counters_.datagrams;
  Packet p;
  DecodeStatus st = real_len > data.size() ? DecodeStatus::kBadLength
                                           : common::decode_packet(data, &p);
  if (real_len > data.size()) ++counters_.truncated;
  if (st != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(st)];
    const auto now = clock_.now();
    if (now - last_reject_log_ > seconds(1)) {
      last_reject_log_ = now;
      spdlog::warn("Warn: dropped a damaged or foreign datagram ({}, {} bytes{})",
                   common::decode_status_name(st), real_len,
                   real_len > data.size() ? ", larger than --max-packet-size" : "");
    }
    return;
  }
  if (!unseal(&data, &p)) return;
  if (!accept_session(p)) return;
  const auto now = clock_.now();
  if (silence_warned_) {
    silence_warned_ = false;
    spdlog::info("Info: sender session {:016x}: packets again after {:.1f} s of silence", session_,
                 duration<double>(now - last_session_packet_).count());
  }
  last_session_packet_ = now;
  if (!seq_.record(p.header.seq)) {
    ++counters_.duplicates;
    return;
  }
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
      fec_.add_parity(pa, shard, [this](std::span<const uint8_t> d) { on_rebuilt(d); });
      return;
    }
    if ((p.header.flags & common::kFlagFec) &&
        !fec_.add_source(p.header, data, [this](std::span<const uint8_t> d) { on_rebuilt(d); })) {
      ++counters_.duplicates;  // it was rebuilt before it came
      return;
    }
  } catch (const std::exception& e) {
    ++counters_.handling_errors;
    spdlog::error("Error: FEC could not handle a packet: {}", e.what());
  }
  dispatch(p);
  // A repeated announce comes mid-file: the data of its window went to the file already.
  if (p.header.type == PacketType::kAnnounce && (p.header.flags & common::kFlagFec) &&
      !(p.header.flags & common::kFlagRepeat)) {
    replay_window(p.header);  // data of its window rebuilt before it came went to no file
  }
}

bool Assembler::unseal(std::span<const uint8_t>* data, Packet* p) {
  const bool sealed = (p->header.flags & common::kSealFlags) != 0;
  if (!opener_) {
    if (sealed) reject_auth(AuthReject::kNoKey, *p, data->size());
    return !sealed;
  }
  size_t inner_len = 0;
  size_t key_index = 0;
  common::Salt salt{};
  switch (opener_->open(*data, p->header, open_buf_, &inner_len, &salt, &key_index)) {
    case common::OpenStatus::kOk: break;
    case common::OpenStatus::kNotSealed: reject_auth(AuthReject::kNotSealed, *p, data->size()); return false;
    case common::OpenStatus::kMalformed: reject_auth(AuthReject::kMalformed, *p, data->size()); return false;
    case common::OpenStatus::kBadTag: reject_auth(AuthReject::kBadTag, *p, data->size()); return false;
  }
  switch (guard_->check(salt, p->header.session_id, p->header.seq)) {
    case ReplayGuard::Verdict::kFresh:
      break;
    case ReplayGuard::Verdict::kNewSession:
      save_session_mark();
      spdlog::info("Info: sender session {:016x}: datagrams authenticated{} (AES-256-GCM){}",
                   p->header.session_id,
                   (p->header.flags & common::kFlagEncrypt) ? " and encrypted" : ", not encrypted",
                   cfg_.keys.size() > 1
                       ? fmt::format(" with key {} of {} ({})", key_index + 1, cfg_.keys.size(),
                                     cfg_.key_files.size() > key_index ? cfg_.key_files[key_index] : "")
                       : "");
      break;
    case ReplayGuard::Verdict::kDuplicate:
      ++counters_.duplicates;
      return false;
    case ReplayGuard::Verdict::kReplayed:
      reject_auth(AuthReject::kReplayed, *p, data->size());
      return false;
    case ReplayGuard::Verdict::kStaleSession:
      reject_auth(AuthReject::kStaleSession, *p, data->size());
      return false;
  }
  // The outer header was checked (decode_packet) and authenticated: the inner one is the same
  // but for its length and the seal's flags. Its checksum is only recomputed for FEC sources.
  *data = std::span<const uint8_t>(open_buf_.data(), inner_len);
  p->header.flags &= static_cast<uint16_t>(~common::kSealFlags);
  p->header.payload_len = static_cast<uint16_t>(inner_len - common::kHeaderSize);
  p->payload = data->subspan(common::kHeaderSize);
  return true;
}

void Assembler::reject_auth(AuthReject why, const Packet& p, size_t len) {
  ++counters_.auth_rejected[static_cast<size_t>(why)];
  const auto now = clock_.now();
  if (auth_logged_ && now - last_auth_log_ < kAuthLogInterval) {
    ++auth_unlogged_[static_cast<size_t>(why)];
    return;
  }
  auth_logged_ = true;
  last_auth_log_ = now;
  spdlog::warn("Warn: dropped a datagram that failed authentication ({}; {} bytes, session "
               "{:016x}, seq {}); its data is never written",
               auth_reject_name(why), len, p.header.session_id, p.header.seq);
}

void Assembler::save_session_mark() {
  if (!guard_ || !guard_->mark()) return;
  guard_->take_changed();  // what is saved now need not be saved again by the next poll
  last_mark_save_ = clock_.now();
  // One save at a time, on the pool (it fsyncs): a change meanwhile is saved right after.
  if (mark_saving_) {
    mark_dirty_ = true;
    return;
  }
  mark_saving_ = true;
  auto reason = std::make_shared<std::string>();
  auto ok = std::make_shared<bool>(false);
  fs_->post(
      [this, text = format_session_mark(*guard_->mark()), reason, ok] {
        *ok = out_.write_state(text, reason.get());
      },
      [this, reason, ok] {
        mark_saving_ = false;
        if (!*ok) {
          const auto now = clock_.now();
          if (!save_error_logged_ || now - last_save_error_log_ >= seconds(60)) {
            save_error_logged_ = true;
            last_save_error_log_ = now;
            spdlog::warn("Warn: cannot save the replay state '{}/{}': {} (after a restart the "
                         "receiver could take this session's datagrams again)",
                         out_.root(), kStateFileName, *reason);
          }
        }
        if (mark_dirty_) {
          mark_dirty_ = false;
          save_session_mark();
        }
      });
}

void Assembler::replay_window(const common::Header& announce) {
  if (announce.fec_pos > announce.seq) return;
  fec_.replay(announce.seq - announce.fec_pos, [this](std::span<const uint8_t> d) {
    // Data, and the end or abort of a small file whose whole life fits in the window: all of it
    // went to no file while the announce was missing. Seq order: data before its end.
    Packet q;
    if (common::decode_packet(d, &q) == DecodeStatus::kOk &&
        (q.header.type == PacketType::kData || q.header.type == PacketType::kEnd ||
         q.header.type == PacketType::kAbort)) {
      dispatch(q);
    }
  });
}

// A datagram FEC rebuilt: checked like any other, not counted as received on the link.
void Assembler::on_rebuilt(std::span<const uint8_t> data) {
  Packet p;
  if (common::decode_packet(data, &p) != DecodeStatus::kOk || p.header.session_id != session_ ||
      !(p.header.flags & common::kFlagFec) || (p.header.flags & common::kSealFlags) ||
      p.header.type == PacketType::kParity) {
    ++counters_.rebuilt_bad;
    return;
  }
  dispatch(p);
  // The file's data of this window came before its announce was rebuilt and was dropped as of
  // an unknown file: offer it again (what was taken already counts as a duplicate).
  if (p.header.type == PacketType::kAnnounce) replay_window(p.header);
}

void Assembler::dispatch(const Packet& p) {
  try {
    switch (p.header.type) {
      case PacketType::kAnnounce:
        handle_announce(p);
        break;
      case PacketType::kData:
        handle_data(p);
        break;
      case PacketType::kEnd:
        handle_end(p);
        break;
      case PacketType::kAbort:
        handle_abort(p);
        break;
      case PacketType::kHeartbeat:
        handle_heartbeat(p);
        break;
      case PacketType::kFileList:
        handle_file_list(p);
        break;
      case PacketType::kParity:
        break;  // handled before
    }
  } catch (const std::exception& e) {
    ++counters_.handling_errors;
    spdlog::error("Error: a {} packet could not be handled: {}",
                  static_cast<int>(p.header.type), e.what());
  }
}

bool Assembler::accept_session(const Packet& p) {
  const uint64_t s = p.header.session_id;
  if (s == session_) return true;
  // With FEC any packet of a window may open the session: the announce itself may be lost and
  // rebuilt from the window, which is only possible when its other packets were kept.
  const bool opener = p.header.type == PacketType::kAnnounce ||
                      p.header.type == PacketType::kHeartbeat ||
                      p.header.type == PacketType::kParity || (p.header.flags & common::kFlagFec);
  if (!opener || retired_sessions_.count(s) != 0) {
    ++counters_.other_session;
    return false;
  }
  if (session_ != 0) retire_session("sender restarted (new session)");
  session_ = s;
  session_final_ = false;
  silence_logged_ = false;
  counters_.lost_in_past_sessions += seq_.lost();
  seq_.reset();
  fec_.reset();
  fec_at_session_ = fec_.counters();
  lost_logged_ = 0;
  heartbeat_interval_ = milliseconds(1000);
  silence_warned_ = false;
  seen_ids_.clear();
  filtered_ids_.clear();
  unnamed_.clear();
  session_files_ = {};
  ++counters_.sessions;
  spdlog::info("Info: sender session {:016x} started", s);
  // Earlier runs' outcomes matter for the session they belong to only: a receiver restarted in
  // the middle of a session keeps them, a new session drops the rest (memory and journal).
  for (auto it = earlier_.begin(); it != earlier_.end();) {
    it = it->first == s ? std::next(it) : earlier_.erase(it);
  }
  if (journal_ != nullptr) fs_->post([j = journal_, s] { j->keep_session(s); }, nullptr);
  return true;
}

void Assembler::retire_session(const std::string& reason) {
  // Files still receiving never get the rest of their data. Those whose end came are only
  // waiting for their writes: they finish on their own (they are keyed by session, so the new
  // session's files cannot clash with them).
  std::vector<File*> open;
  for (auto& [key, f] : files_) {
    if (f->state == State::kReceiving) open.push_back(f.get());
  }
  for (File* f : open) fail_file(*f, reason);
  log_summary();
  retired_sessions_.insert(session_);
  if (retired_sessions_.size() > 1024) retired_sessions_.erase(retired_sessions_.begin());
}

Assembler::File* Assembler::find_file(uint32_t id) {
  auto it = files_.find({session_, id});
  return it == files_.end() ? nullptr : it->second.get();
}

void Assembler::handle_announce(const Packet& p) {
  common::Announce a;
  if (common::decode_announce(p.payload, &a) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  if (find_file(a.file_id) != nullptr || seen_ids_.count(a.file_id) != 0) return;  // repeat
  seen_ids_.insert(a.file_id);  // from now on a repeat of this announce is ignored
  if (seen_ids_.size() > kSeenIdsKept) seen_ids_.erase(seen_ids_.begin());
  // An earlier run of this receiver finished it, or named it as failed at start-up (the file it
  // left behind): the rest of its packets are not recorded a second time.
  if (known_earlier(session_, a.file_id)) {
    ++counters_.listed_known;
    return;
  }
  // A repeated announce of a file this receiver never saw start: it joined mid-file.
  const bool joined_late = (p.header.flags & common::kFlagRepeat) != 0;
  // The sender sends one file after the other: a file still receiving when the next is announced
  // has lost its end (or data FEC could not rebuild). It gets a short grace for reordered packets.
  for (auto& [key, other] : files_) {
    if (key.first == session_ && other->state == State::kReceiving && !other->superseded) {
      other->superseded = true;
      other->superseded_at = clock_.now();
    }
  }

  auto f = std::make_unique<File>();
  f->session = session_;
  f->id = a.file_id;
  f->path = std::string(a.path);
  f->verify = a.verify;
  f->pause_s = a.pause_s;
  f->size = a.size;
  f->mtime_ns = a.mtime_ns;
  f->mode = a.mode;
  f->chunk_size = a.chunk_size;
  // No "+ chunk - 1": a hostile size near 2^64 must not wrap to zero chunks.
  f->chunks_total = a.size / a.chunk_size + (a.size % a.chunk_size != 0);
  f->announced = f->last_packet = clock_.now();
  f->next_report = cfg_.report_mb * 1024 * 1024;

  // Receive filters are policy, not a failure: logged and counted, no record. They apply to
  // acceptable names only, so a hostile name is refused (and recorded) as such whatever the
  // patterns say. The file's data and end packets are then dropped as of an unknown file.
  if (!cfg_.filter.empty() && out_.check_path(f->path).empty()) {
    if (auto why = cfg_.filter.refusal(f->path)) {
      ++counters_.files_filtered;
      ++session_files_.filtered;
      filtered_ids_.insert(f->id);
      if (filtered_ids_.size() > kSeenIdsKept) filtered_ids_.erase(filtered_ids_.begin());
      spdlog::info("Info: filtered {}: {}", common::json_quote(f->path), *why);
      return;
    }
  }

  std::string reason;
  const uint64_t bitmap_words = f->chunks_total / 64 + 1;
  // Room for it: the free space less what the files still in flight will write.
  uint64_t promised = 0;
  for (const auto& [key, other] : files_) {
    if (other->state == State::kReceiving) promised += other->size - other->bytes_received;
  }
  const uint64_t free = out_.free_bytes();
  if (cfg_.max_file_size > 0 && a.size > cfg_.max_file_size) {
    reason = fmt::format("announced size {} bytes is over --max-file-size {}",
                         common::with_commas(a.size), common::with_commas(cfg_.max_file_size));
  } else if (a.size > kMaxFileSize || bitmap_words > kMaxBitmapWords) {
    reason = fmt::format("announced size {} is larger than this receiver accepts", a.size);
  } else if (free != UINT64_MAX && a.size > 0 && a.size + promised > free) {
    reason = fmt::format("not enough free space: {} bytes announced, {} free on the output "
                         "folder's file system{}",
                         common::with_commas(a.size), common::with_commas(free),
                         promised ? fmt::format(" ({} promised to files in flight)",
                                                common::with_commas(promised))
                                  : "");
  } else if (reason = out_.check_path(f->path); !reason.empty()) {
    // refused below, before any file in flight is made to give way
  } else if (!make_room_for_file(&reason)) {
    // refused below
  } else {
    // Accepted. The temporary file is made on the pool; data that comes meanwhile waits in its
    // write blocks.
    f->bitmap.assign(bitmap_words, 0);
    f->hasher = common::make_hasher(f->verify);
    f->joined_late = joined_late;
    if (joined_late) ++counters_.files_joined_late;
    Origin o;
    o.rel_path = f->path;
    o.size = f->size;
    o.mtime_ns = f->mtime_ns;
    o.mode = f->mode;
    o.verify = std::string(common::verify_type_name(f->verify));
    o.session = session_;
    o.file_id = f->id;
    o.chunk_size = static_cast<uint32_t>(f->chunk_size);
    if (sender_) o.sender = sender_();
    o.announced_ns = std::chrono::duration_cast<nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    File* raw = f.get();
    files_.emplace(std::make_pair(session_, a.file_id), std::move(f));
    ++raw->ops_pending;
    auto ok = std::make_shared<bool>(false);
    auto why = std::make_shared<std::string>();
    fs_->post(
        [this, raw, o = std::move(o), ok, why, tmp = temp_name(session_, raw->id)] {
          *ok = out_.create_temp(o.rel_path, tmp, &raw->tmp, why.get(), &o);
        },
        [this, raw, ok, why] {
          Scope scope(*this);
          on_created(*raw, *ok, *why);
        });
    return;
  }
  refuse(*f, reason);
}

void Assembler::on_created(File& f, bool ok, const std::string& reason) {
  --f.ops_pending;
  if (!ok) {
    // Refused after all (the folder or the disk would not have it): like a refusal at the
    // announce, with what arrived meanwhile dropped.
    if (f.state == State::kFailing) {
      f.fail_reason = "cannot create the temporary file: " + reason;
    } else {
      refuse(f, reason);
      f.state = State::kFailing;
      f.record_posted = true;  // refuse() wrote the record
      destroy(f);
      return;
    }
    advance(f);
    return;
  }
  f.tmp_ready = true;
  if (f.state != State::kFailing) {
    spdlog::info("Info: {}, Size: {} (bytes) . . . receiving{}{}", f.path,
                 common::with_commas(f.size),
                 f.pause_s ? fmt::format(" (send pausing {} seconds)", f.pause_s) : "",
                 f.joined_late ? " (joined mid-file: its first packets went before this "
                                 "receiver started)"
                               : "");
  }
  // Blocks filled while the file was being made go out now.
  std::vector<Block*> ready;
  for (auto& [idx, b] : f.blocks) {
    if (!b->submitted && (b->filled == b->size || f.state != State::kReceiving)) {
      ready.push_back(b);
    }
  }
  for (Block* b : ready) submit_block(*b);
  advance(f);
}

bool Assembler::make_room_for_file(std::string* reason) {
  // Files finishing their I/O (or being made, or recorded) hold a descriptor each: far beyond
  // the bound, new ones are refused, and no file still receiving is failed for them.
  if (files_.size() >= files_bound_) {
    *reason = fmt::format("{} files in flight are still being written (the disk is not keeping "
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
    if (f->state == State::kFailing) ++failing;
    if (f->state != State::kReceiving) continue;
    ++receiving;
    if (oldest == nullptr || f->announced < oldest->announced) oldest = f.get();
  }
  if (failing >= cfg_.max_files_in_flight && receiving >= cfg_.max_files_in_flight) {
    *reason = fmt::format("{} failed files are still being recorded (the disk is not keeping "
                          "up)",
                          failing);
    return false;
  }
  if (receiving >= cfg_.max_files_in_flight) {
    ++counters_.files_evicted;
    fail_file(*oldest, fmt::format("more than {} files in flight (--max-files-in-flight): the "
                                   "oldest fails to make room for a new one",
                                   cfg_.max_files_in_flight));
  }
  return true;
}

bool Assembler::take_record_slot(bool vouched) {
  // With a key only the authenticated sender can make refusals: each is recorded, whatever the
  // rate (a full disk refusing a thousand files must say which).
  if (opener_) return true;
  roll_record_window(clock_.now());
  if (vouched ? ++vouched_in_window_ <= kVouchedRecordsPerMinute
              : ++records_in_window_ <= kRecordsPerMinute) {
    return true;
  }
  ++counters_.records_suppressed;
  return false;
}

void Assembler::roll_record_window(common::Clock::time_point now, bool force) {
  if (!force && now - record_window_ < minutes(1)) return;
  const uint64_t left_out = (records_in_window_ > kRecordsPerMinute
                                 ? records_in_window_ - kRecordsPerMinute
                                 : 0) +
                            (vouched_in_window_ > kVouchedRecordsPerMinute
                                 ? vouched_in_window_ - kVouchedRecordsPerMinute
                                 : 0);
  if (left_out > 0) {
    spdlog::warn("Warn: {} refused file(s), or failed ones that had received nothing, got no "
                 "record and no log line (at most {} a minute, {} for files the sender's file "
                 "list or end packet vouches for: a flood of announces?)",
                 left_out, kRecordsPerMinute, kVouchedRecordsPerMinute);
  }
  record_window_ = now;
  records_in_window_ = 0;
  vouched_in_window_ = 0;
}

void Assembler::refuse(const File& f, const std::string& reason) {
  ++counters_.files_refused;
  if (f.session == session_) ++session_files_.refused;
  if (!take_record_slot()) return;
  FailureRecord rec;
  rec.rel_path = f.path;
  rec.session = session_;
  rec.file_id = f.id;
  rec.expected_size = f.size;
  rec.reason = "refused: " + reason;
  rec.verify = std::string(common::verify_type_name(f.verify));
  write_record(rec, nullptr, [path = f.path, reason](const std::string& where) {
    spdlog::error("Error: refused file {}: {} (record: {})", common::json_quote(path), reason,
                  where.empty() ? "not written" : where);
  });
}

namespace {
// The journal's F line for a file named as failed by `rec`, whose record goes to `record`.
Outcome failed_outcome(const FailureRecord& rec, const std::string& record) {
  Outcome o;
  o.kind = Outcome::Kind::kFailed;
  o.session = rec.session;
  o.file_id = rec.file_id;
  o.size = rec.expected_size;
  o.verify = rec.verify;
  o.rel_path = rec.rel_path;
  o.record = record;
  o.reason = rec.reason;
  o.received = rec.bytes_received;
  return o;
}
}  // namespace

void Assembler::write_record(const FailureRecord& rec, std::shared_ptr<TempFile> tmp,
                             std::function<void(const std::string&)> then) {
  auto where = std::make_shared<std::string>();
  // The journal's F line first, naming the record to come: a crash before the record is
  // written, or before its Error line is logged, is finished at the next start (the record
  // written, the line logged), and the file list cannot name the file a second time. Then the
  // record (whole or not at all), the Error line, and the journal's L line.
  fs_->post(
      [this, rec, tmp, where, j = journal_] {
        const std::string name = out_.record_name(rec);
        if (j != nullptr && rec.session != 0 && !rec.no_record) {
          j->append(failed_outcome(rec, out_.record_path(name)));
        }
        TempFile none;
        *where = out_.fail(tmp ? *tmp : none, rec, name);
      },
      [this, rec, tmp, where, then = std::move(then)] {
        // Not written (a read-only or full file system): kept, and tried again until the file
        // system takes it (retry_records()), so that the file is named on disk too.
        if (where->empty() && !rec.no_record) keep_unwritten(rec, tmp);
        then(*where);
        note_logged(rec);
      });
}

void Assembler::note_logged(const FailureRecord& rec) {
  if (journal_ == nullptr || rec.session == 0 || rec.no_record) return;
  Outcome o = failed_outcome(rec, "");
  o.kind = Outcome::Kind::kLogged;
  fs_->post([j = journal_, o] { j->append(o); }, nullptr);
}

void Assembler::keep_unwritten(const FailureRecord& rec, std::shared_ptr<TempFile> tmp) {
  constexpr size_t kUnwrittenKept = 10000;
  if (unwritten_.size() >= kUnwrittenKept) {
    ++unwritten_dropped_;
    unwritten_.pop_front();
  }
  unwritten_.push_back({rec, std::move(tmp)});
}

void Assembler::retry_records(common::Clock::time_point now) {
  if (unwritten_.empty() || retrying_ || now - last_retry_ < seconds(5)) return;
  last_retry_ = now;
  retrying_ = true;
  // One task writes them in order and stops at the first that still fails.
  auto batch = std::make_shared<std::deque<Unwritten>>();
  batch->swap(unwritten_);
  auto written = std::make_shared<std::vector<std::string>>();
  fs_->post(
      [this, batch, written, j = journal_] {
        for (const Unwritten& u : *batch) {
          TempFile none;
          const std::string name = out_.record_name(u.rec);
          const std::string where = out_.fail(u.tmp ? *u.tmp : none, u.rec, name);
          if (where.empty()) break;
          if (j != nullptr && u.rec.session != 0) {
            j->append(failed_outcome(u.rec, where));
            Outcome logged = failed_outcome(u.rec, "");
            logged.kind = Outcome::Kind::kLogged;  // its Error line was logged when it failed
            j->append(logged);
          }
          written->push_back(where);
        }
      },
      [this, batch, written] {
        retrying_ = false;
        for (size_t i = 0; i < written->size(); ++i) {
          spdlog::info("Info: {}: its failure record is written now (the file system takes "
                       "writes again): {}",
                       (*batch)[i].rec.rel_path, (*written)[i]);
        }
        // What is still unwritten goes back in front of anything that failed meanwhile.
        for (size_t i = batch->size(); i > written->size(); --i) {
          unwritten_.push_front(std::move((*batch)[i - 1]));
        }
        if (unwritten_dropped_ > 0) {
          spdlog::warn("Warn: {} failure record(s) could not be written and were given up (more "
                       "than 10,000 waited for the file system); their Error lines name them",
                       unwritten_dropped_);
          unwritten_dropped_ = 0;
        }
      });
}

void Assembler::handle_data(const Packet& p) {
  common::DataHeader d;
  std::span<const uint8_t> data;
  if (common::decode_data(p.payload, &d, &data) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  File* f = find_file(d.file_id);
  if (f == nullptr || f->state != State::kReceiving) {
    // A filtered file's packets are expected: counted apart from those of unknown files, which
    // point at trouble.
    if (f == nullptr && filtered_ids_.count(d.file_id) != 0) {
      ++counters_.filtered_packets;
    } else {
      ++counters_.unknown_file;
    }
    return;
  }
  const uint64_t idx = d.offset / f->chunk_size;
  const uint64_t expect_len = idx < f->chunks_total
                                  ? std::min<uint64_t>(f->chunk_size, f->size - d.offset)
                                  : 0;
  if (d.offset % f->chunk_size != 0 || idx >= f->chunks_total || data.size() != expect_len) {
    ++counters_.bad_data;
    return;
  }
  f->last_packet = clock_.now();
  if (f->has_chunk(idx)) {
    ++counters_.duplicates;
    return;
  }
  if (f->bytes_received == 0) f->first_data = f->last_packet;
  // A chunk may straddle two write blocks: copy each piece into its block.
  uint64_t off = d.offset;
  size_t pos = 0;
  while (pos < data.size()) {
    const uint64_t bidx = off / block_size_;
    const size_t in_block = static_cast<size_t>(off % block_size_);
    const size_t take = std::min(data.size() - pos, block_size_ - in_block);
    Block* b = get_block(*f, bidx);
    if (b == nullptr) return;  // the file failed while room was being made
    std::memcpy(b->mem + in_block, data.data() + pos, take);
    const auto start = static_cast<uint32_t>(in_block);
    const auto end = static_cast<uint32_t>(in_block + take);
    // Merge into the block's sorted range list (almost always an append to the last range).
    auto it = std::lower_bound(b->ranges.begin(), b->ranges.end(), std::make_pair(start, end));
    it = b->ranges.insert(it, {start, end});
    if (it != b->ranges.begin() && std::prev(it)->second == it->first) {
      std::prev(it)->second = it->second;
      it = b->ranges.erase(it) - 1;
    }
    if (std::next(it) != b->ranges.end() && it->second == std::next(it)->first) {
      it->second = std::next(it)->second;
      b->ranges.erase(std::next(it));
    }
    b->filled += take;
    pos += take;
    off += take;
    if (b->filled == b->size && !f->evicted.count(bidx)) on_block_filled(*f, *b);
  }
  f->set_chunk(idx);
  ++f->chunks_received;
  f->last_copy = d.copy;
  f->bytes_received += data.size();
  report_progress(*f);
  if (f->end_seen && f->chunks_received == f->chunks_total) advance(*f);
}

void Assembler::handle_end(const Packet& p) {
  common::End e;
  if (common::decode_end(p.payload, &e) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  File* f = find_file(e.file_id);
  if (f == nullptr || f->state != State::kReceiving) return;  // finished, or finishing
  if (f->end_seen && e.copy <= f->end.copy) return;  // a repeat of an end already seen
  const bool key_changed = f->end_seen && (e.key_len != f->end.key_len || e.key != f->end.key);
  f->end_seen = true;
  f->end = e;
  f->last_packet = clock_.now();
  if (f->state != State::kReceiving) return;
  if (e.size != f->size || e.verify != f->verify) {
    fail_file(*f, "end packet does not match the announce (size or verification type)");
    return;
  }
  if (key_changed) {
    fail_file(*f, fmt::format("the file changed between copy {} and copy {} (--repeat)", e.copy,
                              e.copy + 1));
    return;
  }
  // Missing data may still be in flight behind the end packet (reordering): check_timeouts()
  // fails the file if it is still incomplete after a short grace.
  f->end_seen_at = f->last_packet;
  advance(*f);
}

void Assembler::handle_abort(const Packet& p) {
  common::Abort a;
  if (common::decode_abort(p.payload, &a) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  File* f = find_file(a.file_id);
  if (f == nullptr || f->state == State::kFailing) return;
  fail_file(*f, "sender aborted the file: " + std::string(a.reason));
}

void Assembler::handle_heartbeat(const Packet& p) {
  common::Heartbeat hb;
  if (common::decode_heartbeat(p.payload, &hb) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  if (hb.interval_ms > 0) heartbeat_interval_ = milliseconds(hb.interval_ms);
  if ((hb.flags & common::kHeartbeatFinal) && !session_final_) {
    session_final_ = true;
    // Whatever is still receiving gets a short grace for reordered packets, then fails.
    final_deadline_ = clock_.now() + seconds(1);
  }
}

void Assembler::handle_file_list(const Packet& p) {
  common::FileList list;
  if (common::decode_file_list(p.payload, &list) != DecodeStatus::kOk) {
    ++counters_.rejected[static_cast<size_t>(DecodeStatus::kBadPayload)];
    return;
  }
  for (const common::FileListEntry& e : list.entries) {
    // Known to this run (in flight, finished, refused or filtered), or to an earlier one: its
    // outcome is written already, or will be.
    if (auto it = unnamed_.find(e.file_id); it != unnamed_.end()) {
      // It failed with nothing received and its record was left out under the flood bound:
      // the list vouches for it now.
      FailureRecord rec = std::move(it->second);
      unnamed_.erase(it);
      write_named_failure(rec, /*vouched=*/true);
      continue;
    }
    if (find_file(e.file_id) != nullptr || seen_ids_.count(e.file_id) != 0 ||
        filtered_ids_.count(e.file_id) != 0) {
      continue;
    }
    seen_ids_.insert(e.file_id);
    if (seen_ids_.size() > kSeenIdsKept) seen_ids_.erase(seen_ids_.begin());
    if (known_earlier(session_, e.file_id)) {
      ++counters_.listed_known;
      continue;
    }
    record_unannounced(e);
  }
}

void Assembler::record_unannounced(const common::FileListEntry& e) {
  const std::string path(e.path);
  // What its announce would have met: a name the receiver refuses is refused, a filtered one is
  // policy; either way as the announce would have been handled.
  if (std::string why = out_.check_path(path); !why.empty()) {
    File f;
    f.session = session_;
    f.id = e.file_id;
    f.path = path;
    f.size = e.size;
    f.verify = e.verify;
    refuse(f, why);
    return;
  }
  if (!cfg_.filter.empty()) {
    if (auto why = cfg_.filter.refusal(path)) {
      ++counters_.files_filtered;
      ++session_files_.filtered;
      filtered_ids_.insert(e.file_id);
      spdlog::info("Info: filtered {}: {} (named by the sender's file list)",
                   common::json_quote(path), *why);
      return;
    }
  }
  ++counters_.files_failed;
  ++counters_.files_unannounced;
  ++session_files_.failed;
  FailureRecord rec;
  rec.rel_path = path;
  rec.session = session_;
  rec.file_id = e.file_id;
  rec.expected_size = e.size;
  if (e.size > 0) {
    rec.missing.emplace_back(0, e.size);
    rec.missing_ranges_total = 1;
  }
  rec.reason = e.aborted ? "never announced: all its packets were lost (and the sender aborted it)"
                         : "never announced: all its packets were lost";
  rec.verify = std::string(common::verify_type_name(e.verify));
  if (e.key_len > 0) {
    common::Digest d;
    d.type = e.verify;
    d.size = e.key_len;
    d.bytes = e.key;
    rec.expected_key = d.hex();
  }
  write_named_failure(rec, /*vouched=*/true);
}

void Assembler::write_named_failure(FailureRecord rec, bool vouched) {
  // Without --key-file anyone on the link could forge lists: still bounded, by the larger budget
  // of files the sender vouches for. With a key, every one is recorded.
  rec.no_record = !take_record_slot(vouched);
  std::string ranges;
  for (size_t i = 0; i < std::min(rec.missing.size(), kMissingRangesInLog); ++i) {
    ranges += fmt::format("{}{}-{}", i ? ", " : "", rec.missing[i].first, rec.missing[i].second);
  }
  const std::string line =
      rec.no_record ? std::string()
                    : fmt::format("Error: {} FAILED: {}; received {} of {} bytes{}", rec.rel_path,
                                  rec.reason, common::with_commas(rec.bytes_received),
                                  common::with_commas(rec.expected_size),
                                  ranges.empty() ? "" : "; missing bytes " + ranges);
  write_record(rec, nullptr, [line](const std::string& where) {
    if (line.empty()) return;
    spdlog::error("{}; record: {}", line, where.empty() ? "could not be written" : where);
  });
}

// ---------------------------------------------------------------------------------------------
// Blocks

int Assembler::take_free_block() {
  if (free_blocks_.empty()) return -1;
  const int i = free_blocks_.back();
  free_blocks_.pop_back();
  return i;
}

Assembler::Block* Assembler::get_block(File& f, uint64_t index) {
  if (auto it = f.blocks.find(index); it != f.blocks.end()) return it->second;
  int slot = take_free_block();
  while (slot < 0) {
    poll_io(false);
    if ((slot = take_free_block()) >= 0) break;
    if (writer_.in_flight() > 0 || !backlog_.empty()) {
      poll_io(true);
    } else if (!evict_one()) {
      // Every block is held by files whose temporary file is still being made, or by the
      // committer's work: wait for the pool (the ring holds the link's data meanwhile).
      fs_->wait(std::chrono::milliseconds(10));
    }
    slot = take_free_block();
  }
  if (f.state != State::kReceiving) {  // completions reaped above may have failed this file
    free_blocks_.push_back(slot);
    return nullptr;
  }
  Block& b = blocks_[static_cast<size_t>(slot)];
  b.file = &f;
  b.index = index;
  b.size = static_cast<size_t>(std::min<uint64_t>(block_size_, f.size - index * block_size_));
  b.filled = 0;
  b.ranges.clear();
  b.hashed = false;
  b.submitted = false;
  b.orphan = false;
  b.writes_pending = 0;
  f.blocks.emplace(index, &b);
  return &b;
}

// Called when every block is taken and no write is in flight: blocks are held either because an
// earlier hole keeps them from being hashed, or because they have holes themselves. Give up
// in-order hashing for one file (it is verified by reading it back) and write its blocks out.
bool Assembler::evict_one() {
  File* victim = nullptr;
  for (auto& [key, f] : files_) {
    if (f->state == State::kReceiving && f->tmp_ready && !f->blocks.empty() &&
        (victim == nullptr || f->announced < victim->announced)) {
      victim = f.get();
    }
  }
  if (victim == nullptr) {
    if (fs_->pending() > 0) return false;  // blocks wait for files being made
    throw std::logic_error("write pool exhausted with no block to evict");
  }
  spdlog::warn("Warn: {}: data arrived out of order beyond the write buffers; it will be "
               "verified by reading it back",
               victim->path);
  drop_hash_stream(*victim);
  std::vector<Block*> partial;
  for (auto& [idx, b] : victim->blocks) {
    if (!b->submitted) partial.push_back(b);
  }
  for (Block* b : partial) {
    victim->evicted.insert(b->index);
    victim->blocks.erase(b->index);
    b->orphan = true;
    submit_block(*b);
  }
  return true;
}

void Assembler::on_block_filled(File& f, Block& b) {
  if (f.tmp_ready) submit_block(b);  // else on_created() submits it
  if (f.hash_stream && b.index == f.hash_next) hash_in_order(f);
}

void Assembler::hash_in_order(File& f) {
  while (f.hash_stream) {
    auto it = f.blocks.find(f.hash_next);
    if (it == f.blocks.end()) return;
    Block& b = *it->second;
    if (b.filled != b.size) return;
    f.hasher->update({b.mem, b.size});
    b.hashed = true;
    ++f.hash_next;
    maybe_release(b);
  }
}

void Assembler::drop_hash_stream(File& f) {
  if (!f.hash_stream) return;
  f.hash_stream = false;
  std::vector<Block*> resident;
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) maybe_release(*b);
}

void Assembler::submit_block(Block& b) {
  b.submitted = true;
  File& f = *b.file;
  // With --direct-io, the 4 KiB-aligned part of a range goes through the O_DIRECT descriptor (the
  // pool's blocks and their file offsets are aligned); an unaligned rest, the file's tail or a
  // partial block's pieces, through the buffered one. Both reach the same file.
  constexpr uint32_t kAlign = 4096;
  auto queue_write = [&](int fd, uint32_t from, uint32_t to) {
    PendingOp op;
    op.fd = fd;
    op.buf = b.mem + from;
    op.len = to - from;
    op.offset = b.index * block_size_ + from;
    op.cookie = reinterpret_cast<uint64_t>(&b);
    ++b.writes_pending;
    ++f.ops_pending;
    submit(op);
  };
  for (const auto& [start, end] : b.ranges) {
    uint32_t from = start;
    // O_DIRECT needs the file offset, the memory address and the length aligned; the offset and
    // address depend on the block size, so both are checked, not just the place in the block.
    const uint64_t file_off = b.index * block_size_ + start;
    const auto addr = reinterpret_cast<uintptr_t>(b.mem + start);
    if (f.tmp.direct_fd && file_off % kAlign == 0 && addr % kAlign == 0 &&
        end - start >= kAlign) {
      const uint32_t aligned_end = start + ((end - start) / kAlign) * kAlign;
      queue_write(f.tmp.direct_fd.get(), start, aligned_end);
      from = aligned_end;
    }
    if (from < end) queue_write(f.tmp.fd.get(), from, end);
  }
  if (b.ranges.empty()) maybe_release(b);
}

// Never waits and never reaps: a full writer queue parks the op in the backlog, which poll()
// drains. Keeping submission free of nested completions keeps the file state machine simple.
void Assembler::submit(const PendingOp& op) {
  if (backlog_.empty()) {
    const bool ok = op.sync ? writer_.submit_sync(op.fd, op.datasync, op.cookie)
                            : writer_.submit_write(op.fd, op.buf, op.len, op.offset, op.cookie);
    if (ok) return;
  }
  backlog_.push_back(op);
}

void Assembler::flush_backlog() {
  while (!backlog_.empty()) {
    const PendingOp& op = backlog_.front();
    const bool ok = op.sync ? writer_.submit_sync(op.fd, op.datasync, op.cookie)
                            : writer_.submit_write(op.fd, op.buf, op.len, op.offset, op.cookie);
    if (!ok) return;
    backlog_.pop_front();
  }
}

void Assembler::maybe_release(Block& b) {
  if (!b.submitted || b.writes_pending > 0) return;
  File& f = *b.file;
  if (b.hashed || !f.hash_stream || b.orphan || f.state == State::kFailing) release_block(b);
}

void Assembler::release_block(Block& b) {
  File& f = *b.file;
  if (!b.orphan) {
    auto it = f.blocks.find(b.index);
    if (it != f.blocks.end() && it->second == &b) f.blocks.erase(it);
  }
  b.file = nullptr;
  free_blocks_.push_back(static_cast<int>(&b - blocks_.data()));
}

// ---------------------------------------------------------------------------------------------
// Completions and file life cycle

void Assembler::poll_io(bool wait) {
  const auto cb = [this](const common::IoCompletion& c) { on_completion(c); };
  flush_backlog();
  size_t n = fs_->reap() + writer_.reap(false, cb);
  if (wait && n == 0) {
    const bool io = writer_.in_flight() > 0;
    const bool calls = fs_->pending() > 0;
    if (io && !calls) {
      writer_.reap(true, cb);
    } else if (calls && !io) {
      fs_->wait(std::chrono::milliseconds(50));
      fs_->reap();
    } else if (calls && io) {
      // Either may finish first and neither can wake the other's wait: short naps.
      fs_->wait(std::chrono::milliseconds(1));
      fs_->reap();
      writer_.reap(false, cb);
    }
  }
  flush_backlog();
}

void Assembler::poll(bool wait) {
  Scope scope(*this);
  poll_io(wait);
  const auto now = clock_.now();
  if (now - last_timeout_check_ >= milliseconds(100)) {
    last_timeout_check_ = now;
    check_timeouts();
  }
  // A loss line at once, then at most every 10 s: at a steady loss rate one a second is noise.
  const uint64_t lost = seq_.lost();
  if (lost > lost_logged_ && now - last_loss_log_ >= (lost_logged_ == 0 ? seconds(0) : seconds(10))) {
    const uint64_t rebuilt = fec_.counters().rebuilt - fec_at_session_.rebuilt;
    spdlog::warn("Warn: {} packet(s) lost on the link so far in session {:016x} (sequence gaps){}",
                 lost, session_,
                 rebuilt > 0 ? fmt::format("; {} rebuilt by FEC", rebuilt) : "");
    lost_logged_ = lost;
    last_loss_log_ = now;
  }
  roll_record_window(now);
  retry_records(now);
  if (guard_ && now - last_mark_save_ >= kMarkSaveInterval && guard_->take_changed()) {
    save_session_mark();
  }
  uint64_t unlogged = 0;
  for (uint64_t n : auth_unlogged_) unlogged += n;
  if (unlogged > 0 && now - last_auth_log_ >= kAuthLogInterval) {
    std::string kinds;
    for (size_t i = 0; i < kAuthRejectCount; ++i) {
      if (auth_unlogged_[i] == 0) continue;
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", auth_unlogged_[i],
                           auth_reject_name(static_cast<AuthReject>(i)));
      auth_unlogged_[i] = 0;
    }
    spdlog::warn("Warn: {} more datagram(s) failed authentication since the last report ({}); "
                 "none was written",
                 unlogged, kinds);
    last_auth_log_ = now;
  }
  if (session_ != 0 && !session_final_ && !silence_warned_ &&
      now - last_session_packet_ >= 3 * heartbeat_interval_) {
    silence_warned_ = true;
    spdlog::warn("Warn: no packet from sender session {:016x} for {:.1f} s (3 heartbeat "
                 "intervals): the sender or the link is down",
                 session_, duration<double>(now - last_session_packet_).count());
  }
}

void Assembler::on_completion(const common::IoCompletion& c) {
  if ((c.cookie & Committer::kCookieMask) == Committer::kCookieTag) {
    committer_->on_dir_synced(c.cookie, c.error);
    return;
  }
  Block& b = *reinterpret_cast<Block*>(c.cookie);
  File& f = *b.file;
  fw_.add(c.latency_ns);
  waits_.fw_all.add(c.latency_ns);
  --b.writes_pending;
  --f.ops_pending;
  if (c.error != 0 && f.io_error == 0) f.io_error = c.error;
  maybe_release(b);
  advance(f);
}

// Moves a file on once its outstanding I/O allows it.
void Assembler::advance(File& f) {
  if (f.state == State::kFailing) {
    if (f.ops_pending == 0 && !f.record_posted) close_failed(f);
    return;
  }
  if (f.state == State::kCommitting || f.state == State::kVerifying) return;  // not ours now
  if (f.io_error != 0) {
    fail_file(f, fmt::format("write error: {}", std::strerror(f.io_error)));
    return;
  }
  if (f.state == State::kReceiving) {
    if (!f.end_seen || f.chunks_received < f.chunks_total) return;
    // All its data is in: it no longer counts as receiving (bounds, timeouts, a new session),
    // even while its temporary file is still being made.
    f.state = State::kEnding;
    if (!f.tmp_ready) return;  // on_created() writes its blocks and comes back here
    // Blocks written early (evicted) hold partial data that was not yet written.
    std::vector<Block*> pending;
    for (auto& [idx, b] : f.blocks) {
      if (!b->submitted) pending.push_back(b);
    }
    for (Block* b : pending) submit_block(*b);
  }
  if (f.state == State::kEnding && f.tmp_ready && f.ops_pending == 0) verify_and_finish(f);
}

void Assembler::verify_and_finish(File& f) {
  f.tmp.direct_fd.reset();  // every write is done: one descriptor fewer while it waits
  if (f.verify == common::VerifyType::kNone) {
    commit(f);
    return;
  }
  if (f.hash_stream && f.hash_next == f.block_count(block_size_)) {
    verified(f, f.hasher->finish());
    return;
  }
  // Out-of-order data forced blocks out before they could be hashed: read the file back, on
  // the pool (a large file takes seconds to read).
  f.state = State::kVerifying;
  ++f.ops_pending;
  auto got = std::make_shared<common::Digest>();
  auto error = std::make_shared<std::string>();
  fs_->post(
      [fd = f.tmp.fd.get(), size = f.size, type = f.verify, got, error] {
        std::vector<uint8_t> buf(1 << 20);
        auto h = common::make_hasher(type);
        uint64_t off = 0;
        while (off < size) {
          const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
          const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) {
            *error = fmt::format("cannot read the file back to verify it: {}",
                                 n < 0 ? std::strerror(errno) : "short file");
            return;
          }
          h->update({buf.data(), static_cast<size_t>(n)});
          off += static_cast<uint64_t>(n);
        }
        *got = h->finish();
      },
      [this, ff = &f, got, error] {
        Scope scope(*this);
        --ff->ops_pending;
        ff->state = State::kEnding;
        if (!error->empty()) {
          fail_file(*ff, *error);
        } else {
          verified(*ff, *got);
        }
      });
}

void Assembler::verified(File& f, const common::Digest& got) {
  const bool match = got.size == f.end.key_len &&
                     std::equal(got.bytes.begin(), got.bytes.begin() + got.size,
                                f.end.key.begin());
  if (!match) {
    common::Digest sent;
    sent.type = f.verify;
    sent.size = f.end.key_len;
    sent.bytes = f.end.key;
    const auto elapsed = clock_.now() - f.announced;
    spdlog::info("File: {}, Trans: {} (bytes), Time: {}, Rate: {:.3f} (MB/s), Key: 0x{:08X}, {} "
                 "Failed",
                 f.path, common::with_commas(f.bytes_received), common::format_hms_ms(elapsed),
                 common::mib_per_s(f.bytes_received, elapsed), sent.key32(),
                 common::verify_type_name(f.verify));
    fail_file(f, fmt::format("verification failed: sender key {}, received data {}", sent.hex(),
                             got.hex()));
    return;
  }
  commit(f);
}

// Verified: the committer makes it durable (as the write mode says) and renames it into place;
// on_committed() hears back.
void Assembler::commit(File& f) {
  f.state = State::kCommitting;
  CommitRequest r;
  r.tmp = &f.tmp;
  r.mode = f.mode;
  r.mtime_ns = f.mtime_ns;
  r.cookie = reinterpret_cast<uint64_t>(&f);
  r.journal.kind = Outcome::Kind::kCommitting;
  r.journal.session = f.session;
  r.journal.file_id = f.id;
  r.journal.size = f.size;
  r.journal.verify = std::string(common::verify_type_name(f.verify));
  if (f.verify != common::VerifyType::kNone) {
    common::Digest d;
    d.type = f.verify;
    d.size = f.end.key_len;
    d.bytes = f.end.key;
    r.journal.key_hex = d.hex();
  }
  r.journal.rel_path = f.path;
  committer_->add(r);
}

void Assembler::on_committed(const CommitResult& r) {
  File& f = *reinterpret_cast<File*>(r.cookie);
  f.state = State::kEnding;  // out of the committer's hands
  if (!r.ok) {
    if (r.error != 0) {
      f.sync_failed = true;
      f.io_error = r.error;
    }
    if (!r.moved_old.empty()) {
      spdlog::info("Info: {}: the existing file of that name was kept as {}", f.path, r.moved_old);
    }
    fail_file(f, r.reason);
    return;
  }
  deliver(f, r.moved_old);
}

void Assembler::deliver(File& f, const std::string& moved_old) {
  if (!moved_old.empty()) {
    spdlog::info("Info: {}: the existing file of that name was kept as {}", f.path, moved_old);
  }
  if (f.end.copies > 1) {
    spdlog::info("Info: {}: complete after copy {} of {} (--repeat)", f.path, f.last_copy + 1,
                 f.end.copies);
  }
  const auto elapsed = clock_.now() - f.announced;
  std::string key;
  if (f.verify == common::VerifyType::kNone) {
    key = "Key: none, NONE Not verified";
  } else {
    common::Digest d;
    d.size = f.end.key_len;
    d.bytes = f.end.key;
    key = fmt::format("Key: 0x{:08X}, {} Passed", d.key32(), common::verify_type_name(f.verify));
  }
  spdlog::info("File: {}, Trans: {} (bytes), Time: {}, Rate: {:.3f} (MB/s), {}", f.path,
               common::with_commas(f.size), common::format_hms_ms(elapsed),
               common::mib_per_s(f.size, elapsed), key);
  ++counters_.files_passed;
  if (f.session == session_) ++session_files_.passed;
  counters_.bytes_delivered += f.size;
  if (on_delivered_) {
    DeliveredFile d;
    std::string_view root = out_.root();
    while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
    d.final_path = std::string(root) + (root == "/" ? "" : "/") + f.path;
    d.rel_path = f.path;
    d.size = f.size;
    if (f.verify == common::VerifyType::kNone) {
      d.key = "none";
    } else {
      common::Digest digest;
      digest.size = f.end.key_len;
      digest.bytes = f.end.key;
      d.key = fmt::format("0x{:08X}", digest.key32());
    }
    d.session = f.session;
    if (!moved_old.empty()) {
      // The old file was moved within the new one's folder.
      const size_t slash = d.final_path.rfind('/');
      d.displaced_to = d.final_path.substr(0, slash + 1) + moved_old;
    }
    on_delivered_(d);
  }
  // The journal says it passed; the origin it carried is no longer needed. Both on the pool,
  // which takes the file's descriptors with it.
  Outcome o;
  o.kind = Outcome::Kind::kPassed;
  o.session = f.session;
  o.file_id = f.id;
  o.size = f.size;
  o.verify = std::string(common::verify_type_name(f.verify));
  o.rel_path = f.path;
  auto tmp = std::make_shared<TempFile>(std::move(f.tmp));
  fs_->post(
      [this, tmp, o, j = journal_] {
        if (j != nullptr) j->append(o);
        out_.forget_origin(*tmp);
        tmp->fd.reset();
        tmp->dir.reset();
      },
      nullptr);
  destroy(f);
}

void Assembler::fail_file(File& f, const std::string& reason) {
  if (f.state == State::kFailing || f.state == State::kCommitting ||
      f.state == State::kVerifying || f.state == State::kDone) {
    return;
  }
  f.state = State::kFailing;
  f.fail_reason = reason;
  // Everything received goes into the kept partial file, so that it holds exactly what the
  // record says was received: blocks not written yet are written now, then all are released.
  // While the temporary file is still being made they wait for it (on_created()).
  std::vector<Block*> resident;
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) {
    if (!f.tmp_ready) continue;
    if (!b->submitted && f.tmp.fd) {
      submit_block(*b);
    } else {
      b->submitted = true;
      maybe_release(*b);
    }
  }
  advance(f);
}

void Assembler::close_failed(File& f) {
  f.record_posted = true;
  FailureRecord rec;
  rec.rel_path = f.path;
  rec.session = f.session;
  rec.file_id = f.id;
  rec.expected_size = f.size;
  rec.bytes_received = f.bytes_received;
  rec.missing = missing_ranges(f, kMissingRangesInRecord, &rec.missing_ranges_total);
  if (f.joined_late && !rec.missing.empty() && rec.missing.front().first == 0 &&
      f.bytes_received > 0) {
    f.fail_reason = fmt::format("started before this receiver: bytes 0-{} missing ({})",
                                rec.missing.front().second, f.fail_reason);
  }
  if (f.ring_drops > 0 && f.fail_reason.find("receive buffer") == std::string::npos) {
    f.fail_reason += fmt::format(" ({} of its packets were dropped because the receive buffer was "
                                 "full)",
                                 f.ring_drops);
  }
  rec.reason = f.fail_reason;
  rec.verify = std::string(common::verify_type_name(f.verify));
  // A full disk: keeping the partial data would keep the disk full for the files that follow.
  // A failed flush or sync: the data in the page cache can no longer be trusted.
  rec.discard_data = f.io_error == ENOSPC || f.io_error == EDQUOT || f.sync_failed;
  if (f.end_seen) {
    common::Digest d;
    d.size = f.end.key_len;
    d.bytes = f.end.key;
    rec.expected_key = d.hex();
  }
  std::string ranges;
  for (size_t i = 0; i < std::min(rec.missing.size(), kMissingRangesInLog); ++i) {
    ranges += fmt::format("{}{}-{}", i ? ", " : "", rec.missing[i].first, rec.missing[i].second);
  }
  if (rec.missing_ranges_total > kMissingRangesInLog) {
    ranges += fmt::format(" and {} more", rec.missing_ranges_total - kMissingRangesInLog);
  }
  // A file that received nothing holds no data to keep: under a flood of announces its record
  // and line share the refusals' budget.
  rec.no_record = f.bytes_received == 0 && !take_record_slot(f.end_seen);
  if (rec.no_record && f.session == session_) {
    // Not named now (a flood, or a burst of files whose packets a full ring lost): if the
    // sender's file list names it later, the list vouches for it and its record is written then.
    unnamed_.emplace(f.id, rec);
    if (unnamed_.size() > kSeenIdsKept) unnamed_.erase(unnamed_.begin());
  }
  ++counters_.files_failed;
  if (f.session == session_) ++session_files_.failed;
  std::vector<Block*> resident;  // all written (no I/O is pending): free them now
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) release_block(*b);
  // The file's descriptors go with the record's task. The file stays in flight (and counts
  // against the bounds) until its record is written and its temporary file moved away.
  auto tmp = std::make_shared<TempFile>(std::move(f.tmp));
  const bool no_record = rec.no_record;
  std::string line =
      no_record ? std::string()
                : fmt::format("Error: {} FAILED: {}; received {} of {} bytes{}{}", f.path,
                              f.fail_reason, common::with_commas(f.bytes_received),
                              common::with_commas(f.size),
                              ranges.empty() ? "" : "; missing bytes " + ranges,
                              rec.discard_data
                                  ? (f.sync_failed ? "; data removed (its sync failed)"
                                                   : "; partial data removed (disk full)")
                                  : "");
  write_record(rec, tmp,
               [this, ff = &f, tmp, line = std::move(line)](const std::string& where) {
                 if (!line.empty()) {
                   spdlog::error("{}; record: {}", line,
                                 where.empty() ? "could not be written" : where);
                 }
                 Scope scope(*this);
                 destroy(*ff);
               });
}

void Assembler::destroy(File& f) {
  std::vector<Block*> resident;
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) release_block(*b);
  f.state = State::kDone;
  auto it = files_.find({f.session, f.id});
  if (it != files_.end() && it->second.get() == &f) {
    graveyard_.push_back(std::move(it->second));
    files_.erase(it);
  }
}

void Assembler::report_progress(File& f) {
  const uint64_t step = cfg_.report_mb * 1024 * 1024;
  if (f.bytes_received < f.next_report) return;
  while (f.next_report <= f.bytes_received) f.next_report += step;
  const auto dur = clock_.now() - f.first_data;
  spdlog::info("Rcvd: {} ({:.2f}%) Rate: {:.3f} (MB/s) Dur: {} DR: {} msec FW: {} msec",
               common::with_commas(f.bytes_received),
               100.0 * static_cast<double>(f.bytes_received) / static_cast<double>(f.size),
               common::mib_per_s(f.bytes_received, dur), common::format_hms(dur), dr_.format(),
               fw_.format());
  waits_.dr_last = dr_;
  waits_.fw_last = fw_;
  dr_ = {};
  fw_ = {};
}

void Assembler::note_ring_drops(const std::vector<DropLedger::Entry>& dropped) {
  Scope scope(*this);
  uint64_t other = 0;
  for (const auto& e : dropped) {
    File* f = nullptr;
    // The ledger reads headers unchecked: with a key they may be forged, so drops are not pinned
    // on a file.
    if (e.file_id != 0 && !opener_) {
      auto it = files_.find({e.session, e.file_id});
      if (it != files_.end()) f = it->second.get();
    }
    if (f == nullptr) {
      other += e.count;
      continue;
    }
    f->ring_drops += e.count;
    spdlog::warn("Warn: {}: {} packet(s) dropped, the receive buffer was full (the disk is not "
                 "keeping up)",
                 f->path, e.count);
  }
  if (other > 0) {
    spdlog::warn("Warn: {} other packet(s) dropped, the receive buffer was full (the disk is not "
                 "keeping up)",
                 other);
  }
}

void Assembler::note_read_wait(nanoseconds waited) {
  const auto ns = static_cast<uint64_t>(std::max<int64_t>(0, waited.count()));
  dr_.add(ns);
  waits_.dr_all.add(ns);
}

void Assembler::check_timeouts() {
  const auto now = clock_.now();
  const auto timeout = duration_cast<nanoseconds>(duration<double>(cfg_.file_timeout_s));
  std::vector<std::pair<File*, std::string>> expired;
  for (auto& [key, f] : files_) {
    if (f->state != State::kReceiving) continue;
    const bool last_copy = f->end.copy + 1u >= f->end.copies;
    if (f->end_seen && last_copy && now - f->end_seen_at >= kEndGrace) {
      expired.emplace_back(f.get(), fmt::format("incomplete at its end packet: {} of {} bytes "
                                                "received (packets lost{})",
                                                f->bytes_received, f->size,
                                                f->end.copies > 1
                                                    ? fmt::format(" in all {} copies",
                                                                  f->end.copies)
                                                    : ""));
    } else if (f->superseded && now - f->superseded_at >= kEndGrace) {
      expired.emplace_back(f.get(), fmt::format("the sender went on to the next file before this "
                                                "one was complete: {}",
                                                f->end_seen ? "data lost" : "its end packet was lost"));
    } else if (now - f->last_packet > timeout + seconds(f->pause_s)) {
      expired.emplace_back(f.get(), fmt::format("no packet for {:.1f} s: the sender stopped or "
                                                "the link went down before the file's end",
                                                cfg_.file_timeout_s));
    } else if (session_final_ && now >= final_deadline_) {
      expired.emplace_back(f.get(), "the sender finished without completing the file (end "
                                    "packet lost?)");
    }
  }
  for (auto& [f, reason] : expired) fail_file(*f, reason);
}

void Assembler::fail_all(const std::string& reason) {
  Scope scope(*this);
  // Files still receiving never get the rest; those with all their data in finish (writes,
  // verification, the committer).
  std::vector<File*> open;
  for (auto& [key, f] : files_) {
    if (f->state == State::kReceiving) open.push_back(f.get());
  }
  for (File* f : open) fail_file(*f, reason);
  while (io_pending()) poll_io(true);
  // Files still waiting (none should be) are closed as failed now.
  open.clear();
  for (auto& [key, f] : files_) {
    if (!f->record_posted) open.push_back(f.get());
  }
  for (File* f : open) {
    f->state = State::kFailing;
    if (f->fail_reason.empty()) f->fail_reason = reason;
    close_failed(*f);
  }
  while (io_pending()) poll_io(true);
  // Records the file system refused earlier: one last try.
  last_retry_ = {};
  retry_records(clock_.now());
  while (io_pending()) poll_io(true);
  roll_record_window(clock_.now(), /*force=*/true);  // say how many went unrecorded, if any
  if (guard_ && guard_->take_changed()) save_session_mark();
}

bool Assembler::session_finished() const {
  if (session_ == 0 || !idle()) return false;
  if (session_final_) return true;
  const auto silent = clock_.now() - last_session_packet_;
  if (silent < duration_cast<nanoseconds>(duration<double>(cfg_.file_timeout_s))) return false;
  if (!silence_logged_) {
    silence_logged_ = true;
    spdlog::warn("Warn: sender session {:016x} silent for {:.1f} s without its final heartbeat "
                 "(lost?); taking it as finished",
                 session_, std::chrono::duration<double>(silent).count());
  }
  return true;
}

std::vector<std::pair<uint64_t, uint64_t>> Assembler::missing_ranges(const File& f, size_t limit,
                                                                     uint64_t* total) const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  *total = 0;
  uint64_t i = 0;
  while (i < f.chunks_total) {
    // Skip whole words of received chunks quickly.
    if (i % 64 == 0 && f.bitmap[i / 64] == ~uint64_t{0}) {
      i += 64;
      continue;
    }
    if (f.has_chunk(i)) {
      ++i;
      continue;
    }
    const uint64_t start = i;
    while (i < f.chunks_total && !f.has_chunk(i)) ++i;
    ++*total;
    if (out.size() < limit) {
      out.emplace_back(start * f.chunk_size, std::min(i * f.chunk_size, f.size));
    }
  }
  return out;
}

void Assembler::log_summary() const {
  if (session_ == 0) return;
  uint64_t rejected = 0;
  for (size_t i = 1; i < common::kDecodeStatusCount; ++i) rejected += counters_.rejected[i];
  const FecCounters& fc = fec_.counters();
  const uint64_t rebuilt = fc.rebuilt - fec_at_session_.rebuilt;
  const uint64_t lost_groups =
      fc.groups_lost - fec_at_session_.groups_lost + fec_.unrepaired_open();
  uint64_t auth = 0;
  for (uint64_t n : counters_.auth_rejected) auth += n;
  uint64_t finishing = 0;
  for (const auto& [key, f] : files_) {
    if (key.first == session_ && f->state != State::kReceiving && f->state != State::kFailing) {
      ++finishing;
    }
  }
  spdlog::info("Info: session {:016x}: {} file(s) passed, {} failed, {} refused, {} filtered{}; "
               "packets: {} received, {} lost, {} rejected, {} from other sessions{}{}",
               session_, session_files_.passed, session_files_.failed, session_files_.refused,
               session_files_.filtered,
               finishing > 0 ? fmt::format(", {} still being written", finishing) : "",
               seq_.received(), seq_.lost(), rejected, counters_.other_session,
               rebuilt + lost_groups > 0
                   ? fmt::format("; FEC rebuilt {}, {} group(s) beyond repair", rebuilt,
                                 lost_groups)
                   : "",
               auth > 0 ? fmt::format("; {} failed authentication", auth) : "");
}

}  // namespace ddft::receiver
