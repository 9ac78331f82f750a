// The sender pipeline: one reader per channel (one without channels), one or more lanes (several
// links driven as one session, --dest given several times or --lanes N). docs/architecture.md
// ("The sender", "Compression", "Lanes", "Channels") draws it whole; its ends are
//
//   FileSource per channel ──> Sender::run() ──> one DatagramSink per lane;
//                                                SendObserver(s) hear each file
//
// With channels each reader has its own share of the pool and its own lane router, and the lanes
// take their next item from a ChannelMux (sender/transmit/channel_mux.hpp), which interleaves the
// channels' files block by block by their policies; file ids are the session's, one counter.
//
// What it promises:
// - Every file is announced, sent and ended (with its digest), or aborted when it could not be
//   read to its end, on every lane that carries it, --repeat times; every file finished or aborted
//   is named in a file list, and the session ends with its list and a final heartbeat per lane.
// - Memory is bounded by the pool (read_buffers blocks per lane and channel), whatever the files.
// - No deadlock across lanes: every buffer out is in a lane's queue or transmitter, and no
//   transmitter waits for the reader or another lane except at the end barrier, after its queue.
// - A lane whose link refuses a send ends the session (--lane-down stop, and always with one
//   lane) or goes down alone (--lane-down continue): its files fail and are listed as aborted.
// Threads: run() on the caller's thread starts "dd-read" (with channels "dd-read-NAME" each),
// "dd-tx" (or "dd-tx0".. with lanes)
// and the pools the stages own, and joins them all before it returns. Ownership: the config,
// sinks, clock, observers, status and history feed are the caller's and must outlive run(); the
// session's pool, queues and stages live inside run(). Throws: the constructor
// std::invalid_argument without a sink (a bug); run() rethrows, once every thread has joined,
// what a lane threw (the LinkError that ended the session). A file that cannot be read is
// counted and aborted, never thrown.
#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/transport.hpp"
#include "sender/channel.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/send_status.hpp"
#include "sender/source/file_list.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class HistoryFeed;
class StatusReport;

// One channel of a session: its name ("" without channels), what it asks of the link, and where
// its files come from (the caller's; it must outlive run()).
struct SessionChannel {
  std::string name;
  ChannelPolicy policy;
  FileSource* files = nullptr;
  std::string description;  // how the session's first line describes it; files->describe() if empty
};

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
  // The same for several channels at once (at most one of them without a name, and then alone):
  // every lane shared by their policies until every source gives no more files.
  SendTotals run(const std::vector<SessionChannel>& channels, std::stop_token stop);
  uint64_t session_id() const { return session_id_; }
  size_t lanes() const { return sinks_.size(); }
  // Publishes this session's numbers into `status` (must outlive run()). Call before run().
  void set_status(SendStatus* status) { status_ = status; }
  // Every lane sends the history `feed` packs (must outlive run()). Call before run().
  void set_history(HistoryFeed* feed) { history_ = feed; }
  // Every lane sends the sender's status as `report` makes it (must outlive run()); it hears of
  // each session's channels. Call before run().
  void set_status_report(StatusReport* report) { report_ = report; }

 private:
  // The session begins: the status report, the history and the status hear of it, then its first
  // log line.
  void start_session(const std::vector<SessionChannel>& channels);
  // The session's first log line.
  void log_start(const std::vector<SessionChannel>& channels) const;

  const SenderConfig& cfg_;
  std::vector<common::DatagramSink*> sinks_;
  common::Clock& clock_;
  uint64_t session_id_;
  ObserverList observers_;
  SendStatus* status_ = nullptr;
  HistoryFeed* history_ = nullptr;
  StatusReport* report_ = nullptr;
};

// The reader's block size: --read-block-kb rounded down to whole data chunks, so that no data
// packet spans two blocks (at least one chunk).
size_t reader_block_size(const SenderConfig& cfg);

// A random 64-bit session id (never 0).
uint64_t new_session_id();

}  // namespace ddft::sender
