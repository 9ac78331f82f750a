#include "receiver/ingest.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/protocol.hpp"
#include "common/seal.hpp"

namespace ddft::receiver {

size_t DropLedger::add(std::span<const std::span<uint8_t>> datagrams, std::span<const size_t> lens,
                       uint64_t ring_position) {
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> batch;
  std::vector<Saved> lists;
  for (size_t i = 0; i < datagrams.size(); ++i) {
    const uint8_t* p = datagrams[i].data();
    const size_t len = std::min(lens[i], datagrams[i].size());
    // File lists name the files a full ring loses; heartbeats (one a second) carry the final
    // one that ends the session: both are kept rather than dropped.
    if (len >= common::kHeaderSize && lens[i] <= datagrams[i].size() &&
        (common::peek_type(p) == static_cast<uint8_t>(common::PacketType::kFileList) ||
         common::peek_type(p) == static_cast<uint8_t>(common::PacketType::kHeartbeat))) {
      lists.push_back({ring_position, std::vector<uint8_t>(p, p + len)});
      continue;
    }
    uint64_t session = 0;
    uint32_t file = 0;
    if (len >= common::data_datagram_size(0) && common::has_magic(p)) {
      session = common::peek_session_id(p);
      // An encrypted payload (--key-file) hides its file id.
      const bool encrypted = (common::peek_flags(p) & common::kFlagEncrypt) != 0;
      if (common::peek_type(p) == static_cast<uint8_t>(common::PacketType::kData) && !encrypted) {
        file = common::peek_data_file_id(p);
      }
    }
    ++batch[{session, file}];
  }
  size_t kept = 0;
  std::lock_guard lock(mu_);
  for (Saved& l : lists) {
    if (saved_bytes_ + l.bytes.size() > kSavedBytes) {
      lists_lost_.fetch_add(1, std::memory_order_relaxed);
      ++batch[{0, 0}];
      continue;
    }
    saved_bytes_ += l.bytes.size();
    saved_.push_back(std::move(l));
    any_saved_.store(true, std::memory_order_release);
    ++kept;
  }
  if (batch.empty()) return kept;
  for (const auto& [key, n] : batch) counts_[key] += n;
  any_.store(true, std::memory_order_release);
  return kept;
}

std::vector<DropLedger::Saved> DropLedger::take_saved() {
  std::vector<Saved> out;
  if (!any_saved_.load(std::memory_order_acquire)) return out;
  std::lock_guard lock(mu_);
  out.swap(saved_);
  saved_bytes_ = 0;
  any_saved_.store(false, std::memory_order_relaxed);
  return out;
}

std::vector<DropLedger::Entry> DropLedger::take() {
  std::vector<Entry> out;
  if (!any_.load(std::memory_order_acquire)) return out;
  std::lock_guard lock(mu_);
  for (const auto& [key, n] : counts_) out.push_back({key.first, key.second, n});
  counts_.clear();
  any_.store(false, std::memory_order_relaxed);
  return out;
}

Ingest::Ingest(common::DatagramSource& source, SlotRing& ring, size_t batch)
    : source_(source), ring_(ring), batch_(batch), scratch_(batch * ring.slot_size()) {}

void Ingest::run(std::stop_token stop) {
  using namespace std::chrono;
  std::vector<std::span<uint8_t>> bufs(batch_);
  std::vector<size_t> lens(batch_);
  uint64_t drops_logged = 0;
  auto last_drop_log = steady_clock::now() - seconds(10);
  auto last_error_log = steady_clock::now() - seconds(10);
  try {
    while (!stop.stop_requested()) {
      counters_.passes.fetch_add(1, std::memory_order_relaxed);
      const size_t free = ring_.free_slots();
      const bool full = free == 0;
      const size_t n = full ? batch_ : std::min(batch_, free);
      for (size_t i = 0; i < n; ++i) {
        bufs[i] =
            full ? std::span<uint8_t>(scratch_.data() + i * ring_.slot_size(), ring_.slot_size())
                 : ring_.free_slot(i);
      }
      size_t got = 0;
      const auto ec = source_.receive(std::span(bufs.data(), n), std::span(lens.data(), n), &got,
                                      milliseconds(full ? 1 : 50));
      if (ec) {
        if (steady_clock::now() - last_error_log > seconds(1)) {
          spdlog::error("Error: receive failed: {}", ec.message());
          last_error_log = steady_clock::now();
        }
        std::this_thread::sleep_for(milliseconds(1));
        continue;
      }
      if (got == 0) continue;
      counters_.datagrams.fetch_add(got, std::memory_order_relaxed);
      counters_.last_datagram_ns.store(
          duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count(),
          std::memory_order_relaxed);
      uint64_t bytes = 0;
      for (size_t i = 0; i < got; ++i) bytes += lens[i];
      counters_.bytes.fetch_add(bytes, std::memory_order_relaxed);
      if (full) {
        const size_t kept =
            drops_.add(std::span(bufs.data(), got), std::span(lens.data(), got), ring_.produced());
        const uint64_t total = counters_.ring_full_drops.fetch_add(got - kept) + got - kept;
        if (steady_clock::now() - last_drop_log > seconds(1)) {
          spdlog::warn(
              "Warn: receive buffer full (the disk is not keeping up): {} packet(s) "
              "dropped so far ({} since last report)",
              total, total - drops_logged);
          drops_logged = total;
          last_drop_log = steady_clock::now();
        }
        continue;
      }
      for (size_t i = 0; i < got; ++i) ring_.set_length(i, lens[i]);
      ring_.publish(got);
      const uint64_t used = ring_.capacity() - ring_.free_slots();
      if (used > counters_.ring_high_water.load(std::memory_order_relaxed)) {
        counters_.ring_high_water.store(used, std::memory_order_relaxed);
      }
    }
  } catch (const std::exception& e) {
    spdlog::error("Error: receive thread stopped: {}", e.what());
  }
  ring_.wake();
}

}  // namespace ddft::receiver
