// Transmit stage, one per lane: turns work items into datagrams (each file's announce, data or
// kZData pieces, end or abort; mid-file repeated announces; the session's file lists and history;
// heartbeats). Its LaneOutput numbers them, adds FEC parity, seals them (--key-file), paces them
// (--rate is per lane), sends them in batches down the lane's sink and keeps the link alive
// during the pacer's sleeps; its ListSender sends the lane's share of the file list. Each lane has
// its own sequence numbers, FEC windows and salt (so its own key) under the session's one id.
//
//   lane's BoundedQueue<WorkItem> ──> [Transmitter on dd-tx / dd-txK] ──> lane's DatagramSink
//                                                   │ each file's events, its list entry
//                                                   v
//                                          LaneHub (observers, SessionList)
//
// What it promises:
// - The link is never quiet for longer than a heartbeat interval, and a heartbeat never overtakes
//   a datagram numbered before it (sender/transmit/lane_output.hpp).
// - Every block's buffer goes back to the pool, sent or not.
// - When its link refuses a send (LinkError), the lane ends the session (--lane-down stop, one
//   lane, or the last lane up) or goes down (--lane-down continue): it sends nothing more, the
//   routers stop choosing it (LaneLoad), the files it carries fail (striped ones on every lane,
//   which abort them), and it drains its queue, giving every buffer back, until the session ends.
// run() on the lane's thread, where the pacer calls back into it. The config, sink, clock, pool,
// queue, hub and load are the caller's and must outlive run(). run() throws LinkError when the
// link fails and the session must end, and std::logic_error or std::runtime_error for a datagram
// that cannot fit the packet size (a bug); a file that cannot be read is aborted on the wire.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include "common/bounded_queue.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/send_status.hpp"
#include "sender/transmit/lane_hub.hpp"
#include "sender/transmit/lane_load.hpp"
#include "sender/transmit/lane_output.hpp"
#include "sender/transmit/list_sender.hpp"
#include "sender/transmit/session_list.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class HistoryFeed;
class StatusReport;

// Bytes of a file's data (per copy) between two repeated announces, for an announce datagram of
// `announce_bytes` bytes on the wire: max(1 MiB, 1024 x announce_bytes), so that the repeats
// cost at most 1/1024 of the data.
uint64_t repeat_announce_interval(size_t announce_bytes);

class Transmitter {
 public:
  // Lane `lane` (0-based) of a session: `hub` is shared by the session's lanes and hears of
  // every file; `load`, when not null, hears as each block of `in` is done with (its queued
  // bytes), and is where the lane is taken down. All references must outlive run().
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
              LaneHub& hub, size_t lane, LaneLoad* load);
  // The same, taking its items from `in` (its lane's output of a ChannelMux): the files of
  // several channels, interleaved item by item.
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, WorkFeed& in, LaneHub& hub, size_t lane,
              LaneLoad* load);
  // A session of one lane: `observer` hears of every file. All references must outlive run().
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
              SendObserver& observer);
  // The pacer calls back into it during run(): it stays where it was made.
  Transmitter(const Transmitter&) = delete;
  Transmitter& operator=(const Transmitter&) = delete;
  // Runs on the lane's transmit thread until the queue is closed and drained; then reports the
  // lane done and keeps sending heartbeats (and lists as they come due) until every lane is, and
  // sends the last file list and the final heartbeat. On stop, remaining data is skipped and the
  // file in progress is aborted on the wire. With cfg.watch_dir set (a hot folder) the session
  // never ends with a complete list, only with the files since the last one. When the link
  // fails: throws LinkError, or with --lane-down continue and another lane up goes down (see
  // above) and returns once the queue is closed and drained.
  void run(std::stop_token stop);
  const SendTotals& totals() const { return totals_; }
  // Also publishes the totals into `status` as they change (null: not). Call before run().
  void set_status(SendStatus* status);
  // Sends the sender's history as `feed` packs it (null: none). Call before run().
  void set_history(HistoryFeed* feed) { history_ = feed; }
  // Each kSenderInfo carries the sender's status as `report` makes it (null: none), and goes as
  // often as the report says. Call before run().
  void set_status_report(StatusReport* report) { report_ = report; }

 private:
  // The public constructors: `own_feed` and `own_hub` (each may be null) are kept; `feed` and
  // `hub` are used when not null.
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, std::unique_ptr<WorkFeed> own_feed,
              WorkFeed* feed, std::unique_ptr<LaneHub> own_hub, LaneHub* hub, size_t lane,
              LaneLoad* load);

  struct FileProgress {
    std::shared_ptr<const FileMeta> meta;
    common::Clock::time_point started{};
    uint64_t sent = 0;          // file bytes this lane packetised so far (this copy)
    uint64_t next_report = 0;   // REPORT_OPTION V
    uint8_t copy = 0;           // --repeat: the copy being sent
    uint64_t repeat_every = 0;  // R: file bytes between repeated announces
    uint64_t next_repeat = 0;   // the copy's next repeated announce after this many bytes
    bool striped = false;       // striped over every lane (its announces carry kFlagStriped)
  };

  // The session on the wire: every item of the queue, then the end barrier, the last list and
  // the final heartbeat. Throws LinkError when the link fails.
  void send_session(std::stop_token stop);
  // One item of the queue (a block's buffer goes back to the pool whatever happens).
  void send_item(const WorkItem& item, std::stop_token stop);
  // A block is done with (sent or not): its buffer back to the pool, its bytes off the lane's load.
  void give_back(const WorkItem& item);
  // Every file this lane has open is aborted on the wire with `reason` (a stop).
  void abort_open(const std::string& reason);
  // The files open on this lane (each with whether it is striped), copied: ending one erases it.
  std::vector<std::pair<std::shared_ptr<const FileMeta>, bool>> open_files() const;
  // Whether `item` is the last of its file this lane sees: its last copy's end, or an abort.
  bool last_of_file(const WorkItem& item) const;
  // A file that was never announced (kSkip): counted failed, the observers told.
  void skip_file(const WorkItem& item);
  // The lanes that carry the file of `item`, bit k for lane k (this lane's, not routed).
  uint64_t carriers(const WorkItem& item) const;
  // How the logs name this lane: "lane 1 (127.0.0.1:5001)".
  std::string lane_label() const;

  // The link failed with `e`: rethrows it (naming the lane) unless --lane-down continue and another
  // lane is up; else takes this lane down: one error line, the files it carries fail, its queue is
  // drained (buffers back) until closed, and the lane reports done at the end barrier.
  void go_down(const LinkError& e);
  // Down: the item from the queue fails its file with `reason` (once per file), its buffer goes
  // back; nothing is sent.
  void drop_item(const WorkItem& item, const std::string& reason);

  // This lane's heartbeat as it stands (packets_sent is set as it is encoded).
  common::Heartbeat heartbeat_of(bool final) const;

  void send_block(const WorkItem& item);
  void send_frame(const WorkItem& item);
  // LaneOutput::commit() of a data packet, but for the test hook that drops one (--test-drop-data).
  void commit_data(std::span<uint8_t> slot, size_t n, uint64_t offset);
  // A repeated announce when this copy's data `done` passed the next mark and the file's data
  // goes on past `data_end`.
  void repeat_announce_if_due(uint64_t done, uint64_t data_end, const FileMeta& meta);
  void block_sent(const WorkItem& item, size_t raw);
  void send_heartbeat(bool final);
  // The session's kSenderInfo: at its start, then every kSenderInfoIntervalS; with a status
  // report, whenever the report says its status is due on this lane (with the status), and,
  // `last`, before the final heartbeat with the status as the session ends.
  void send_sender_info_if_due(bool last = false);
  // What the history feed has packed since this lane's last call; `last`: the session's last
  // call, which packs what is due without waiting to gather more.
  void send_history_if_due(bool last = false);
  void begin_file(const WorkItem& item);
  // The announce of `meta` as its first copy sends it, but for pause_s (0).
  common::Announce announce_of(const FileMeta& meta) const;
  // The flags of the file's announce: striped, a resend, a channel's.
  static uint16_t announce_flags(const FileMeta& meta, bool striped);
  // The repeated announce (kFlagRepeat) of the file being sent, once.
  void send_repeat_announce();
  void end_file(const WorkItem& item);
  void abort_file(const std::shared_ptr<const FileMeta>& meta, const std::string& reason,
                  bool striped);
  // This lane is through with `meta` (ended its last copy, or aborted it): the last lane that
  // carried it counts it, logs it and reports it (observers, then the list); it leaves open_.
  // `meta` by value: it may be the open file's, which this erases.
  void finish_file(std::shared_ptr<const FileMeta> meta, bool aborted, const common::Digest& digest,
                   const std::string& reason, bool striped);
  // The end barrier: reports this lane done, then keeps its link alive (heartbeats, lists that
  // come due) until every lane is done, so that the last list names every file of the session.
  void wait_for_lanes();

  const SenderConfig& cfg_;
  uint64_t session_id_;
  common::Clock& clock_;
  BufferPool& pool_;
  std::unique_ptr<WorkFeed> own_feed_;  // the lane queue's, when given one
  WorkFeed& in_;
  std::unique_ptr<LaneHub> own_hub_;  // the one-lane constructor's
  LaneHub& hub_;
  size_t lane_;
  LaneLoad* load_;
  size_t chunk_size_;  // data bytes per data packet
  SendTotals totals_;
  LaneOutput out_;
  ListSender lists_;
  uint64_t data_index_ = 0;
  uint32_t files_announced_ = 0;
  // The files this lane has begun and not finished, by file id: one at a time from one
  // channel, several when channels interleave. `cur_`: the one of the item being sent.
  std::map<uint32_t, FileProgress> open_;
  FileProgress* cur_ = nullptr;
  // Files this lane is through with before their items are (aborted early as doomed, or failed
  // while down): the rest of their items are dropped, up to the last copy's end or an abort.
  std::set<uint32_t> dropped_;
  common::Clock::time_point last_info_{};
  bool info_sent_ = false;
  SendStatus* status_ = nullptr;
  HistoryFeed* history_ = nullptr;
  StatusReport* report_ = nullptr;
};

}  // namespace ddft::sender
