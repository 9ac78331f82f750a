// The ddft_sender_* families: each sender's last status as the receiver took it (StatusBoard),
// labelled by sender. A sender killed or cut off stays (until the receiver restarts, or 64 others
// crowd it out), with its last status and how old it is; one whose session ended goes.
#include <memory>

#include "receiver/operations/metrics.hpp"

namespace ddft::receiver {
namespace {

constexpr auto kStatusGauge = common::MetricType::kGauge;
constexpr auto kStatusCounter = common::MetricType::kCounter;
using Views = std::vector<SenderStatusView>;
using ViewsPtr = std::shared_ptr<const Views>;

template <typename T>
double as_num(T v) {
  return static_cast<double>(v);
}

// One sample per sender: `value` of its view.
template <typename Value>
common::MetricsRegistry::ReadMany per_sender(ViewsPtr views, Value value) {
  return [views, value] {
    std::vector<common::MetricSample> out;
    for (const SenderStatusView& v : *views) out.push_back({{{"sender", v.sender}}, value(v)});
    return out;
  };
}

// A status field as a family of one sample per sender.
common::MetricsRegistry::ReadMany field(ViewsPtr views, uint64_t common::SenderStatus::*f) {
  return per_sender(std::move(views),
                    [f](const SenderStatusView& v) { return as_num(v.status.*f); });
}

// ddft_sender_fs_{free,size}_bytes{fs="watch"|"retention"}, for the file systems the sender has.
common::MetricsRegistry::ReadMany fs_family(ViewsPtr views, bool size) {
  return [views, size] {
    std::vector<common::MetricSample> out;
    for (const SenderStatusView& v : *views) {
      const common::SenderStatus& s = v.status;
      if (s.watch_size > 0) {
        out.push_back(
            {{{"sender", v.sender}, {"fs", "watch"}}, as_num(size ? s.watch_size : s.watch_free)});
      }
      if (s.retention_size > 0) {
        out.push_back({{{"sender", v.sender}, {"fs", "retention"}},
                       as_num(size ? s.retention_size : s.retention_free)});
      }
    }
    return out;
  };
}

// ddft_sender_channel_queued_{files,bytes}{channel}.
common::MetricsRegistry::ReadMany channel_family(ViewsPtr views, bool bytes) {
  return [views, bytes] {
    std::vector<common::MetricSample> out;
    for (const SenderStatusView& v : *views) {
      for (const common::SenderStatusChannel& c : v.status.channels) {
        out.push_back({{{"sender", v.sender}, {"channel", c.name}},
                       as_num(bytes ? c.queued_bytes : c.queued_files)});
      }
    }
    return out;
  };
}

}  // namespace

void add_sender_status_metrics(common::MetricsRegistry& reg, const Receiver& rx) {
  auto views = std::make_shared<Views>();
  reg.on_scrape([views, &rx] { *views = rx.status_board().snapshot(); });
  const ViewsPtr v = views;
  using S = common::SenderStatus;
  reg.add_family(kStatusGauge, "ddft_sender_status_info",
                 "Each sender whose status came with its kSenderInfo, with its version; always 1",
                 [v] {
                   std::vector<common::MetricSample> out;
                   for (const SenderStatusView& s : *v) {
                     out.push_back({{{"sender", s.sender}, {"version", s.status.version}}, 1});
                   }
                   return out;
                 });
  reg.add_family(kStatusGauge, "ddft_sender_status_time_seconds",
                 "When the receiver took the sender's last status (Unix time)",
                 per_sender(v, [](const SenderStatusView& s) {
                   return static_cast<double>(s.received_wall_ns) / 1e9;
                 }));
  reg.add_family(
      kStatusGauge, "ddft_sender_status_interval_seconds",
      "How often the sender sends its status while nothing that matters changes",
      per_sender(v, [](const SenderStatusView& s) { return as_num(s.status.interval_s); }));
  reg.add_family(kStatusGauge, "ddft_sender_queued_files",
                 "Files waiting on the low side to be sent (a hot folder's, or a list's rest)",
                 field(v, &S::queued_files));
  reg.add_family(kStatusGauge, "ddft_sender_queued_bytes", "The bytes of the files waiting",
                 field(v, &S::queued_bytes));
  reg.add_family(kStatusGauge, "ddft_sender_channel_queued_files",
                 "Files waiting on the low side, by the sender's channel",
                 channel_family(v, false));
  reg.add_family(kStatusGauge, "ddft_sender_channel_queued_bytes",
                 "The bytes of the files waiting, by the sender's channel",
                 channel_family(v, true));
  reg.add_family(
      kStatusGauge, "ddft_sender_oldest_waiting_seconds",
      "How long the oldest file waiting on the low side has waited (0: none waits)",
      per_sender(v, [](const SenderStatusView& s) { return as_num(s.status.oldest_wait_s); }));
  reg.add_family(kStatusCounter, "ddft_sender_read_failures_total",
                 "Files the sender could not read (open or read error), since it started",
                 field(v, &S::read_failures));
  reg.add_family(kStatusCounter, "ddft_sender_files_refused_total",
                 "Files the sender left out (filters, reserved names, not regular files, links, "
                 "paths too long), since it started",
                 field(v, &S::files_refused));
  reg.add_family(kStatusGauge, "ddft_sender_retention_bytes",
                 "What the sender's retention folder (--sent-dir, pruned) holds",
                 field(v, &S::retention_bytes));
  reg.add_family(kStatusGauge, "ddft_sender_retention_limit_bytes",
                 "The sender's --sent-keep-gb in bytes; 0: no size limit",
                 field(v, &S::retention_limit));
  reg.add_family(kStatusGauge, "ddft_sender_fs_free_bytes",
                 "Free bytes of the sender's file systems: fs=watch (its hot folder's), "
                 "fs=retention (its --sent-dir's)",
                 fs_family(v, false));
  reg.add_family(kStatusGauge, "ddft_sender_fs_size_bytes", "The size of those file systems",
                 fs_family(v, true));
  reg.add_family(kStatusGauge, "ddft_sender_lanes", "The lanes of the sender's session",
                 per_sender(v, [](const SenderStatusView& s) { return as_num(s.lanes); }));
  reg.add_family(kStatusGauge, "ddft_sender_lanes_up", "Of them, the lanes whose links still send",
                 per_sender(v, [](const SenderStatusView& s) {
                   uint64_t n = 0;
                   for (size_t k = 0; k < s.lanes && k < 64; ++k) n += (s.status.lanes_up >> k) & 1;
                   return as_num(n);
                 }));
  reg.add_family(kStatusGauge, "ddft_sender_lane_up", "Each lane of the sender: 1 up, 0 down", [v] {
    std::vector<common::MetricSample> out;
    for (const SenderStatusView& s : *v) {
      for (size_t k = 0; k < s.lanes && k < 64; ++k) {
        out.push_back({{{"sender", s.sender}, {"lane", std::to_string(k)}},
                       as_num((s.status.lanes_up >> k) & 1)});
      }
    }
    return out;
  });
  reg.add_family(kStatusGauge, "ddft_sender_rate_limit_bytes_per_second",
                 "The sender's --rate over its lanes, in bytes per second; 0: unlimited",
                 field(v, &S::rate_limit));
}

}  // namespace ddft::receiver
