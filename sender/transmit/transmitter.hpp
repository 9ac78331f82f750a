// Transmit stage, one per lane: turns work items into datagrams (each file's announce, data or
// kZData pieces, end or abort; mid-file repeated announces; the session's file lists and history;
// heartbeats), numbers them, adds FEC parity, seals them (--key-file), paces them (--rate is per
// lane) and sends them in batches down the lane's sink. Each lane has its own sequence numbers,
// FEC windows and salt (so its own key) under the session's one id.
//
//   lane's BoundedQueue<WorkItem> ──> [Transmitter on dd-tx / dd-txK] ──> lane's DatagramSink
//                                                   │ each file's events, its list entry
//                                                   v
//                                          LaneHub (observers, SessionList)
//
// What it promises:
// - The link is never quiet for longer than a heartbeat interval: during every DFTS sleep the
//   pacer's keepalive sends a heartbeat from this thread, and a full link buffer is retried at
//   least that often. Such a heartbeat never overtakes a datagram numbered before it (the
//   receiver would count the gap as loss): a batch ends where an intra-packet sleep falls, and
//   every sleep comes after a batch's last datagram.
// - Every block's buffer goes back to the pool, sent or not.
// - When its link refuses a send (LinkError), the lane ends the session (--lane-down stop, one
//   lane, or the last lane up) or goes down (--lane-down continue): it sends nothing more, the
//   router stops choosing it, the files it carries fail (striped ones on every lane, which abort
//   them), and it drains its queue, giving every buffer back, until the session ends.
// run() on the lane's thread, where the pacer calls back into it. The config, sink, clock, pool,
// queue, hub and router are the caller's and must outlive run(). run() throws LinkError when the
// link fails and the session must end, and std::logic_error or std::runtime_error for a datagram
// that cannot fit the packet size (a bug); a file that cannot be read is aborted on the wire.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/bounded_queue.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/send_status.hpp"
#include "sender/transmit/fec_encoder.hpp"
#include "sender/transmit/lane_hub.hpp"
#include "sender/transmit/lane_router.hpp"
#include "sender/transmit/pacer.hpp"
#include "sender/transmit/session_list.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

class HistoryFeed;

// Bytes of a file's data (per copy) between two repeated announces, for an announce datagram of
// `announce_bytes` bytes on the wire: max(1 MiB, 1024 x announce_bytes), so that the repeats
// cost at most 1/1024 of the data.
uint64_t repeat_announce_interval(size_t announce_bytes);

// A lane's link refused a send (anything but a full buffer). what() names the lane when the
// session has several: "lane 1 (127.0.0.1:5001): send failed: Network is unreachable".
class LinkError : public std::system_error {
 public:
  using std::system_error::system_error;
};

class Transmitter {
 public:
  // Lane `lane` (0-based) of a session: `hub` is shared by the session's lanes and hears of
  // every file; `router`, when not null, hears as each block of `in` is done with (its queued
  // bytes). All references must outlive run().
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
              LaneHub& hub, size_t lane, LaneRouter* router);
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

 private:
  // Both public constructors: `own_hub` (may be null) is kept, `hub` used when not null.
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
              std::unique_ptr<LaneHub> own_hub, LaneHub* hub, size_t lane, LaneRouter* router);

  // Holds `flag` true for its lifetime, exceptions included.
  class FlagScope {
   public:
    explicit FlagScope(bool& flag) : flag_(flag) { flag_ = true; }
    ~FlagScope() { flag_ = false; }
    FlagScope(const FlagScope&) = delete;
    FlagScope& operator=(const FlagScope&) = delete;

   private:
    bool& flag_;
  };

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
  // A block is done with (sent or not): its buffer back to the pool, its bytes off the router's.
  void give_back(const WorkItem& item);
  // A file that was never announced (kSkip): counted failed, the observers told.
  void skip_file(const WorkItem& item);
  // The lanes that carry the file of `item`, bit k for lane k (this lane's, not routed).
  uint64_t carriers(const WorkItem& item) const;
  // How the logs name this lane: "lane 1 (127.0.0.1:5001)".
  std::string lane_label() const;

  // The link failed with `e` (sender/transmit/transmitter_lane_down.cpp): rethrows it (naming the
  // lane) unless --lane-down continue and another lane is up; else takes this lane down: one error
  // line, the files it carries fail, its queue is drained (buffers back) until closed, and the
  // lane reports done at the end barrier.
  void go_down(const LinkError& e);
  // Down: the item from the queue fails its file with `reason` (once per file), its buffer goes
  // back; nothing is sent.
  void drop_item(const WorkItem& item, const std::string& reason);

  // The keepalive (sender/transmit/transmitter_keepalive.cpp). During a DFTS sleep, on this thread:
  // a heartbeat when the last datagram left keepalive_interval() ago or more; returns when to be
  // asked again. Sends nothing while datagrams encoded before it wait unsent, or from within
  // its own send.
  common::Clock::time_point keep_link_alive(common::Clock::time_point now);
  // The longest the link stays quiet while pacing: the heartbeat interval, but at most the
  // interval a receiver assumes until this session's first heartbeat has told it.
  std::chrono::nanoseconds keepalive_interval() const;
  // One heartbeat, sent at once outside the batch (once, not control_repeat times): an FEC
  // source while a window is open and not being closed (its places are numbered by sequence),
  // the window closed and its parity sent at once when it fills it.
  void send_keepalive();
  // Seals (with --key-file) the datagram of `n` bytes in `slot` and sends it now, counted.
  void send_now(std::span<uint8_t> slot, size_t n);
  // `datagrams` datagrams of `bytes` in all went out: the totals and the status.
  void count_sent(size_t datagrams, size_t bytes);
  // This lane's heartbeat as it stands (packets_sent is set as it is encoded).
  common::Heartbeat heartbeat_of(bool final) const;

  std::span<uint8_t> next_slot();
  // Takes the datagram of `n` bytes just encoded in `slot` (the latest next_slot()) for sending;
  // with FEC it is added to its window first. `send` false: built, counted in its window, not
  // sent (the test hook's "lost on the link").
  void commit(std::span<uint8_t> slot, size_t n, bool send = true);
  // Adds the datagram of `n` bytes encoded in `slot` to the batch being built (no FEC
  // accounting), sealed first with --key-file.
  void enqueue(std::span<uint8_t> slot, size_t n);
  // With FEC, sends the parity of the window so far and starts a new one.
  void close_window();
  void flush();
  void send_all(std::span<const std::span<const uint8_t>> datagrams);
  // The next header; source datagrams get their place in the FEC window.
  common::Header next_header(bool fec_source = true);
  // Sends a control datagram control_repeat times; `flags` go into each header.
  void send_control(const std::function<size_t(const common::Header&, std::span<uint8_t>)>& enc,
                    uint16_t flags = 0);
  void send_block(const WorkItem& item);
  void send_frame(const WorkItem& item);
  // commit() of a data packet, but for the test hook that drops one (--test-drop-data).
  void commit_data(std::span<uint8_t> slot, size_t n, uint64_t offset);
  // A repeated announce when this copy's data `done` passed the next mark and the file's data
  // goes on past `data_end`.
  void repeat_announce_if_due(uint64_t done, uint64_t data_end, const FileMeta& meta);
  void block_sent(const WorkItem& item, size_t raw);
  void send_heartbeat(bool final);
  // The session's kSenderInfo, at its start and then every kSenderInfoIntervalS.
  void send_sender_info_if_due();
  // What the history feed has packed since this lane's last call
  // (sender/transmit/transmitter_history.cpp); `last`: the session's last call, which packs what is
  // due without waiting to gather more.
  void send_history_if_due(bool last = false);
  void begin_file(const WorkItem& item);
  // The announce of `meta` as its first copy sends it, but for pause_s (0).
  common::Announce announce_of(const FileMeta& meta) const;
  // The repeated announce (kFlagRepeat) of the file being sent, once.
  void send_repeat_announce();
  void end_file(const WorkItem& item);
  void abort_file(const std::shared_ptr<const FileMeta>& meta, const std::string& reason,
                  bool striped);
  // This lane is through with `meta` (ended its last copy, or aborted it): the last lane that
  // carried it counts it, logs it and reports it (observers, then the list). `meta` by value: it
  // may be current_'s, which this resets.
  void finish_file(std::shared_ptr<const FileMeta> meta, bool aborted, const common::Digest& digest,
                   const std::string& reason, bool striped);
  // Sends the files this lane has not listed yet when kListBatch of them wait or kListInterval
  // passed since its last list.
  void send_list_if_due();
  // Sends `files` as one list (split over datagrams, each control_repeat times).
  void send_list(const std::vector<ListedFile>& files, uint16_t flags);
  // At the end of the session: the complete list when it may be, else the files since the last.
  void send_last_list();
  // The end barrier: reports this lane done, then keeps its link alive (heartbeats, lists that
  // come due) until every lane is done, so that the last list names every file of the session.
  void wait_for_lanes();

  const SenderConfig& cfg_;
  uint64_t session_id_;
  common::DatagramSink& sink_;
  common::Clock& clock_;
  BufferPool& pool_;
  common::BoundedQueue<WorkItem>& in_;
  std::unique_ptr<LaneHub> own_hub_;  // the one-lane constructor's
  LaneHub& hub_;
  size_t lane_;
  LaneRouter* router_;
  Pacer pacer_;
  size_t chunk_size_;   // data bytes per data packet
  size_t source_size_;  // longest datagram but parity (the packet size less the FEC room)
  std::unique_ptr<FecEncoder> fec_;
  std::unique_ptr<common::Sealer> sealer_;  // --key-file
  common::Clock::time_point last_heartbeat_{};
  common::Clock::time_point last_sent_{};  // when the link last took a datagram
  bool heartbeat_sent_ = false;            // this session has sent a heartbeat (its interval)
  bool closing_window_ = false;            // the FEC window's parity is being encoded
  bool keeping_alive_ = false;             // send_keepalive() is running
  // cfg.batch packet slots for the batch, then one for send_keepalive().
  common::AlignedBuffer arena_;
  std::vector<std::span<const uint8_t>> pending_;
  size_t pending_bytes_ = 0;
  size_t pending_sent_ = 0;  // of pending_, those already sent (flush() in progress)
  uint64_t seq_ = 0;
  uint64_t data_index_ = 0;
  uint32_t files_announced_ = 0;
  FileProgress current_;
  // A file this lane is through with before its items are (aborted early as doomed, or failed
  // while down): the rest of its items are dropped. Items of one file come together.
  std::optional<uint32_t> dropped_;
  common::Clock::time_point last_list_{};
  common::Clock::time_point last_info_{};
  bool info_sent_ = false;
  SendTotals totals_;
  SendStatus* status_ = nullptr;
  HistoryFeed* history_ = nullptr;
};

}  // namespace ddft::sender
