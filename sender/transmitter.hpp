// Transmit stage: turns work items into datagrams, paces them and sends them in batches.
#pragma once

#include <chrono>
#include <span>
#include <stop_token>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/bounded_queue.hpp"
#include "common/clock.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/fec_encoder.hpp"
#include "sender/pacer.hpp"
#include "sender/pipeline.hpp"

namespace ddft::sender {

class Transmitter {
 public:
  // All references must outlive run().
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in,
              SendObserver& observer);
  // Runs on the transmit thread until the queue is closed and drained, then sends the final
  // heartbeat. On stop, remaining data is skipped and the file in progress is aborted on the wire.
  void run(std::stop_token stop);
  const SendTotals& totals() const { return totals_; }
  // Also publishes the totals into `status` as they change (null: not). Call before run().
  void set_status(SendStatus* status);

 private:
  struct FileProgress {
    std::shared_ptr<const FileMeta> meta;
    common::Clock::time_point started{};
    uint64_t sent = 0;         // file bytes packetised so far (this copy)
    uint64_t all_copies = 0;   // the same over every copy (--repeat)
    uint64_t next_report = 0;  // REPORT_OPTION V
    uint8_t copy = 0;          // --repeat: the copy being sent
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
  void end_file(const WorkItem& item);
  void abort_file(const std::shared_ptr<const FileMeta>& meta, const std::string& reason);

  const SenderConfig& cfg_;
  uint64_t session_id_;
  common::DatagramSink& sink_;
  common::Clock& clock_;
  BufferPool& pool_;
  common::BoundedQueue<WorkItem>& in_;
  SendObserver& observer_;
  Pacer pacer_;
  size_t chunk_size_;  // data bytes per data packet
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
  SendTotals totals_;
  SendStatus* status_ = nullptr;
};

}  // namespace ddft::sender
