// Transmit stage: turns work items into datagrams, paces them and sends them in batches.
//
// Besides each file's announce, data and end, it sends mid-file repeated announces (kFlagRepeat,
// once after every R bytes of a file's data, R = repeat_announce_interval()) and the session's
// file list (kFileList, common/protocol.hpp): the files finished or aborted on the wire since the
// previous list every kListInterval or kListBatch files, and at the end of the session the
// complete list (or, past kCompleteListMax files or in hot-folder mode, the rest).
#pragma once

#include <chrono>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/bounded_queue.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/events.hpp"
#include "sender/fec_encoder.hpp"
#include "sender/pacer.hpp"
#include "sender/send_status.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

// The file list's cadence: a list of the files finished since the previous list goes out when
// that list (or the session's start) is this long ago, or when this many files are waiting,
// whichever comes first. Checked after every work item, between files and, while the queue is
// empty, once a heartbeat interval (so an idle hot folder's list waits at most that longer).
inline constexpr std::chrono::seconds kListInterval{5};
inline constexpr size_t kListBatch = 256;
// A session that finished at most this many files ends with the complete list (kListComplete);
// a longer one (and a hot folder, which runs for months) ends with the files since the last list,
// so that the transmitter keeps no more than this many entries.
inline constexpr uint64_t kCompleteListMax = 100'000;

// Bytes of a file's data (per copy) between two repeated announces, for an announce datagram of
// `announce_bytes` bytes on the wire: max(1 MiB, 1024 x announce_bytes), so that the repeats
// cost at most 1/1024 of the data.
uint64_t repeat_announce_interval(size_t announce_bytes);

class Transmitter {
 public:
  // All references must outlive run().
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
              SendObserver& observer);
  // Runs on the transmit thread until the queue is closed and drained, then sends the last file
  // list and the final heartbeat. On stop, remaining data is skipped and the file in progress is
  // aborted on the wire. With cfg.watch_dir set (a hot folder) the session never ends with a
  // complete list, only with the files since the last one.
  void run(std::stop_token stop);
  const SendTotals& totals() const { return totals_; }
  // Also publishes the totals into `status` as they change (null: not). Call before run().
  void set_status(SendStatus* status);

 private:
  struct FileProgress {
    std::shared_ptr<const FileMeta> meta;
    common::Clock::time_point started{};
    uint64_t sent = 0;          // file bytes packetised so far (this copy)
    uint64_t all_copies = 0;    // the same over every copy (--repeat)
    uint64_t next_report = 0;   // REPORT_OPTION V
    uint8_t copy = 0;           // --repeat: the copy being sent
    uint64_t repeat_every = 0;  // R: file bytes between repeated announces
    uint64_t next_repeat = 0;   // the copy's next repeated announce after this many bytes
  };
  // A file of the session's list (kFileList): finished or aborted on the wire.
  struct ListedFile {
    uint32_t file_id = 0;
    uint64_t size = 0;
    bool aborted = false;
    common::Digest digest{};  // what its end packet carried; none when aborted
    std::string path;
  };

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
  void send_control(const std::function<size_t(const common::Header&, std::span<uint8_t>)>& enc);
  void send_block(const WorkItem& item);
  void send_heartbeat(bool final);
  void begin_file(const WorkItem& item);
  // The announce of `meta` as its first copy sends it, but for pause_s (0).
  common::Announce announce_of(const FileMeta& meta) const;
  // The repeated announce (kFlagRepeat) of the file being sent, once.
  void send_repeat_announce();
  void end_file(const WorkItem& item);
  void abort_file(const std::shared_ptr<const FileMeta>& meta, const std::string& reason);
  // A file finished (digest sent) or aborted on the wire: it goes into the next list.
  void add_to_list(const FileMeta& meta, bool aborted, const common::Digest& digest);
  // Sends the files since the last list when kListBatch of them wait or kListInterval passed.
  void send_list_if_due();
  // Sends listed_[from..] as one list (split over datagrams, each control_repeat times).
  void send_list(size_t from, uint16_t flags);
  // At the end of the session: the complete list when it may be, else the files since the last.
  void send_last_list();

  const SenderConfig& cfg_;
  uint64_t session_id_;
  common::DatagramSink& sink_;
  common::Clock& clock_;
  BufferPool& pool_;
  common::BoundedQueue<WorkItem>& in_;
  SendObserver& observer_;
  Pacer pacer_;
  size_t chunk_size_;   // data bytes per data packet
  size_t source_size_;  // longest datagram but parity (the packet size less the FEC room)
  std::unique_ptr<FecEncoder> fec_;
  std::unique_ptr<common::Sealer> sealer_;  // --key-file
  common::Clock::time_point last_heartbeat_{};
  common::AlignedBuffer arena_;
  std::vector<std::span<const uint8_t>> pending_;
  size_t pending_bytes_ = 0;
  uint64_t seq_ = 0;
  uint64_t data_index_ = 0;
  uint32_t files_announced_ = 0;
  FileProgress current_;
  // The session's file list. listed_[list_from_..] are in no list yet; listed_[..list_from_] are
  // kept for the complete list only while keep_all_ (not a hot folder, at most kCompleteListMax
  // files so far).
  std::vector<ListedFile> listed_;
  size_t list_from_ = 0;
  uint64_t files_listed_ = 0;  // files of the session that went into listed_
  bool keep_all_ = true;
  common::Clock::time_point last_list_{};
  SendTotals totals_;
  SendStatus* status_ = nullptr;
};

}  // namespace ddft::sender
