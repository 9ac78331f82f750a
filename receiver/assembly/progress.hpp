// The DFTS progress line ("Rcvd: ... DR: ... FW: ...") and the waits it reports: DR, how long
// the writer thread waited for the ring, and FW, how long writes took from submission to
// completion, each over the interval since the last line and since start.
//
// Writer thread only (Receiver::publish() copies waits() from it).
// Nothing here throws.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/clock.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/counters.hpp"

namespace ddft::receiver {

class Progress {
 public:
  // A wait for the ring (DR).
  void note_read_wait(std::chrono::nanoseconds waited);
  // A write's latency from submission to completion (FW).
  void note_write(uint64_t latency_ns) {
    fw_.add(latency_ns);
    waits_.fw_all.add(latency_ns);
  }
  // Logs the Rcvd: line of `f` when it has received another `step` bytes since the last one
  // (at `now`), and starts a new interval of DR and FW.
  void report(File& f, common::Clock::time_point now, uint64_t step);
  const WaitStats& waits() const { return waits_; }

 private:
  IntervalStat dr_;
  IntervalStat fw_;
  WaitStats waits_;
};

}  // namespace ddft::receiver
