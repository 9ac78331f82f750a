// The receiver's "dd-write" thread: drains the rings into the assembler.
//
//   lane k's ByteRing (all ringing one bell) ──> [WriterLoop on "dd-write"] ──> Assembler
//   lane k's DropLedger (file lists and heartbeats a full ring kept aside)  ──┘
//
// Each pass waits for datagrams (20 ms, or 200 us while I/O is pending, so that a small file's
// rename does not wait for the next packet), drains every ring in turn and hands its datagrams
// on, in the order they arrived, each with its lane: a batch is first decoded and opened side by
// side by the UnsealPool (--workers; with one worker a batch is one datagram, on this thread).
// It gives the rings back in groups, hands on the kept file lists once everything before them has
// been taken, and polls the assembler's I/O. Every 250 ms it names the rings' drops by file and
// publishes the assembler's counters.
//
// Stop: on a stop request (or with --once, when the session has finished) the loop ends, stops
// the threads that fill the rings (through `stop_upstream`), drains what the rings still hold,
// and fails every file still incomplete ("receiver stopped before the file was complete").
//
// run() on its own thread, the only one that ever calls the assembler. The rings, ledgers,
// assembler and clock are the caller's and must outlive run(); the loop owns the UnsealPool and
// its "dd-open" threads. run() throws nothing: an exception from the assembler ends the loop with
// an Error line, and the stop sequence still runs.
#pragma once

#include <deque>
#include <functional>
#include <stop_token>
#include <vector>

#include "common/clock.hpp"
#include "receiver/assembly/assembler.hpp"
#include "receiver/config.hpp"
#include "receiver/link/byte_ring.hpp"
#include "receiver/link/ingest.hpp"
#include "receiver/link/unseal_pool.hpp"

namespace ddft::receiver {

class WriterLoop {
 public:
  // What the receiver is told as the loop runs; each is called on the loop's thread and must
  // return quickly. Empty ones are skipped.
  struct Hooks {
    std::function<void()> on_pass;  // each pass of the loop (a watchdog's sign of life)
    std::function<void(const Assembler&)> publish;  // every 250 ms and once at the end
    std::function<void()> on_interval;              // every 250 ms, after publish
  };

  // One lane's ring and the ledger of what its full ring dropped.
  struct Input {
    ByteRing* ring = nullptr;
    DropLedger* drops = nullptr;
  };
  // All references must outlive run(). Several inputs must share one bell
  // (ByteRing::share_bell()); input k is lane k.
  WriterLoop(const ReceiverConfig& cfg, std::vector<Input> inputs, Assembler& assembler,
             common::Clock& clock, Hooks hooks);
  WriterLoop(const ReceiverConfig& cfg, ByteRing& ring, DropLedger& drops, Assembler& assembler,
             common::Clock& clock, Hooks hooks)
      : WriterLoop(cfg, {Input{&ring, &drops}}, assembler, clock, std::move(hooks)) {}

  // Runs until `stop` is requested or, with cfg.once, the session has finished; then calls
  // `stop_upstream` (which returns once nothing more enters the ring), drains the ring and fails
  // the files still incomplete. An exception from the assembler ends the loop with an Error
  // line; the stop sequence still runs.
  void run(std::stop_token stop, const std::function<void()>& stop_upstream);
  // The open workers (--workers), for tests and counters.
  const UnsealPool& pool() const { return pool_; }

 private:
  void loop(std::stop_token stop);
  void finish(const std::function<void()>& stop_upstream);
  // Hands the datagrams of lane `lane`'s ring that start before position `end` to the
  // assembler (a GRO bundle's one by one), releasing records in groups of 64 or more. When
  // handing on throws, what was handed on is released (so finish() does not hand it on twice)
  // and the exception goes on.
  void drain(size_t lane, uint64_t end);
  // Drains what every ring holds now: with several lanes, 1 MiB of each in turn.
  void drain_all();
  // Prechecks the batch on the open workers and hands it to the assembler in order.
  void hand_on();
  // Hands over the kept file lists whose place in their lane's stream has been reached.
  void take_saved();
  // What the full rings dropped, named by file.
  void note_drops();

  const ReceiverConfig& cfg_;
  std::vector<Input> inputs_;
  std::vector<ByteRing*> rings_;  // inputs_'s, for ByteRing::wait_any()
  Assembler& assembler_;
  common::Clock& clock_;
  Hooks hooks_;
  UnsealPool pool_;
  std::vector<Prechecked> batch_;  // datagrams from the ring not handed on yet
  // Per lane: file lists taken from its ledger, not yet handed on.
  std::vector<std::deque<DropLedger::Saved>> saved_;
};

}  // namespace ddft::receiver
