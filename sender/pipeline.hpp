// The sender pipeline: one reader, one or more lanes (issue 18: several links driven as one
// session, --dest given several times or --lanes N).
//
//   sources ──> [reader thread "dd-read"] ──push──> LaneRouter ──> one bounded queue of WorkItem
//               reads blocks into one recycled      whole files down   (slot handles) per lane;
//               buffer pool (read_buffers x lanes   the least busy     blocks when full:
//               blocks), hashes them in file order  lane, big files    back-pressure ──>
//               (B2B/SHA256)                        striped over all
//
//   ──> [transmit thread "dd-tx" (one lane) or "dd-tx0".."dd-txN-1"] ──> the lane's DatagramSink
//        per lane: packetises into a batch arena, paces at --rate (token bucket on absolute
//        deadlines; the rate is each lane's), numbers its datagrams from 0, FEC windows and, with
//        --key-file, a salt (so a key) of its own under the session's one id; repeats control
//        packets, sends heartbeats (naming lane and lanes) when idle, returns buffers to the pool
//        and tells the router its queued bytes went
//
//   every lane ──> LaneHub (sender/lane_hub.hpp): observers hear each file once, one event at a
//                  time; the last lane through with a file reports it and lists it in the
//                  SessionList (sender/session_list.hpp) that every lane sends, each on its own
//                  cadence; the lanes end together (the end barrier), each with the last list and
//                  its final heartbeat.
//
// Every file is: announce x N, data..., end x N (with the digest), or abort x N when the file
// could not be read to its end; with --repeat R, all of that R times (copies), the file read
// again for each. Among its data, after every max(1 MiB, 1024 x announce size) bytes of a copy,
// one repeated announce (kFlagRepeat; at most 1/1024 of the bytes) for a receiver that joined
// mid-file. With --fec, parity packets follow every window of packets and close it at the end of
// each file. Heartbeats go out when idle and between files. Every 5 s or 256 finished files, a
// file list x N names the files finished or aborted since the last one (their digests
// included). The session closes with its complete file list x N (or, past 100,000 files or in a
// hot folder, the files since the last list) and a final heartbeat x N.
//
// With lanes (sender/lane_router.hpp), a whole file (every copy) goes down one lane; a file over
// --stripe-mb is striped: its announces (kFlagStriped) and ends (the whole file's digest) go down
// every lane, each --stripe-mb range of its data (whole reader blocks) down the lane least busy
// when the range starts. Data packets carry the file's own offsets, as with one lane. The reader
// reads in file order, so while it hands one lane a stripe the others send only what they already
// hold (their share of the pool, about --read-buffers blocks each): lanes overlap fully on a
// striped file only when a stripe fits that share. Measured on loopback, 3 lanes at --rate 100
// each, 16 blocks of 1 MiB per lane: --stripe-mb 8 or 16 gave 290 MB/s, 32 gave 270, 64 (the
// default) 146.
//
// A lane whose link refuses a send (a device error, a UDP error but a full buffer): with
// --lane-down stop (the default, and always with one lane) the session ends, the lane named.
// With --lane-down continue the lane goes down (sender/transmitter.hpp): the router never
// chooses it again, the files it carries fail (a striped one as a whole: the other lanes abort
// it, the LaneHub having doomed it), the other lanes' lists name them aborted, and its
// transmitter drains its queue without sending, so that every buffer comes back and the end
// barrier counts it done. The session ends as with stop when the last lane up fails.
//
// A lane much slower than the others: the router gives whole files and stripes to the lane with
// the fewest queued bytes, so it gets less. But a file or stripe already given to it goes at its
// pace: while its queue is full the reader waits (back-pressure) and the other lanes drain and
// idle, so for the rest of that file or stripe the session runs at the slow lane's rate; the
// next ones go to the others while the slow lane's queue holds more. No deadlock: the pool is
// shared, but every buffer out is in some lane's queue or transmitter, no transmitter waits for
// the reader or another lane (but at the end barrier, after its queue is drained), so every
// buffer comes back.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/file_list.hpp"
#include "sender/send_status.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class HistoryFeed;

// Runs one sending session over one lane per sink: every file of `files`, then the final
// heartbeat on every lane. `clock` paces; it and the sinks must outlive the call. Thread-safe to
// construct; run() once.
class Sender {
 public:
  // One lane per sink of `sinks` (at least one), lane i down sinks[i] (cfg.lane_name(i) names it
  // in the logs).
  Sender(const SenderConfig& cfg, std::vector<common::DatagramSink*> sinks, common::Clock& clock);
  // One lane.
  Sender(const SenderConfig& cfg, common::DatagramSink& sink, common::Clock& clock);
  // `o` hears of every file once, one event at a time (from whichever lane's thread); it must
  // outlive run(). Before run().
  void add_observer(SendObserver* o) { observers_.add(o); }
  // Sends every file `files` gives until it gives none; returns then or when `stop` is requested
  // (the files in progress are then aborted on the wire). Files that could not be read are
  // counted in files_failed. The totals are the sums over the lanes. Rethrows what a lane threw.
  SendTotals run(FileSource& files, std::stop_token stop);
  SendTotals run(const std::vector<SourceFile>& files, std::stop_token stop);
  uint64_t session_id() const { return session_id_; }
  size_t lanes() const { return sinks_.size(); }
  // Publishes this session's numbers into `status` (must outlive run()). Call before run().
  void set_status(SendStatus* status) { status_ = status; }
  // Every lane sends the history `feed` packs (must outlive run()). Call before run().
  void set_history(HistoryFeed* feed) { history_ = feed; }

 private:
  // The session's first log line.
  void log_start(const FileSource& files) const;

  const SenderConfig& cfg_;
  std::vector<common::DatagramSink*> sinks_;
  common::Clock& clock_;
  uint64_t session_id_;
  ObserverList observers_;
  SendStatus* status_ = nullptr;
  HistoryFeed* history_ = nullptr;
};

// The reader's block size: --read-block-kb rounded down to whole data chunks, so that no data
// packet spans two blocks (at least one chunk).
size_t reader_block_size(const SenderConfig& cfg);

// A random 64-bit session id (never 0).
uint64_t new_session_id();

}  // namespace ddft::sender
