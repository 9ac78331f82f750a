// The assembler: the receive side's core. It takes checked datagrams off the ring, follows the
// sender session, assembles each file's data into write blocks, hashes it in file order, writes
// it through the BlockIo, and finishes every file exactly one way: verified and renamed into
// place, or moved to the failed folder with a record of why. It also prints the DFTS receive log.
//
// It owns no thread: the receiver pipeline calls it from the "writer" thread; tests call it
// directly with datagrams they build, a FakeClock and a real folder.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/clock.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "common/block_io.hpp"
#include "receiver/committer.hpp"
#include "receiver/config.hpp"
#include "receiver/delivered_file.hpp"
#include "receiver/fec_decoder.hpp"
#include "receiver/fs_pool.hpp"
#include "receiver/ingest.hpp"
#include "receiver/outcome_log.hpp"
#include "receiver/output_dir.hpp"
#include "receiver/replay_guard.hpp"
#include "receiver/seq_window.hpp"

namespace ddft::receiver {

// Counts packets by sequence number the way a diode's hardware counter does: every number that
// never arrived is a lost packet. Duplicates within a window of recent numbers are not counted.
class SeqCounter {
 public:
  void reset();
  // Records `seq`; returns false when it is a duplicate.
  bool record(uint64_t seq);
  uint64_t received() const { return received_; }
  // Numbers between the first and the highest seen that have not arrived.
  uint64_t lost() const;

 private:
  using Window = SeqWindow<4096>;
  Window window_;
  uint64_t first_ = 0;  // the lowest number taken
  uint64_t received_ = 0;
};

// Average and peak of time samples over a reporting interval (DR and FW of the Rcvd: line).
struct IntervalStat {
  uint64_t sum_ns = 0;
  uint64_t max_ns = 0;
  uint64_t count = 0;
  void add(uint64_t ns) {
    sum_ns += ns;
    count += 1;
    if (ns > max_ns) max_ns = ns;
  }
  // "2.19/880": average ms with two decimals / peak ms rounded up, at least 1.
  std::string format() const;
};

// Why an authenticated receiver (--key-file) dropped a datagram. Such datagrams are never written.
enum class AuthReject : uint8_t {
  kNoKey = 0,     // sealed, but this receiver has no key
  kNotSealed,     // not sealed, but this receiver requires it
  kMalformed,     // too short for the seal's trailer
  kBadTag,        // forged, damaged, or sealed with another key
  kReplayed,      // of the current session, but taken before (older than the replay window)
  kStaleSession,  // of a session that does not start after the newest one accepted
};
inline constexpr size_t kAuthRejectCount = 6;
std::string_view auth_reject_name(AuthReject r);

struct AssemblerCounters {
  uint64_t datagrams = 0;
  uint64_t rejected[common::kDecodeStatusCount] = {};
  uint64_t truncated = 0;
  uint64_t other_session = 0;
  uint64_t unknown_file = 0;    // data/end for a file not (or no longer) in flight
  uint64_t filtered_packets = 0;  // data/end of a file --include/--exclude dropped
  uint64_t bad_data = 0;        // offset/length that do not fit the announced file
  uint64_t duplicates = 0;
  uint64_t handling_errors = 0;  // datagrams whose handling threw (memory, I/O set-up)
  uint64_t rebuilt_bad = 0;      // FEC output that failed its checksum (not from this sender)
  uint64_t auth_rejected[kAuthRejectCount] = {};
  uint64_t files_evicted = 0;    // failed to make room under --max-files-in-flight
  uint64_t records_suppressed = 0;  // refusals past the record rate limit (logged, no record)
  uint64_t files_passed = 0;
  uint64_t files_failed = 0;
  uint64_t files_refused = 0;
  uint64_t files_filtered = 0;  // refused by --include/--exclude (policy: logged, no record)
  uint64_t files_unannounced = 0;  // failed: named only by the sender's file list
  uint64_t files_joined_late = 0;  // their first packets went before this receiver started
  uint64_t listed_known = 0;     // listed files an earlier run of the receiver had finished
  uint64_t bytes_delivered = 0;
  uint64_t sessions = 0;
  uint64_t lost_in_past_sessions = 0;  // sequence gaps of the sessions before the current one
};

// DR and FW (see IntervalStat) as the last Rcvd: line printed them (count 0 before the first),
// and summed since start.
struct WaitStats {
  IntervalStat dr_last;
  IntervalStat fw_last;
  IntervalStat dr_all;
  IntervalStat fw_all;
};

class Assembler {
 public:
  // All references must outlive the assembler. `writer` and `out` are used from the calling
  // thread only.
  Assembler(const ReceiverConfig& cfg, OutputDir& out, common::BlockIo& writer,
            common::AlignedBuffer& block_memory, common::Clock& clock);
  ~Assembler();
  Assembler(const Assembler&) = delete;
  Assembler& operator=(const Assembler&) = delete;

  // Handles one datagram. `real_len` is its length on the wire (larger than data.size() when it
  // was truncated). Never throws on bad input: it is counted and dropped.
  void on_datagram(std::span<const uint8_t> data, size_t real_len);
  // Reaps write completions, finishes files whose I/O is done and fails files that timed out.
  // With `wait`, blocks until at least one write completes (when any is in flight).
  void poll(bool wait = false);
  // Datagrams the ingest thread dropped in a full ring: logged with the file they belonged to,
  // and named in that file's failure if it fails for want of them.
  void note_ring_drops(const std::vector<DropLedger::Entry>& dropped);
  // Records how long the writer thread waited for the ring (the DR of the log).
  void note_read_wait(std::chrono::nanoseconds waited);
  // Fails every file in flight with `reason` and waits for all I/O. Used at shutdown.
  void fail_all(const std::string& reason);

  // True once a sender session has said it finished and all of its files are done, or, when its
  // final heartbeat was lost, once it has been silent for --file-timeout with nothing in flight.
  bool session_finished() const;
  // True while writes, syncs or file-system calls are queued or in flight (the caller should
  // poll again soon).
  bool io_pending() const {
    return writer_.in_flight() > 0 || !backlog_.empty() || fs_->pending() > 0 ||
           committer_->busy();
  }
  bool idle() const { return files_.empty() && !io_pending(); }
  // What earlier runs of the receiver finished or named (its journal, and the files left behind
  // that the start-up recorded as failed): a repeated announce or a file list naming one of
  // them is not recorded again. Call before the first datagram. `journal` (may be null) gets
  // this run's outcomes; it must outlive the assembler.
  void set_earlier(OutcomeLog* journal, const std::vector<std::pair<uint64_t, uint32_t>>& known);
  uint64_t current_session() const { return session_; }
  const AssemblerCounters& counters() const { return counters_; }
  const SeqCounter& seq() const { return seq_; }
  const FecCounters& fec() const { return fec_.counters(); }
  // Files announced and not finished yet, those finishing their writes included.
  size_t files_in_flight() const { return files_.size(); }
  const WaitStats& wait_stats() const { return waits_; }
  // Logs the session summary line ("Info: session ... : N passed, M failed, ...").
  void log_summary() const;
  // Called on the writer thread for each file verified and renamed into place, right after its
  // File: line. It must not block (the --on-complete runner only queues). Set before the first
  // datagram.
  void set_on_delivered(std::function<void(const DeliveredFile&)> fn) {
    on_delivered_ = std::move(fn);
  }
  // Where the sender's datagrams come from ("10.0.0.1:4000", a device path), asked at each
  // announce and written beside the file, so that a file a crash leaves behind names its sender
  // too. Called on the writer thread; must not block.
  void set_sender(std::function<std::string()> sender) { sender_ = std::move(sender); }

 private:
  struct File;
  struct Block {
    File* file = nullptr;
    uint64_t index = 0;      // block number within the file
    uint8_t* mem = nullptr;
    size_t size = 0;         // bytes of the file this block covers
    size_t filled = 0;       // bytes received in this incarnation
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // filled [start, end), merged
    bool hashed = false;
    bool submitted = false;  // writes queued
    bool orphan = false;     // no longer in file->blocks (evicted or file failed)
    int writes_pending = 0;
  };
  // kReceiving: packets arrive (the temporary file may still be being created); kEnding: all
  // data and the end are in, writes finish; kVerifying: read back on the pool; kCommitting: with
  // the committer (flush, rename, folder sync); kFailing: its record is being written.
  enum class State { kReceiving, kEnding, kVerifying, kCommitting, kFailing, kDone };
  // A write or sync the writer had no room for yet; submitted from poll(), in order.
  struct PendingOp {
    bool sync = false;
    int fd = -1;
    const uint8_t* buf = nullptr;
    size_t len = 0;
    uint64_t offset = 0;
    uint64_t cookie = 0;
    bool datasync = false;
  };
  // Outermost public call: files destroyed inside it are freed when it returns, so a File* held
  // up the stack never dangles.
  struct Scope {
    explicit Scope(Assembler& a) : a_(a) { ++a_.depth_; }
    ~Scope();
    Assembler& a_;
  };

  void make_committer();
  File* find_file(uint32_t id);
  // --key-file: opens a sealed datagram into open_buf_ and checks it is fresh; `data` and `p` are
  // then the inner datagram. Without a key, refuses sealed datagrams. False: dropped.
  bool unseal(std::span<const uint8_t>* data, common::Packet* p);
  void reject_auth(AuthReject why, const common::Packet& p, size_t len);
  void save_session_mark();
  // A refused announce: counted, logged, and recorded in the failed folder (at a bounded rate).
  void refuse(const File& f, const std::string& reason);
  // --max-files-in-flight: fails the oldest file still receiving when the bound is reached.
  // False (with *reason) when every file in flight is finishing its writes.
  bool make_room_for_file(std::string* reason);
  // True when one more record of a refused file, or of a failed one that received nothing,
  // fits this minute's budget; `vouched`: the sender's end packet or file list names the file
  // (a budget of its own, kVouchedRecordsPerMinute, else kRecordsPerMinute).
  bool take_record_slot(bool vouched = false);
  // Starts a new minute of refusal records, logging how many the last one left out.
  // `force`: now (at shutdown), whatever the time.
  void roll_record_window(common::Clock::time_point now, bool force = false);
  void on_rebuilt(std::span<const uint8_t> data);
  // Offers the data of an announce's FEC window again (it came before the file was known).
  void replay_window(const common::Header& announce);
  void dispatch(const common::Packet& p);
  bool accept_session(const common::Packet& p);
  void handle_announce(const common::Packet& p);
  void handle_data(const common::Packet& p);
  void handle_end(const common::Packet& p);
  void handle_abort(const common::Packet& p);
  void handle_heartbeat(const common::Packet& p);
  void handle_file_list(const common::Packet& p);
  // A listed file this receiver never heard of: recorded as failed, named.
  void record_unannounced(const common::FileListEntry& e);
  // Writes the record of a file that failed with nothing received, and its Error line, within
  // the record budget (take_record_slot()).
  void write_named_failure(FailureRecord rec, bool vouched);
  // The temporary file of `f` is created (or could not be).
  void on_created(File& f, bool ok, const std::string& reason);
  void on_committed(const CommitResult& r);
  void deliver(File& f, const std::string& moved_old);
  // Queues a failure record to be written on the pool; `then` runs on this thread with where
  // it went ("" when it could not be written).
  void write_record(const FailureRecord& rec, std::shared_ptr<TempFile> tmp,
                    std::function<void(const std::string&)> then);
  // The journal's L line for `rec`: its Error line is logged.
  void note_logged(const FailureRecord& rec);
  // A record the file system refused (read-only, full): kept to be written later, with the
  // temporary file it moves away.
  void keep_unwritten(const FailureRecord& rec, std::shared_ptr<TempFile> tmp);
  // Every 5 s, tries the kept records again (on the pool), logging each one written.
  void retry_records(common::Clock::time_point now);
  bool known_earlier(uint64_t session, uint32_t id) const;
  Block* get_block(File& f, uint64_t index);
  int take_free_block();
  // False when no file can give up blocks yet (their temporary files are being made).
  bool evict_one();
  void on_block_filled(File& f, Block& b);
  void hash_in_order(File& f);
  void submit_block(Block& b);
  void submit(const PendingOp& op);
  void flush_backlog();
  void poll_io(bool wait);
  void maybe_release(Block& b);
  void release_block(Block& b);
  void drop_hash_stream(File& f);
  void on_completion(const common::IoCompletion& c);
  void advance(File& f);
  void verify_and_finish(File& f);
  void verified(File& f, const common::Digest& got);
  void commit(File& f);
  void fail_file(File& f, const std::string& reason);
  void close_failed(File& f);
  void destroy(File& f);
  void report_progress(File& f);
  void check_timeouts();
  void retire_session(const std::string& reason);
  std::vector<std::pair<uint64_t, uint64_t>> missing_ranges(const File& f, size_t limit,
                                                            uint64_t* total) const;

  const ReceiverConfig& cfg_;
  OutputDir& out_;
  common::BlockIo& writer_;
  common::Clock& clock_;
  std::unique_ptr<FsPool> fs_;
  size_t files_bound_;  // files in flight at most, whatever their state (make_room_for_file())
  std::unique_ptr<Committer> committer_;
  OutcomeLog* journal_ = nullptr;
  std::set<std::pair<uint64_t, uint32_t>> earlier_;  // see set_earlier()
  bool mark_saving_ = false;  // a save of the replay state is on the pool
  bool mark_dirty_ = false;   // and another is due when it is done
  size_t block_size_;
  std::vector<Block> blocks_;
  std::vector<int> free_blocks_;

  uint64_t session_ = 0;
  std::set<uint64_t> retired_sessions_;
  bool session_final_ = false;
  common::Clock::time_point final_deadline_{};
  common::Clock::time_point last_session_packet_{};
  mutable bool silence_logged_ = false;
  bool silence_warned_ = false;  // the 3-heartbeat silence warning is out
  std::chrono::milliseconds heartbeat_interval_{1000};
  FecDecoder fec_;
  std::unique_ptr<common::Opener> opener_;  // --key-file
  std::unique_ptr<ReplayGuard> guard_;
  std::vector<uint8_t> open_buf_;           // the inner datagram of the sealed one in hand
  uint64_t auth_unlogged_[kAuthRejectCount] = {};
  common::Clock::time_point last_auth_log_{};
  bool auth_logged_ = false;
  common::Clock::time_point last_mark_save_{};
  common::Clock::time_point last_save_error_log_{};
  bool save_error_logged_ = false;
  common::Clock::time_point record_window_{};  // refusal records: at most kRecordsPerMinute
  uint64_t records_in_window_ = 0;
  uint64_t vouched_in_window_ = 0;
  FecCounters fec_at_session_;
  // The current session's files, for its summary line (counters_ counts since start).
  struct SessionFiles {
    uint64_t passed = 0;
    uint64_t failed = 0;
    uint64_t refused = 0;
    uint64_t filtered = 0;
  };
  SessionFiles session_files_;
  // Files in flight by (session, file id): a restarted sender reuses ids while the old session's
  // failed files may still be finishing their I/O.
  std::map<std::pair<uint64_t, uint32_t>, std::unique_ptr<File>> files_;
  std::set<uint32_t> seen_ids_;       // recent file ids of the session, to ignore late repeats
  std::set<uint32_t> filtered_ids_;   // the session's files the filter dropped (as many kept)
  // Failed files of the session that received nothing and whose record the flood bound left
  // out: written if the sender's file list names them (as many kept as seen_ids_).
  std::map<uint32_t, FailureRecord> unnamed_;
  struct Unwritten {
    FailureRecord rec;
    std::shared_ptr<TempFile> tmp;
  };
  std::deque<Unwritten> unwritten_;  // records the file system refused, oldest first
  uint64_t unwritten_dropped_ = 0;
  bool retrying_ = false;
  common::Clock::time_point last_retry_{};
  std::vector<std::unique_ptr<File>> graveyard_;  // destroyed files, freed by the outer Scope
  int depth_ = 0;
  std::deque<PendingOp> backlog_;
  SeqCounter seq_;
  uint64_t lost_logged_ = 0;
  common::Clock::time_point last_loss_log_{};
  common::Clock::time_point last_reject_log_{};
  common::Clock::time_point last_timeout_check_{};
  IntervalStat dr_;
  IntervalStat fw_;
  WaitStats waits_;
  AssemblerCounters counters_;
  std::function<void(const DeliveredFile&)> on_delivered_;
  std::function<std::string()> sender_;
};

}  // namespace ddft::receiver
