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
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/pacer.hpp"
#include "sender/pipeline.hpp"

namespace ddft::sender {

class Transmitter {
 public:
  // All references must outlive run().
  Transmitter(const SenderConfig& cfg, uint64_t session_id, common::DatagramSink& sink,
              common::Clock& clock, BufferPool& pool, common::BoundedQueue<WorkItem>& in);
  // Runs on the transmit thread until the queue is closed and drained, then sends the final
  // heartbeat. On stop, remaining data is skipped and the file in progress is aborted on the wire.
  void run(std::stop_token stop);
  const SendTotals& totals() const { return totals_; }

 private:
  struct FileProgress {
    std::shared_ptr<const FileMeta> meta;
    common::Clock::time_point started{};
    uint64_t sent = 0;         // file bytes packetised so far
    uint64_t next_report = 0;  // REPORT_OPTION V
  };

  std::span<uint8_t> next_slot();
  void flush();
  void send_all(std::span<const std::span<const uint8_t>> datagrams);
  common::Header next_header();
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
  Pacer pacer_;
  size_t chunk_size_;  // data bytes per data packet
  common::AlignedBuffer arena_;
  std::vector<std::span<const uint8_t>> pending_;
  size_t pending_bytes_ = 0;
  uint64_t seq_ = 0;
  uint64_t data_index_ = 0;
  uint32_t files_announced_ = 0;
  FileProgress current_;
  SendTotals totals_;
};

}  // namespace ddft::sender
