#include "sender/transmit/pacer.hpp"

#include <algorithm>

namespace ddft::sender {

unsigned sleep_alg_pause_s(uint64_t file_size) {
  constexpr uint64_t kMiB = 1024 * 1024;
  constexpr uint64_t kGiB = 1024 * kMiB;
  if (file_size < 100 * kMiB) return 0;
  return static_cast<unsigned>(std::min<uint64_t>(20, 3 + file_size / kGiB));
}

Pacer::Pacer(common::Clock& clock, const PacingConfig& cfg)
    : clock_(clock), cfg_(cfg), limiter_(clock, cfg.rate_bytes_per_s) {}

size_t Pacer::packets_before_sleep() const {
  if (cfg_.intra_pkt_interval == 0 || cfg_.intra_pkt_delay_ms == 0) {
    return std::numeric_limits<size_t>::max();
  }
  return cfg_.intra_pkt_interval - packets_since_sleep_;
}

void Pacer::before_send(size_t bytes) { limiter_.acquire(bytes); }

void Pacer::after_send(size_t packets, size_t bytes) {
  if (cfg_.intra_pkt_interval > 0 && cfg_.intra_pkt_delay_ms > 0) {
    packets_since_sleep_ += packets;
    // The caller never sends past the interval (packets_before_sleep), so this is exact.
    if (packets_since_sleep_ >= cfg_.intra_pkt_interval) {
      packets_since_sleep_ = 0;
      sleep_ms(cfg_.intra_pkt_delay_ms, &intra_slept_);
    }
  }
  if (cfg_.fs_interval_mb > 0 && cfg_.fs_delay_ms > 0) {
    const uint64_t interval = uint64_t{cfg_.fs_interval_mb} * 1024 * 1024;
    bytes_since_forced_ += bytes;
    while (bytes_since_forced_ >= interval) {
      bytes_since_forced_ -= interval;
      sleep_ms(cfg_.fs_delay_ms, &forced_slept_);
    }
  }
}

unsigned Pacer::pause_for(uint64_t file_size) const {
  return cfg_.sleep_alg ? sleep_alg_pause_s(file_size) : 0;
}

void Pacer::pause(unsigned seconds) {
  if (seconds > 0) sleep_until(clock_.now() + std::chrono::seconds(seconds));
}

void Pacer::after_file() {
  if (cfg_.eof_delay_ms > 0)
    sleep_until(clock_.now() + std::chrono::milliseconds(cfg_.eof_delay_ms));
}

void Pacer::sleep_ms(unsigned ms, std::chrono::nanoseconds* total) {
  const auto start = clock_.now();
  sleep_until(start + std::chrono::milliseconds(ms));
  *total += clock_.now() - start;
}

void Pacer::sleep_until(common::Clock::time_point t) {
  // In slices, so that a stop request ends a long DFTS sleep within 100 ms, and the keepalive
  // is called when it asked to be.
  while (!stop_.stop_requested()) {
    auto now = clock_.now();
    if (now >= t) return;
    auto wake = std::min(t, now + std::chrono::milliseconds(100));
    if (keepalive_) {
      const auto next = keepalive_(now);
      now = clock_.now();
      if (next > now) wake = std::min(wake, next);
    }
    clock_.sleep_until(wake);
  }
}

}  // namespace ddft::sender
