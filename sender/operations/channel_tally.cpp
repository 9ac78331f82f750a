#include "sender/operations/channel_tally.hpp"

#include <spdlog/spdlog.h>

#include "common/log_format.hpp"
#include "sender/work_item.hpp"

namespace ddft::sender {

ChannelTally::ChannelTally(std::vector<std::string> channels)
    : channels_(std::move(channels)), counts_(std::make_unique<Counts[]>(channels_.size())) {}

ChannelTally::Counts* ChannelTally::counts_of(const std::string& channel) {
  for (size_t i = 0; i < channels_.size(); ++i) {
    if (channels_[i] == channel) return &counts_[i];
  }
  return nullptr;
}

void ChannelTally::file_sent(const FileMeta& f, const common::Digest& /*d*/) {
  if (Counts* c = counts_of(f.channel)) {
    c->sent.fetch_add(1, std::memory_order_relaxed);
    c->bytes.fetch_add(f.size, std::memory_order_relaxed);
  }
}

void ChannelTally::file_failed(const FileMeta& f, const std::string& /*reason*/) {
  if (Counts* c = counts_of(f.channel)) c->failed.fetch_add(1, std::memory_order_relaxed);
}

void ChannelTally::unread(const std::string& channel, uint64_t n) {
  if (Counts* c = counts_of(channel)) c->failed.fetch_add(n, std::memory_order_relaxed);
}

void ChannelTally::add_metrics(common::MetricsRegistry& reg) const {
  const auto family = [this](std::atomic<uint64_t> Counts::*field) {
    return [this, field] {
      std::vector<common::MetricSample> out;
      for (size_t i = 0; i < channels_.size(); ++i) {
        out.push_back({{{"channel", channels_[i]}},
                       static_cast<double>((counts_[i].*field).load(std::memory_order_relaxed))});
      }
      return out;
    };
  };
  constexpr auto kCounter = common::MetricType::kCounter;
  reg.add_family(kCounter, "ddft_send_channel_files_sent_total",
                 "Files of the channel sent whole with their end packet", family(&Counts::sent));
  reg.add_family(kCounter, "ddft_send_channel_files_failed_total",
                 "Files of the channel that could not be sent (unreadable, or aborted on the wire)",
                 family(&Counts::failed));
  reg.add_family(kCounter, "ddft_send_channel_bytes_total",
                 "Bytes of the channel's files sent whole (each file once, whatever --repeat)",
                 family(&Counts::bytes));
}

void ChannelTally::log_summary() const {
  for (size_t i = 0; i < channels_.size(); ++i) {
    spdlog::info("Info: channel {}: {} file(s) sent, {} failed, {} bytes", channels_[i],
                 files_sent(i), files_failed(i), common::with_commas(bytes(i)));
  }
}

}  // namespace ddft::sender
