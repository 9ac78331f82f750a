#include "receiver/assembly/progress.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/log_format.hpp"

namespace ddft::receiver {

void Progress::note_read_wait(std::chrono::nanoseconds waited) {
  const auto ns = static_cast<uint64_t>(std::max<int64_t>(0, waited.count()));
  dr_.add(ns);
  waits_.dr_all.add(ns);
}

void Progress::report(File& f, common::Clock::time_point now, uint64_t step) {
  if (f.bytes_received < f.next_report) return;
  while (f.next_report <= f.bytes_received) f.next_report += step;
  const auto dur = now - f.first_data;
  spdlog::info("Rcvd: {} ({:.2f}%) Rate: {:.3f} (MB/s) Dur: {} DR: {} msec FW: {} msec",
               common::with_commas(f.bytes_received),
               100.0 * static_cast<double>(f.bytes_received) / static_cast<double>(f.size),
               common::mib_per_s(f.bytes_received, dur), common::format_hms(dur), dr_.format(),
               fw_.format());
  waits_.dr_last = dr_;
  waits_.fw_last = fw_;
  dr_ = {};
  fw_ = {};
}

}  // namespace ddft::receiver
