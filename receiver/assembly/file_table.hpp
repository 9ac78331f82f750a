// The file table: owns every file in flight and runs its state machine. Announces create files
// (or are refused: Admission), data and end packets move a file on, aborts, timeouts, a new
// session and --max-files-in-flight fail it. It is the ONE place a file's life ends (end()).
// It follows several sender sessions side by side, each with its own file ids: a packet is
// handled by the parts of its session (Scope), each a member with one job: KnownFiles (the ids
// the session heard of; the settled files are every session's), FileLanes (which lanes hold a
// file open), Admission (whether an announce is taken), ListedFiles (files the sender's file
// list names that never came), SenderHistory (files its history names, and resends).
//
// Completions reach it at one point, pump(): it reaps the FsPool (temporary files made, records
// written, files read back, committer steps) and the write engine (write and folder-sync
// completions, collected there and processed here), then moves each file on. No File* is held
// across a pump: the one caller that pumps while handling a packet (a block wanted while every
// block is taken, get_block()) finds its file again by key afterwards. So a file ended by a
// completion is freed at once, with no graveyard or scope guard to keep it alive.
//
// Writer thread only.
// The table owns every File (its temporary file, and the blocks it holds while resident) and its
// parts; the folder, pool, engine, records and counters are the caller's and must outlive it. A bad
// packet is counted, never thrown; std::logic_error marks an impossible state (a file ended with
// I/O pending, the write pool exhausted with no block to evict): a bug.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/block_io.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/admission.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/file_blocks.hpp"
#include "receiver/assembly/file_lanes.hpp"
#include "receiver/assembly/finisher.hpp"
#include "receiver/assembly/known_files.hpp"
#include "receiver/assembly/listed_files.hpp"
#include "receiver/assembly/progress.hpp"
#include "receiver/assembly/sender_history.hpp"
#include "receiver/assembly/zframes.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/delivery/write_engine.hpp"
#include "receiver/link/ingest.hpp"
#include "receiver/link/sender_session.hpp"

namespace ddft::receiver {

class FileTable final : private Finisher::Owner {
 public:
  // References must outlive the table.
  FileTable(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs, common::Clock& clock,
            WriteEngine& engine, FailureRecords& records, AssemblerCounters& counters);
  ~FileTable();
  FileTable(const FileTable&) = delete;
  FileTable& operator=(const FileTable&) = delete;

  // See Assembler::set_earlier(), set_sender() and set_on_delivered().
  void set_earlier(
      OutcomeLog* journal, const std::vector<std::pair<uint64_t, uint32_t>>& known,
      const std::vector<std::pair<std::pair<uint64_t, uint32_t>, std::string>>& failed = {});
  void set_sender(std::function<std::string()> sender) { sender_ = std::move(sender); }
  void set_on_delivered(std::function<void(const DeliveredFile&)> fn) {
    finisher_.set_on_delivered(std::move(fn));
  }

  // Session `s` is followed from now on, its lanes as `gate` says (must outlive the session
  // here; null: one lane, never gone): its file ids start afresh.
  void start_session(uint64_t s, const SenderSession* gate = nullptr);
  // Session `s` is over (its sender started anew, it gave way, or with `receiver_stopping` the
  // receiver stops) while its gate still knows its lanes: every held list entry is settled now,
  // under this session, as if each of its lanes were gone: recorded (its reason says which
  // ended it), or left to another receiver. Its packets are no longer handled; its files still
  // finishing finish.
  void end_session(uint64_t s, bool receiver_stopping = false);
  // Session `s`'s held list entries are settled as end_session() does, the session staying live
  // for its summary.
  void settle_lists(uint64_t s);
  // The same for every live session: the receiver stops.
  void settle_lists(bool receiver_stopping);
  // Fails every file of session `s` still receiving with `reason` (its sender started anew).
  // Files with all their data finish on their own.
  void fail_receiving(uint64_t s, const std::string& reason);
  // The same for every session (shutdown).
  void fail_receiving(const std::string& reason);
  // Fails, without waiting, every file whose record is not posted yet (shutdown, once I/O is
  // drained).
  void close_unrecorded(const std::string& reason);

  // The packets of the live sessions that concern files, with the lane each came on (a packet of
  // a session not started is dropped). Bad payloads are counted.
  //
  // Lanes (receiver/assembly/file_lanes.hpp): the next file a lane announces closes the lane
  // for the files open on it, as does the file's end on that lane; a file that no lane holds
  // open any more and still misses data fails after a short grace (with one lane: once the next
  // file comes).
  //
  // Data: `rebuilt` when FEC made the packet; a file counts the rebuilt packets it takes, and the
  // chunks a later copy (--repeat) fills (File::repairs, and the counters).
  void handle_announce(const common::Packet& p, size_t lane = 0);
  void handle_data(const common::Packet& p, bool rebuilt = false);
  // A piece of a compressed block (receiver/assembly/zframes.hpp): once the block is whole, its
  // bytes are taken as its chunks' data; a block that does not decompress to its size fails the
  // file.
  void handle_zdata(const common::Packet& p, bool rebuilt = false);
  void handle_end(const common::Packet& p, size_t lane = 0);
  void handle_abort(const common::Packet& p);
  // A list entry names a file its lane finished: one this receiver never heard of is recorded
  // as failed, at once or once its lane is gone (receiver/assembly/listed_files.hpp).
  void handle_file_list(const common::Packet& p, size_t lane = 0);
  // True while list entries of session `s` wait for their lane (the session is not over before
  // they are settled).
  bool holds_list_entries(uint64_t s) const;
  // The sender's history: each file it names that this receiver neither delivered nor named is
  // recorded as missed once (receiver/assembly/sender_history.hpp).
  void handle_history(const common::Packet& p);
  // The next announce of the file a kResend names is a copy of a file sent before
  // (receiver/assembly/sender_history.hpp).
  void handle_resend(const common::Packet& p);

  // Reaps the FsPool and the write engine and moves files on (with `wait`, blocks until
  // something completes when anything is pending). The one point where completions come in.
  void pump(bool wait);
  // Fails files that timed out (at most every 100 ms): silence, an end or a next file with data
  // missing, or their lanes' final heartbeats with their grace over; and settles held list
  // entries whose lane is gone.
  void tick(common::Clock::time_point now);
  // See Assembler::note_ring_drops(); `keyed`: headers may be forged, so drops are not pinned.
  void note_ring_drops(const std::vector<DropLedger::Entry>& dropped, bool keyed);
  void note_read_wait(std::chrono::nanoseconds waited) { progress_.note_read_wait(waited); }

  bool io_pending() const { return engine_.pending() || fs_.pending() > 0 || finisher_.busy(); }
  bool empty() const { return files_.empty(); }
  size_t size() const { return files_.size(); }
  // Files of session `s` past receiving and not failing (writes, verification, commit).
  size_t finishing(uint64_t s) const;
  // Files of session `s` in flight, whatever their state.
  size_t in_flight(uint64_t s) const;
  // The counts of live session `s`'s summary (zero when it is not live).
  SessionFiles session_files(uint64_t s) const;
  const WaitStats& wait_stats() const { return progress_.waits(); }

 private:
  // What the table keeps of one live session: its gate and its parts.
  struct Scope {
    Scope(FileTable& t, uint64_t s, const SenderSession* gate);
    uint64_t session;
    const SenderSession* gate;
    SessionFiles files;
    KnownFiles known;
    FileLanes lanes;
    Admission admission;
    ListedFiles listed;
    SenderHistory history;
  };
  SessionFiles* tally(uint64_t s) override;
  // The parts of `p`'s session, selected for the packet (cur_), or null when it is not live.
  Scope* select(const common::Packet& p);
  Scope* scope_of(uint64_t s);
  // Which lanes hold `f` open: its session's view, or one lane when the session is over.
  const FileLanes& lanes_of(const File& f) const;
  void fail(File& f, const std::string& reason) override;
  void end(File& f) override;
  void passed(File& f) override;
  // File `id` of the selected session.
  File* find(uint32_t id);
  void remember_seen(uint32_t id) { cur_->known.remember_seen(id, clock_.now()); }
  void accept(std::unique_ptr<File> f, bool joined_late);
  void on_created(File& f, bool ok, const std::string& reason);
  // The lane announced file `next_id` of `channel`: the files of that channel before it open on
  // the lane are closed there.
  void close_lane(size_t lane, uint32_t next_id, const std::string& channel);
  Block* get_block(File*& f, uint64_t index);
  // The file a data packet names when it is receiving, else nullptr (counted).
  File* receiving(uint32_t id);
  // Stores chunk `idx` of *f (not had yet), from copy `copy`. False when the file failed
  // meanwhile (f is null).
  bool store_chunk(File*& f, uint64_t idx, std::span<const uint8_t> data, uint8_t copy);
  // Copies the ZFrames counters into the published AssemblerCounters (for the metrics).
  void publish_zframe_counters();
  bool evict_one();
  void process_completions();
  void advance(File& f);
  void check_timeouts();

  const ReceiverConfig& cfg_;
  OutputDir& out_;
  FsPool& fs_;
  common::Clock& clock_;
  WriteEngine& engine_;
  FailureRecords& records_;
  AssemblerCounters& counters_;
  FileBlocks blocks_;
  Finisher finisher_;
  std::function<std::string()> sender_;
  FilesInFlight files_;  // every File, by (session, file id)
  SettledFiles settled_;
  OutcomeLog* journal_ = nullptr;
  std::map<uint64_t, std::unique_ptr<Scope>> scopes_;  // the live sessions'
  Scope* cur_ = nullptr;                               // the session of the packet in hand
  FileLanes one_lane_;                                 // for a file whose session is over
  common::Clock::time_point last_timeout_check_{};
  Progress progress_;
  ZFrames zframes_;
};

}  // namespace ddft::receiver
