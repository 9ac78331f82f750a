// Transmitter: a block's data on the wire, as kData packets or, compressed (--compress), as the
// kZData pieces of its frame.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/log_format.hpp"
#include "sender/transmit/transmitter.hpp"

namespace ddft::sender {

void Transmitter::send_block(const WorkItem& item) {
  if (item.compressed) {
    send_frame(item);
    return;
  }
  // Reader blocks are whole multiples of the chunk size (but for a file's last block), so every
  // chunk lies inside one block and its offset is a multiple of the chunk size.
  const uint8_t* src = pool_.data(item.buffer);
  for (size_t pos = 0; pos < item.len; pos += chunk_size_) {
    const size_t len = std::min(chunk_size_, item.len - pos);
    auto slot = next_slot();
    std::memcpy(common::data_bytes_of(slot.data()), src + pos, len);
    common::DataHeader d;
    d.file_id = item.meta->file_id;
    d.copy = item.copy;
    d.offset = item.offset + pos;
    commit_data(slot, common::encode_data_in_place(next_header(), d, len, slot), d.offset);
    // After every R bytes this lane sent of the copy (a whole file's: its offset), and never
    // once the file's last data packet is out (its end follows): a receiver that joined
    // mid-file learns which file the data belongs to.
    repeat_announce_if_due(current_.sent + pos + len, d.offset + len, *item.meta);
  }
  block_sent(item, item.len);
}

// A compressed block: its frame in pieces of zdata_piece_size(chunk size), as kZData packets.
void Transmitter::send_frame(const WorkItem& item) {
  const uint8_t* frame = pool_.data(item.buffer);
  const size_t piece = common::zdata_piece_size(chunk_size_);
  common::ZDataHeader z;
  z.file_id = item.meta->file_id;
  z.copy = item.copy;
  z.offset = item.offset;
  z.raw_len = item.raw_len;
  z.frame_len = static_cast<uint32_t>(item.len);
  for (size_t pos = 0; pos < item.len; pos += piece) {
    const size_t len = std::min(piece, item.len - pos);
    auto slot = next_slot();
    std::memcpy(common::zdata_bytes_of(slot.data()), frame + pos, len);
    z.frame_off = static_cast<uint32_t>(pos);
    commit_data(slot, common::encode_zdata_in_place(next_header(), z, len, slot), item.offset);
  }
  repeat_announce_if_due(current_.sent + item.raw_len, item.offset + item.raw_len, *item.meta);
  block_sent(item, item.raw_len);
}

void Transmitter::commit_data(std::span<uint8_t> slot, size_t n, uint64_t offset) {
  const bool drop = static_cast<long long>(data_index_++) == cfg_.test_drop_data;
  if (drop) {
    spdlog::warn("Warn: test hook dropped the data packet at offset {} of {}", offset,
                 current_.meta->rel_path);
  }
  commit(slot, n, !drop);
}

void Transmitter::repeat_announce_if_due(uint64_t done, uint64_t data_end, const FileMeta& meta) {
  if (current_.repeat_every > 0 && done >= current_.next_repeat && data_end < meta.size) {
    send_repeat_announce();
    while (current_.next_repeat <= done) current_.next_repeat += current_.repeat_every;
  }
}

// A block's `raw` bytes of the file are out: totals, progress and the Progress: lines.
void Transmitter::block_sent(const WorkItem& item, size_t raw) {
  totals_.bytes += raw;
  current_.sent += raw;
  if (status_) {
    status_->bytes.fetch_add(raw, std::memory_order_relaxed);
    status_->file_bytes.store(current_.sent, std::memory_order_relaxed);
  }
  hub_.file_progress(*item.meta, raw);
  // A striped file's lane sees only its own stripes: the progress lines are a whole file's.
  if (cfg_.report == ReportOption::kVerbose && !current_.striped &&
      current_.sent >= current_.next_report && current_.sent < item.meta->size) {
    while (current_.next_report <= current_.sent) current_.next_report += cfg_.report_mb << 20;
    const auto elapsed = clock_.now() - current_.started;
    spdlog::info("Progress: {}, Sent: {} ({:.2f}%) Rate: {:.3f} (MB/s)", item.meta->rel_path,
                 common::with_commas(current_.sent),
                 100.0 * static_cast<double>(current_.sent) / static_cast<double>(item.meta->size),
                 common::mib_per_s(current_.sent, elapsed));
  }
}

}  // namespace ddft::sender
