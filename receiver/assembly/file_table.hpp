// The file table: owns every file in flight and runs its state machine. Announces are admitted
// or refused here (bounds, free space, names, filters), data and end packets move a file on,
// aborts, timeouts, a new session and --max-files-in-flight fail it, and the sender's file list
// names files that never arrived. It is the ONE place a file's life ends (end()).
//
// Completions reach it at one point, pump(): it reaps the FsPool (temporary files made, records
// written, files read back, committer steps) and the write engine (write and folder-sync
// completions, collected there and processed here), then moves each file on. No File* is held
// across a pump: the one caller that pumps while handling a packet (a block wanted while every
// block is taken, get_block()) finds its file again by key afterwards. So a file ended by a
// completion is freed at once, with no graveyard or scope guard to keep it alive.
//
// Writer thread only.
// The table owns every File (its temporary file, and the blocks it holds while resident); the
// folder, pool, engine, records and counters are the caller's and must outlive it. A bad packet
// is counted, never thrown; std::logic_error marks an impossible state (a file ended with I/O
// pending, the write pool exhausted with no block to evict): a bug.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/block_io.hpp"
#include "common/clock.hpp"
#include "common/history_wire.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/assembly/file_blocks.hpp"
#include "receiver/assembly/finisher.hpp"
#include "receiver/assembly/progress.hpp"
#include "receiver/assembly/recent_ids.hpp"
#include "receiver/assembly/settled_files.hpp"
#include "receiver/assembly/zframes.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/delivery/write_engine.hpp"
#include "receiver/link/ingest.hpp"
#include "receiver/link/session_gate.hpp"

namespace ddft::receiver {

class FileTable final : private Finisher::Owner {
 public:
  // File ids remembered per session, to ignore a finished file's late repeats: more than a
  // session's complete file list names (the sender lists at most 100,000 files at the end of a
  // session), so that no file of the list is taken for one never announced.
  static constexpr size_t kSeenIdsKept = 262144;

  // References must outlive the table.
  FileTable(const ReceiverConfig& cfg, OutputDir& out, FsPool& fs, common::Clock& clock,
            WriteEngine& engine, FailureRecords& records, AssemblerCounters& counters);
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

  // `s` is the sender's session from now on: its file ids start afresh.
  void start_session(uint64_t s);
  // The current session is over (a new one starts, or with `receiver_stopping` the receiver
  // stops) while the gate still knows its lanes: every held list entry is settled now, under
  // this session, as if each of its lanes were gone: recorded (its reason says which of the two
  // ended it), or left to another receiver. Call before start_session().
  void end_session(bool receiver_stopping = false);
  // Fails every file still receiving with `reason` (a new session, shutdown). Files with all
  // their data finish on their own.
  void fail_receiving(const std::string& reason);
  // Fails, without waiting, every file whose record is not posted yet (shutdown, once I/O is
  // drained).
  void close_unrecorded(const std::string& reason);

  // The gate the table asks how the session's lanes stand (must outlive the table). Without
  // one, there is one lane, and its final heartbeat is never due.
  void set_gate(const SessionGate* gate) { gate_ = gate; }

  // The packets of the current session that concern files, with the lane each came on. Bad
  // payloads are counted.
  //
  // Lanes: a file is "open" on the lanes that announced it (a whole file on its one lane, a
  // striped one on every lane). The next file a lane announces closes the lane for the files
  // open on it, as does the file's end on that lane; a file that no lane holds open any more
  // and still misses data fails after a short grace (with one lane: once the next file comes).
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
  // as failed at once when the list came down that very lane (the sender lists a file only
  // after its end); else it is held until that lane is gone (its final heartbeat, or silence)
  // and recorded only if the file still has not come (receiver/assembly/file_table_lists.cpp).
  void handle_file_list(const common::Packet& p, size_t lane = 0);
  // True while list entries wait for their lane (the session is not over before they are
  // settled).
  bool holds_list_entries() const { return !held_.empty(); }
  // The sender's history (common/history_wire.hpp): each file it names that this receiver
  // neither delivered nor named, in any session of the journal's window, is recorded as missed
  // once, with when it was sent (receiver/assembly/file_table_history.cpp).
  void handle_history(const common::Packet& p);
  // The next announce of the file a kResend names is a copy of a file sent before: a copy of a
  // file delivered here is skipped unwritten; one of a file that failed or never came is
  // delivered and resolves the failure (receiver/assembly/file_table_history.cpp).
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
  const SessionFiles& session_files() const { return session_files_; }
  const WaitStats& wait_stats() const { return progress_.waits(); }
  uint64_t current_session() const override { return session_; }

 private:
  void fail(File& f, const std::string& reason) override;
  void end(File& f) override;
  void passed(File& f) override;
  // A resend of a file that failed or never came here is delivered: the failure is resolved.
  void resolve(const File& f);
  // A resend's announce (`flagged`: kFlagResend): true when the copy is of a file delivered
  // here (skipped); else `f` learns what it is a copy of.
  bool skip_copy(File& f, bool flagged);
  File* find(uint32_t id);
  bool known_earlier(uint32_t id) const { return settled_.contains(session_, id); }
  void remember_seen(uint32_t id);
  void supersede_receiving();
  bool filtered(const File& f);
  // Why the announce of `f` is refused (its size, the free space, its name, no room), or nullopt
  // when it is accepted: room was made for it.
  [[nodiscard]] std::optional<std::string> refusal(const common::Announce& a, const File& f);
  // Why a striped file cannot be assembled here, or nullopt when it can.
  [[nodiscard]] std::optional<std::string> striped_refusal() const;
  // Makes room for one more file in flight (the oldest receiving file may fail for it). False,
  // with *why set, when the bound on files in flight leaves none.
  [[nodiscard]] bool make_room(std::string* why);
  void accept(std::unique_ptr<File> f, bool joined_late);
  void on_created(File& f, bool ok, const std::string& reason);
  void refuse(const File& f, const std::string& reason);
  void record_unannounced(const common::FileListEntry& e, const std::string& lane_note = {});
  // A file this receiver never heard of, named by the sender's `named_by` ("file list",
  // "history"): refused when its name would have been, left out when the filter would have
  // dropped it, else recorded as failed with `rec` (its lane, of this session's, from
  // `sender_lane`). True when recorded as failed.
  bool record_unheard(FailureRecord rec, int sender_lane, const char* named_by);
  // A file of session `session` named only by the sender's history, recorded with `reason`
  // (as record_unannounced(), but for any session).
  void record_missed(const common::HistoryRecord& r, const std::string& reason, uint64_t sender_id);
  // Whether history record `r`'s lane goes to another receiver's host.
  bool left_elsewhere(const common::HistoryRecord& r) const;
  // Why the file of `r` never reached this receiver.
  std::string missed_reason(const common::HistoryRecord& r) const;
  // Why a listed file never heard of was never announced here, when the receiver can tell that
  // it was sent before the receiver's first packet of the session; nullopt when it cannot.
  std::optional<std::string> sent_before_joining(const common::FileListEntry& e) const;
  // handle_announce() of a file known already: a striped file's announce on one more lane.
  void announce_again(File& f, const common::Packet& p, size_t lane);
  // The lane announced file `next_id`: the files before it open on the lane are closed there.
  void close_lane(size_t lane, uint32_t next_id);
  // Whether every lane `f` is open on (its own, when none) is gone: its final heartbeat's grace
  // is over, or it fell silent.
  bool final_due(const File& f, common::Clock::time_point now) const;
  // " (lane K, ADDRESS)" with several lanes, else "".
  std::string lane_note(const File& f) const;
  // Held list entries: hold one, settle those whose lane is gone (release_held()).
  void hold(const common::FileListEntry& e);
  // `ended`: the session is over ("the session ended", "the receiver stopped"), so every lane
  // is taken as gone; null while it goes on.
  void release_held(common::Clock::time_point now, const char* ended = nullptr);
  // Why a held entry's file is recorded now, or nothing while its lane may still bring it.
  // *drop: it belongs to another receiver's lane (nothing to record).
  std::optional<std::string> held_due(int sender_lane, common::Clock::time_point now,
                                      const char* ended, bool* drop) const;
  Block* get_block(File*& f, uint64_t index);
  // The file a data packet names when it is receiving, else nullptr (counted).
  File* receiving(uint32_t id);
  // Stores chunk `idx` of *f (not had yet), from copy `copy`. False when the file failed
  // meanwhile (f is null).
  bool store_chunk(File*& f, uint64_t idx, std::span<const uint8_t> data, uint8_t copy);
  bool zdata_fits(const File& f, const common::ZDataHeader& z, size_t piece_len) const;
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
  SessionFiles session_files_;
  Finisher finisher_;
  size_t files_bound_;  // files in flight at most, whatever their state (make_room())
  OutcomeLog* journal_ = nullptr;
  SettledFiles settled_;  // this run's and the journal's (set_earlier())
  std::function<std::string()> sender_;
  uint64_t session_ = 0;
  uint32_t first_id_ = 0;  // the first file of the session this receiver heard announced
  // Files in flight by (session, file id): a restarted sender reuses ids while the old session's
  // failed files may still be finishing their I/O.
  std::map<std::pair<uint64_t, uint32_t>, std::unique_ptr<File>> files_;
  RecentIds seen_ids_{kSeenIdsKept};      // recent file ids of the session, to ignore late repeats
  RecentIds filtered_ids_{kSeenIdsKept};  // the session's files the filter dropped
  common::Clock::time_point last_timeout_check_{};
  const SessionGate* gate_ = nullptr;
  // List entries of files not heard of, waiting for their lane, by file id (handle_file_list()).
  struct HeldEntry {
    common::FileListEntry entry;  // its path points into `path`
    std::string path;
  };
  std::map<uint32_t, std::unique_ptr<HeldEntry>> held_;
  // kResend of this session by the copy's file id, until its announce.
  std::map<uint32_t, common::FileIdentity> resends_;
  Progress progress_;
  ZFrames zframes_;
};

}  // namespace ddft::receiver
