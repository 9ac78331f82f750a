// Sender pacing. Two families of settings combine here:
//  - the product's own: --rate, through common::RateLimiter (a token bucket on absolute
//    deadlines, so sleep overshoot never accumulates into a slower average);
//  - Owl DFTS's, honoured exactly as seed 004 describes them: INTRA_PKT_INTERVAL/INTRA_PKT_DELAY
//    (sleep DELAY ms after every INTERVAL packet writes), -fsinterval/-fsdelay (sleep fsdelay ms
//    after every fsinterval MB), the sleep algorithm (a pause before a large file's data) and
//    EOF_DELAY (a wait after each file).
// Every sleep goes through a Clock, so all of it is tested against a fake clock. A keepalive
// (set_keepalive) is called during the DFTS sleeps, so that a long deliberate pause still sends
// heartbeats and the receiver never takes it for a dead link.
//
// One per lane, on its transmit thread; the clock is the caller's and must outlive it. It throws
// nothing of its own; what the keepalive throws passes through.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stop_token>

#include "common/clock.hpp"
#include "common/rate_limiter.hpp"

namespace ddft::sender {

struct PacingConfig {
  double rate_bytes_per_s = 0;      // --rate, 0 = unlimited
  unsigned intra_pkt_interval = 0;  // INTRA_PKT_INTERVAL: packets between sleeps, 0 = off
  unsigned intra_pkt_delay_ms = 0;  // INTRA_PKT_DELAY
  unsigned fs_interval_mb = 0;      // -fsinterval: MB (2^20 bytes) between forced sleeps, 0 = off
  unsigned fs_delay_ms = 0;         // -fsdelay
  bool sleep_alg = false;           // pause before the data of a large file
  unsigned eof_delay_ms = 0;        // EOF_DELAY
};

// The sleep algorithm's rule: files of at least 100 MiB pause 3 s (as seed 004's log shows for a
// 104,857,600-byte file), plus 1 s for every full GiB, at most 20 s. Smaller files: 0.
unsigned sleep_alg_pause_s(uint64_t file_size);

// Applies all pacing to the transmit thread. Not thread-safe; `clock` must outlive it.
class Pacer {
 public:
  Pacer(common::Clock& clock, const PacingConfig& cfg);

  // How many packets may go out before the next intra-packet sleep (for batching).
  size_t packets_before_sleep() const;
  // Call before writing `packets` datagrams of `bytes` in all: waits for the rate limit.
  void before_send(size_t bytes);
  // Call after they were written: takes the intra-packet and forced sleeps that are now due.
  void after_send(size_t packets, size_t bytes);
  // Seconds the sleep algorithm pauses before this file's data (0 when off or small).
  unsigned pause_for(uint64_t file_size) const;
  // Sleeps `seconds` (the sleep-algorithm pause, after the announce).
  void pause(unsigned seconds);
  // EOF_DELAY after a file's end.
  void after_file();

  // From now on every sleep ends early (within 100 ms) once `stop` is requested, so Ctrl-C never
  // waits out a 20 s sleep-algorithm pause or a long forced sleep.
  void set_stop(std::stop_token stop) { stop_ = std::move(stop); }

  // Called during every DFTS sleep (intra-packet, forced, the sleep algorithm's pause,
  // EOF_DELAY) on the sleeping thread, with the time now, at the start of the sleep and again
  // each time it asked for: it may send (a heartbeat) and returns when it next wants to be
  // called (a time not after `now` is not honoured: it is next called within 100 ms). The rate
  // limit's waits do not call it. Empty (the default): none.
  using Keepalive = std::function<common::Clock::time_point(common::Clock::time_point now)>;
  void set_keepalive(Keepalive keepalive) { keepalive_ = std::move(keepalive); }

  // Totals slept for each reason, for the session summary and the tests.
  std::chrono::nanoseconds intra_slept() const { return intra_slept_; }
  std::chrono::nanoseconds forced_slept() const { return forced_slept_; }

 private:
  void sleep_ms(unsigned ms, std::chrono::nanoseconds* total);
  void sleep_until(common::Clock::time_point t);

  common::Clock& clock_;
  PacingConfig cfg_;
  common::RateLimiter limiter_;
  uint64_t packets_since_sleep_ = 0;
  uint64_t bytes_since_forced_ = 0;
  std::chrono::nanoseconds intra_slept_{0};
  std::chrono::nanoseconds forced_slept_{0};
  std::stop_token stop_;
  Keepalive keepalive_;
};

}  // namespace ddft::sender
