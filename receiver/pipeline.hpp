// The receiver pipeline: per link (lane) a receive thread and its ring, and one writer thread
// that drains every ring into the assembler. docs/architecture.md ("The receiver", "Lanes", "The
// middle") draws it whole; its ends are
//
//   lane k's DatagramSource ──> Receiver::run() ──> files under --output, or named as failed
//                                               ──> ReceiveTotals; status() from any thread
//
// What it promises:
// - The link never waits: a full ring drops, counts and logs. The writer thread never waits on
//   the file system, only (when every write block is taken) for a write or a pool call to
//   finish, while the rings hold what the links bring.
// - Start: the output folder is checked and locked first, and what an earlier run left is
//   finished or named (receiver/delivery/recovery.hpp); then the rings are populated (and locked
//   with --lock-memory), the write blocks, the IO engine and the hook runner are made, and only
//   then are the links opened (bind, or the device node): once a sender's datagrams can queue in
//   the kernel, all that is left is to make the assembler and start the threads that drain them
//   (docs/operations.md has the times). The `receiving on` line (and READY=1 to systemd, see
//   ReceiverObserver) comes once every one of those threads runs its loop.
// - Stop: the receive threads stop first; the writer drains what the rings already hold, then
//   every file still receiving is recorded as failed ("receiver stopped"), files with all their
//   data finish, and all I/O is waited for. Then running hooks finish (each up to
//   --on-complete-timeout; with --once, queued ones run too) and every file whose hook never ran
//   is logged.
// Threads: the constructor starts the pools the receiver owns (dd-wio1..N with --writers N,
// dd-hook1..N); run() on the caller's thread starts "dd-rx" (or "dd-rx0".. with lanes),
// "dd-write" and the assembler's dd-fsop1..4, and joins them before it returns; status() and the
// other const calls are thread-safe.
// Ownership: the receiver owns the output folder, the rings, the write blocks, the IO engine and
// the hook runner; the config and the clock are the caller's and must outlive it. Throws: the
// constructor std::runtime_error with one line (a folder it cannot use, a port in use), and run()
// the same before it receives (a damaged replay state); once receiving, a datagram, a file or a
// failed write is counted and named, never thrown.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.hpp"
#include "common/transport.hpp"
#include "receiver/assembly/assembler.hpp"
#include "receiver/config.hpp"
#include "receiver/delivery/hook_runner.hpp"
#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "receiver/delivery/recovery.hpp"
#include "receiver/link/byte_ring.hpp"
#include "receiver/link/ingest.hpp"

namespace ddft::receiver {

struct ReceiveTotals {
  uint64_t files_passed = 0;
  uint64_t files_failed = 0;
  uint64_t files_refused = 0;
  uint64_t files_filtered = 0;
  uint64_t datagrams = 0;
  uint64_t ring_full_drops = 0;
  uint64_t lost = 0;
};

// What the writer thread's Assembler has counted, as it last published it (every 250 ms, and once
// more when it stops).
struct WriterStatus {
  AssemblerCounters counters;
  FecCounters fec;
  WaitStats waits;
  uint64_t packets_lost = 0;        // sequence gaps over all sessions; never goes down
  std::vector<uint64_t> lane_lost;  // the same per lane
  // The live sender sessions: (session id, sender id or 0).
  std::vector<std::pair<uint64_t, uint64_t>> senders;
  size_t files_in_flight = 0;
};

// A view of the receiver from any thread (for --metrics): the writer's last published snapshot,
// and the ingest thread's counters and the ring's fill read live.
struct ReceiverStatus {
  WriterStatus writer;
  uint64_t datagrams = 0;  // taken off the link, before any check
  uint64_t datagram_bytes = 0;
  uint64_t ring_full_drops = 0;
  size_t ring_bytes = 0;         // the ring's size
  size_t ring_used = 0;          // bytes holding datagrams the writer has not taken yet
  size_t ring_high_water = 0;    // most bytes ever in use
  int64_t last_datagram_ns = 0;  // steady_clock ns of the last datagram received, 0 before
  long link_drops = -1;          // UDP: datagrams the kernel dropped on the socket; else -1
};

// How far the receiver's two loops and its files have got, for a watchdog.
struct Liveness {
  uint64_t ingest_passes = 0;  // passes of the "dd-rx" loop (at least one every 50 ms)
  uint64_t writer_passes = 0;  // passes of the "dd-write" loop (at least one every 20 ms)
  uint64_t files_passed = 0;   // over all sessions, as last published
  uint64_t files_failed = 0;
};

// Told what the receiver does, for a service manager (ServiceNotifier in
// receiver/operations/systemd_notify.hpp). Called on the writer thread: a call must return quickly.
class ReceiverObserver {
 public:
  virtual ~ReceiverObserver() = default;
  // Once: the link is open and both the ingest and the writer thread have entered their loops
  // (right after the `receiving on` line). `link` names it ("127.0.0.1:5000", "device PATH").
  virtual void on_receiving(std::string_view link) = 0;
  // Every 250 ms while the writer loop comes round.
  virtual void on_tick(const Liveness& liveness) = 0;
};

class Receiver {
 public:
  // Opens lane `lane`'s link (0 .. cfg.lanes() - 1).
  using SourceOpener = std::function<std::unique_ptr<common::DatagramSource>(size_t lane)>;
  using SingleOpener = std::function<std::unique_ptr<common::DatagramSource>()>;
  // Opens the output folder first (a bad folder is reported before memory is spent or a port is
  // taken), then prepares the rings, the write pool, the IO engine and the hook runner, and opens
  // the links (`open_source`, once per lane) last. Throws std::runtime_error with a one-line
  // reason. `clock` must outlive the receiver.
  Receiver(const ReceiverConfig& cfg, const SourceOpener& open_source, common::Clock& clock);
  // One lane.
  Receiver(const ReceiverConfig& cfg, const SingleOpener& open_source, common::Clock& clock)
      : Receiver(cfg, SourceOpener([&open_source](size_t) { return open_source(); }), clock) {}
  ~Receiver();
  // Runs until `stop` is requested or, with cfg.once, the first session has finished.
  ReceiveTotals run(std::stop_token stop);
  // Tells `observer` (null: no one) when receiving starts and how the loops progress. Call
  // before run(); `observer` must outlive run().
  void set_observer(ReceiverObserver* observer) { observer_ = observer; }
  // Thread-safe; cheap but for link_drops (a read of /proc/net/udp). Over every lane.
  ReceiverStatus status() const;
  // The same for one lane (its ring, its link); `writer` is the whole receiver's.
  ReceiverStatus lane_status(size_t lane) const;
  // The output folder's file system now (OutputDir::space()). Thread-safe; one statvfs.
  std::optional<OutputDir::Space> output_space() const { return out_->space(); }
  size_t lanes() const { return lanes_.size(); }
  // The --on-complete runner (its counters() are readable from any thread), or null without
  // --on-complete. Lives as long as the receiver.
  const HookRunner* hooks() const { return hooks_.get(); }
  // The senders' last statuses (its snapshot() is readable from any thread). Lives as long as the
  // receiver.
  const StatusBoard& status_board() const { return *board_; }
  // The engine that writes the files: kUring, kPwrite, or kNull with --sink null (never kAuto).
  // Fixed by the constructor; any thread.
  common::IoEngine write_engine() const { return write_engine_; }
  // Why --io-engine auto runs pread/pwrite (the kernel's refusal of io_uring); empty when nothing
  // fell back. Fixed by the constructor; any thread.
  const std::string& write_engine_fallback() const { return write_engine_fallback_; }

 private:
  // The constructor's steps, in order. open_output(): the output folder locked, what an earlier
  // run left finished or named; true when writes go direct (O_DIRECT).
  bool open_output();
  // The rings (one per lane, sharing --buffer-mb), populated (and locked with --lock-memory).
  void make_rings();
  // The write blocks and the IO engine that writes them.
  void make_io_engine();
  // The --on-complete runner, when one is asked for (and files are written).
  void make_hooks();
  void publish(const Assembler& assembler);
  // Writer thread, at the top of each pass of its loop: counts the pass and, the first time the
  // ingest loop has run too, logs the `receiving on` line and tells the observer.
  void note_writer_pass();
  // Writer thread, every 250 ms: the observer's tick.
  void tick_observer();
  // Receives on each lane's thread ("dd-rx", or "dd-rx0".. with lanes) until stopped.
  std::vector<std::jthread> start_ingest();
  // Logs what the links and the rings dropped, and adds the totals.
  void report_drops(ReceiveTotals* t) const;

  // One link: its source, the ring its thread receives into, that thread's loop.
  struct Lane {
    std::unique_ptr<common::DatagramSource> source;
    std::unique_ptr<ByteRing> ring;
    std::unique_ptr<Ingest> ingest;
    std::string name;  // "127.0.0.1:5000", "device PATH"
  };

  const ReceiverConfig& cfg_;
  common::Clock& clock_;
  std::unique_ptr<OutputDir> out_;
  std::unique_ptr<OutcomeLog> journal_;  // null with --sink null
  StartRecovery recovery_;
  RingBell bell_;  // before lanes_: the rings ring it
  std::vector<Lane> lanes_;
  common::AlignedBuffer block_memory_;
  std::unique_ptr<common::BlockIo> writer_;
  common::IoEngine write_engine_ = common::IoEngine::kAuto;  // writer_'s, set with it
  std::string write_engine_fallback_;                        // writer_'s, set with it
  mutable std::mutex status_mu_;
  WriterStatus published_;  // guarded by status_mu_
  // Per lane: what earlier sessions lost (publish()).
  std::unique_ptr<HookRunner> hooks_;
  std::unique_ptr<StatusBoard> board_;
  ReceiverObserver* observer_ = nullptr;
  std::string start_line_;  // the `receiving on` line, made by the constructor
  std::string link_name_;   // what the observer is told the link is
  std::atomic<uint64_t> writer_passes_{0};
  bool announced_ = false;  // writer thread only
};

}  // namespace ddft::receiver
