#include "receiver/link/ingest.hpp"

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
      const uint8_t type = common::peek_type(p);
      // kData and kZData both start with the file id.
      if ((type == static_cast<uint8_t>(common::PacketType::kData) ||
           type == static_cast<uint8_t>(common::PacketType::kZData)) &&
          !encrypted) {
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

Ingest::Ingest(common::DatagramSource& source, ByteRing& ring, size_t batch, size_t max_packet)
    : source_(source),
      ring_(ring),
      bundles_(source.max_bundle() > 0),
      max_len_(bundles_ ? source.max_bundle() : max_packet),
      batch_(bundles_ ? std::min(batch, kBundleBatch) : batch),
      scratch_(batch_ * max_len_) {}

void Ingest::run(std::stop_token stop) {
  using namespace std::chrono;
  std::vector<std::span<uint8_t>> bufs(batch_);
  std::vector<size_t> lens(batch_);
  std::vector<size_t> segs(batch_);
  auto last_error_log = steady_clock::now() - seconds(10);
  try {
    while (!stop.stop_requested()) {
      counters_.passes.fetch_add(1, std::memory_order_relaxed);
      const size_t room = ring_.reserve(batch_, max_len_);
      const bool full = room == 0;
      const size_t n = full ? batch_ : room;
      for (size_t i = 0; i < n; ++i) {
        bufs[i] =
            full ? std::span<uint8_t>(scratch_.data() + i * max_len_, max_len_) : ring_.buffer(i);
      }
      size_t got = 0;
      const auto ec =
          source_.receive_bundles(std::span(bufs.data(), n), std::span(lens.data(), n),
                                  std::span(segs.data(), n), &got, milliseconds(full ? 1 : 50));
      if (ec) {
        if (steady_clock::now() - last_error_log > seconds(1)) {
          spdlog::error("Error: receive failed: {}", ec.message());
          last_error_log = steady_clock::now();
        }
        std::this_thread::sleep_for(milliseconds(1));
        continue;
      }
      if (got == 0) continue;
      count(std::span(bufs.data(), got), std::span(lens.data(), got), std::span(segs.data(), got));
      if (full) {
        drop(std::span(bufs.data(), got), std::span(lens.data(), got), std::span(segs.data(), got));
        continue;
      }
      ring_.commit(got, lens.data(), segs.data());
      const uint64_t used = ring_.used();
      if (used > counters_.ring_high_water.load(std::memory_order_relaxed)) {
        counters_.ring_high_water.store(used, std::memory_order_relaxed);
      }
    }
  } catch (const std::exception& e) {
    spdlog::error("Error: receive thread stopped: {}", e.what());
  }
  ring_.wake();
}

void Ingest::count(std::span<const std::span<uint8_t>> bufs, std::span<const size_t> lens,
                   std::span<const size_t> segs) {
  uint64_t datagrams = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < bufs.size(); ++i) {
    bytes += lens[i];
    datagrams += segs[i] == 0 || lens[i] > bufs[i].size() ? 1 : (lens[i] + segs[i] - 1) / segs[i];
  }
  counters_.datagrams.fetch_add(datagrams, std::memory_order_relaxed);
  counters_.bytes.fetch_add(bytes, std::memory_order_relaxed);
  counters_.last_datagram_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count(),
                                   std::memory_order_relaxed);
}

void Ingest::drop(std::span<const std::span<uint8_t>> bufs, std::span<const size_t> lens,
                  std::span<const size_t> segs) {
  using namespace std::chrono;
  // The ledger takes datagrams one by one: bundles are cut into theirs.
  dropped_.clear();
  dropped_lens_.clear();
  for (size_t i = 0; i < bufs.size(); ++i) {
    common::for_each_datagram(bufs[i], lens[i], segs[i],
                              [&](std::span<const uint8_t> d, size_t real_len) {
                                dropped_.emplace_back(const_cast<uint8_t*>(d.data()), d.size());
                                dropped_lens_.push_back(real_len);
                              });
  }
  const size_t kept = drops_.add(dropped_, dropped_lens_, ring_.produced());
  const uint64_t lost = dropped_.size() - kept;
  const uint64_t total = counters_.ring_full_drops.fetch_add(lost) + lost;
  if (steady_clock::now() - last_drop_log_ > seconds(1)) {
    spdlog::warn(
        "Warn: receive buffer full (the disk is not keeping up): {} packet(s) "
        "dropped so far ({} since last report)",
        total, total - drops_logged_);
    drops_logged_ = total;
    last_drop_log_ = steady_clock::now();
  }
}

}  // namespace ddft::receiver
