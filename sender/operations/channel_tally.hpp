// What each channel of a session sent: files sent and failed and their bytes, for the session's
// last lines (one per channel) and --metrics (the ddft_send_channel_* families, label `channel`).
//
// A SendObserver: its callbacks come from the transmit threads one at a time; the counts are
// relaxed atomics any thread may read. The channels are fixed at construction. Nothing throws.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.hpp"
#include "sender/events.hpp"

namespace ddft::sender {

class ChannelTally final : public SendObserver {
 public:
  explicit ChannelTally(std::vector<std::string> channels);
  void file_sent(const FileMeta& f, const common::Digest& d) override;
  void file_failed(const FileMeta& f, const std::string& reason) override;
  // `n` files of `channel` failed before the session: they could not be listed or read.
  void unread(const std::string& channel, uint64_t n);

  // The ddft_send_channel_* families on `reg`; this tally must outlive it.
  void add_metrics(common::MetricsRegistry& reg) const;
  // One line per channel: "Info: channel NAME: N file(s) sent, M failed, B bytes".
  void log_summary() const;

  uint64_t files_sent(size_t channel) const { return counts_[channel].sent.load(); }
  uint64_t files_failed(size_t channel) const { return counts_[channel].failed.load(); }
  uint64_t bytes(size_t channel) const { return counts_[channel].bytes.load(); }

 private:
  struct Counts {
    std::atomic<uint64_t> sent{0};
    std::atomic<uint64_t> failed{0};
    std::atomic<uint64_t> bytes{0};  // of the files sent, each counted once
  };
  // The index of `channel`, or nothing for a file of no channel of the tally's.
  Counts* counts_of(const std::string& channel);

  std::vector<std::string> channels_;
  std::unique_ptr<Counts[]> counts_;
};

}  // namespace ddft::sender
