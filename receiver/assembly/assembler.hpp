// The assembler: the receive side's core, a façade over the units of the middle (SessionGate,
// FecDecoder, FileTable, FileBlocks, WriteEngine, Finisher, FailureRecords; docs/architecture.md,
// "The middle", draws them and the seams where threads could later sit). It takes checked
// datagrams off the ring, follows each sender's session (SenderSlots), assembles each file's data
// into write blocks, hashes it in file order, writes it through the BlockIo, and finishes every
// file exactly one way: verified and renamed into place, or moved to the failed folder with a
// record of why. It also prints the DFTS receive log.
//
//   datagrams, in arrival order ──> Assembler ──> writes (BlockIo), file-system calls (FsPool)
//   (WriterLoop)                              ──> log lines, journal, records, delivered files
//
// It owns no thread: the pipeline calls it from "dd-write" (WriterLoop) only; tests call it
// directly with datagrams they build, a FakeClock and a real folder. It owns its units and the
// FsPool (dd-fsop1..4); the folder, the IO engine, the block memory and the clock are the
// caller's and must outlive it. Bad input is counted and dropped, and an exception while handling
// one packet is counted (handling_errors) and logged: the next datagram goes on. The constructor
// throws std::runtime_error when a lane's replay state is damaged (start-up).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/block_io.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "receiver/assembly/failure_records.hpp"
#include "receiver/assembly/file_table.hpp"
#include "receiver/assembly/sender_slots.hpp"
#include "receiver/assembly/status_board.hpp"
#include "receiver/config.hpp"
#include "receiver/counters.hpp"
#include "receiver/delivery/delivered_file.hpp"
#include "receiver/delivery/fs_pool.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/delivery/write_engine.hpp"
#include "receiver/link/fec_decoder.hpp"
#include "receiver/link/ingest.hpp"
#include "receiver/link/session_gate.hpp"

namespace ddft::receiver {

class Assembler {
 public:
  // All references must outlive the assembler. `writer` and `out` are used from the calling
  // thread only.
  // `cfg.lanes()` links feed it (on_datagram()'s `lane`, Prechecked::lane).
  Assembler(const ReceiverConfig& cfg, OutputDir& out, common::BlockIo& writer,
            common::AlignedBuffer& block_memory, common::Clock& clock);
  ~Assembler();
  Assembler(const Assembler&) = delete;
  Assembler& operator=(const Assembler&) = delete;

  // Handles one datagram from `lane`. `real_len` is its length on the wire (larger than
  // data.size() when it was truncated). Never throws on bad input: it is counted and dropped.
  void on_datagram(std::span<const uint8_t> data, size_t real_len, size_t lane = 0);
  // The same for a datagram already decoded and opened (UnsealPool); in arrival order.
  void on_prechecked(const Prechecked& pre);
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

  // True once a sender session was heard and every live one has said it finished with all of
  // its files done, or, when its final heartbeat was lost, has been silent for --file-timeout
  // with nothing in flight (--once).
  bool session_finished() const;
  // True while writes, syncs or file-system calls are queued or in flight (the caller should
  // poll again soon).
  bool io_pending() const { return table_.io_pending(); }
  bool idle() const { return table_.empty() && !io_pending(); }
  // What earlier runs of the receiver finished or named (its journal, and the files left behind
  // that the start-up recorded as failed): a repeated announce or a file list naming one of
  // them is not recorded again. Call before the first datagram. `journal` (may be null) gets
  // this run's outcomes; it must outlive the assembler. `failed`: of `known`, those whose last
  // word is a failure, with their records (a resend of one is delivered and resolves it).
  void set_earlier(
      OutcomeLog* journal, const std::vector<std::pair<uint64_t, uint32_t>>& known,
      const std::vector<std::pair<std::pair<uint64_t, uint32_t>, std::string>>& failed = {});
  // The live sender sessions: (session id, sender id or 0), in the order of their ids.
  std::vector<std::pair<uint64_t, uint64_t>> senders() const;
  const AssemblerCounters& counters() const { return counters_; }
  // Packets lost on the link (sequence gaps) since start, over every session and lane.
  uint64_t lost() const;
  // The same on `lane`.
  uint64_t lost(size_t lane) const;
  // Over every lane and session since start.
  FecCounters fec() const;
  size_t lanes() const { return gate_.lanes(); }
  // Files announced and not finished yet, those finishing their writes included.
  size_t files_in_flight() const { return table_.size(); }
  const WaitStats& wait_stats() const { return table_.wait_stats(); }
  // Logs each live session's summary line ("Info: session ... : N passed, M failed, ...").
  void log_summary() const;
  // Called on the writer thread for each file verified and renamed into place, right after its
  // File: line. It must not block (the --on-complete runner only queues). Set before the first
  // datagram.
  // Each sender's status (the tail of its kSenderInfo) goes to `board` (null: nowhere), which is
  // polled with the assembler. Set before the first datagram; `board` must outlive this.
  void set_status_board(StatusBoard* board) { board_ = board; }
  void set_on_delivered(std::function<void(const DeliveredFile&)> fn) {
    table_.set_on_delivered(std::move(fn));
  }
  // Where the sender's datagrams come from ("10.0.0.1:4000", a device path), asked at each
  // announce and written beside the file, so that a file a crash leaves behind names its sender
  // too. Called on the writer thread; must not block.
  void set_sender(std::function<std::string()> sender) { table_.set_sender(std::move(sender)); }

 private:
  // A datagram the gate let through (`data` the inner one when it was sealed).
  void on_admitted(std::span<const uint8_t> data, common::Packet& p, size_t lane);
  // The slot of `p`'s session: live, or opened for it (in the place of a sender it restarts, or
  // of a quiet one, when every place is taken); null when it is refused.
  SenderSlot* slot_for(const common::Packet& p);
  SenderSlot& open_slot(uint64_t s);
  // `slot`'s session is over: its files still receiving fail with `reason` (none when empty),
  // its summary is logged and its place freed.
  void end_slot(SenderSlot& slot, const std::string& reason);
  // Ends the slots whose sender said it finished (final heartbeat on every lane) and whose
  // files are all done.
  void end_finished_slots();
  bool slot_idle(const SenderSlot& slot) const;
  void log_summary(const SenderSlot& slot) const;
  void on_rebuilt(std::span<const uint8_t> data, size_t lane, SenderSlot& slot);
  // Offers the data of an announce's FEC window again (it came before the file was known).
  void replay_window(const common::Header& announce, size_t lane, SenderSlot& slot);
  // `rebuilt`: FEC made the packet (it did not come over the link); the file it fills counts it.
  void dispatch(const common::Packet& p, size_t lane, SenderSlot& slot, bool rebuilt = false);
  void handle_heartbeat(const common::Packet& p, size_t lane, SenderSlot& slot);
  void handle_sender_info(const common::Packet& p, SenderSlot& slot);

  const ReceiverConfig& cfg_;
  common::Clock& clock_;
  std::unique_ptr<FsPool> fs_;  // first made, last gone: the units post work to it
  AssemblerCounters counters_;
  WriteEngine engine_;
  FailureRecords records_;
  SessionGate gate_;
  SenderSlots slots_;
  StatusBoard* board_ = nullptr;
  bool heard_ = false;                    // a sender session was heard
  FecCounters fec_past_;                  // of the sessions ended
  std::vector<uint64_t> lane_lost_past_;  // of the sessions ended, by lane
  FileTable table_;
};

}  // namespace ddft::receiver
