// FileTable's data path: kData packets, and kZData pieces gathered into compressed blocks and
// taken, once decompressed, as the data packets of their chunks.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "receiver/assembly/file_table.hpp"

namespace ddft::receiver {
using common::DecodeStatus;
using common::Packet;

File* FileTable::receiving(uint32_t id) {
  File* f = find(id);
  if (f != nullptr && f->state == FileState::kReceiving) return f;
  // A filtered file's packets are expected: counted apart from those of unknown files, which
  // point at trouble.
  if (f == nullptr && filtered_ids_.contains(id)) {
    ++counters_.filtered_packets;
  } else {
    ++counters_.unknown_file;
  }
  return nullptr;
}

void FileTable::handle_data(const Packet& p, bool rebuilt) {
  common::DataHeader d;
  std::span<const uint8_t> data;
  if (common::decode_data(p.payload, &d, &data) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = receiving(d.file_id);
  if (f == nullptr) return;
  const uint64_t idx = d.offset / f->chunk_size;
  const uint64_t expect_len =
      idx < f->chunks_total ? std::min<uint64_t>(f->chunk_size, f->size - d.offset) : 0;
  if (d.offset % f->chunk_size != 0 || idx >= f->chunks_total || data.size() != expect_len) {
    ++counters_.bad_data;
    return;
  }
  f->last_packet = clock_.now();
  if (f->has_chunk(idx)) {
    ++counters_.duplicates;
    return;
  }
  if (!store_chunk(f, idx, data, d.copy)) return;
  if (rebuilt) {
    ++f->repairs.fec_rebuilt;
    ++counters_.fec_rebuilt_used;
  }
  if (f->end_seen && f->chunks_received == f->chunks_total) advance(*f);
}

bool FileTable::store_chunk(File*& f, uint64_t idx, std::span<const uint8_t> data, uint8_t copy) {
  if (f->bytes_received == 0) f->first_data = f->last_packet;
  // A chunk may straddle two write blocks: copy each piece into its block.
  const size_t block_size = blocks_.block_size();
  uint64_t off = idx * f->chunk_size;
  size_t pos = 0;
  while (pos < data.size()) {
    const uint64_t bidx = off / block_size;
    const size_t in_block = static_cast<size_t>(off % block_size);
    const size_t take = std::min(data.size() - pos, block_size - in_block);
    Block* b = get_block(f, bidx);
    if (b == nullptr) return false;  // the file failed while room was being made
    const bool full = FileBlocks::fill(*b, in_block, data.subspan(pos, take));
    pos += take;
    off += take;
    if (full && !f->evicted.count(bidx)) blocks_.on_filled(*f, *b);
  }
  f->set_chunk(idx);
  ++f->chunks_received;
  f->last_copy = copy;
  if (copy > 0) {  // the first copy missed it (else this one would have been a duplicate)
    ++f->repairs.repeat_filled;
    ++counters_.repeat_filled;
  }
  f->bytes_received += data.size();
  // The clock is read only when a line is due (not once a packet).
  if (f->bytes_received >= f->next_report) {
    progress_.report(*f, clock_.now(), cfg_.report_mb * 1024 * 1024);
  }
  return true;
}

// Whether a kZData piece fits file `f`: its block starts on a chunk, ends on one or at the file's
// end, and the piece sits where the file's piece size puts it.
bool FileTable::zdata_fits(const File& f, const common::ZDataHeader& z, size_t piece_len) const {
  const uint64_t piece = common::zdata_piece_size(f.chunk_size);
  // Written so that nothing wraps, whatever the announce claimed.
  return z.offset % f.chunk_size == 0 && z.offset < f.size && z.raw_len <= f.size - z.offset &&
         (z.raw_len % f.chunk_size == 0 || z.raw_len == f.size - z.offset) &&
         z.frame_off % piece == 0 &&
         piece_len == std::min<uint64_t>(piece, z.frame_len - z.frame_off);
}

void FileTable::handle_zdata(const Packet& p, bool rebuilt) {
  common::ZDataHeader z;
  std::span<const uint8_t> piece;
  if (common::decode_zdata(p.payload, &z, &piece) != DecodeStatus::kOk) {
    count_bad_payload(counters_);
    return;
  }
  File* f = receiving(z.file_id);
  if (f == nullptr) return;
  if (!zdata_fits(*f, z, piece.size())) {
    ++counters_.bad_data;
    return;
  }
  f->last_packet = clock_.now();
  const uint64_t first = z.offset / f->chunk_size;
  const uint64_t chunks = (z.raw_len + f->chunk_size - 1) / f->chunk_size;
  uint64_t have = 0;
  while (have < chunks && f->has_chunk(first + have)) ++have;
  if (have == chunks) {  // the block came whole already (an earlier copy)
    ++counters_.duplicates;
    return;
  }
  const ZFrames::Result r =
      zframes_.add(session_, f->id, z, piece, common::zdata_piece_size(f->chunk_size), rebuilt);
  publish_zframe_counters();
  switch (r.status) {
    case ZFrames::Status::kPending:
      return;
    case ZFrames::Status::kDuplicate:
      ++counters_.duplicates;
      return;
    case ZFrames::Status::kMismatch:
      ++counters_.bad_data;
      return;
    case ZFrames::Status::kBad:
      fail(*f, r.error);
      return;
    case ZFrames::Status::kComplete:
      break;
  }
  for (uint64_t i = 0; i < chunks; ++i) {
    if (f->has_chunk(first + i)) continue;
    const size_t at = static_cast<size_t>(i * f->chunk_size);
    const size_t len = std::min<size_t>(f->chunk_size, r.raw.size() - at);
    if (!store_chunk(f, first + i, r.raw.subspan(at, len), z.copy)) return;
  }
  // The block's rebuilt pieces went into the file now (a piece of a block never completed, or
  // dropped for room, went into nothing).
  f->repairs.fec_rebuilt += r.rebuilt;
  counters_.fec_rebuilt_used += r.rebuilt;
  if (f->end_seen && f->chunks_received == f->chunks_total) advance(*f);
}

void FileTable::publish_zframe_counters() {
  const ZFrames::Counters& z = zframes_.counters();
  // Dropped unfinished blocks: the first, then each time the count doubles (a bounded log).
  if (z.frames_evicted > counters_.zblocks_evicted &&
      (z.frames_evicted & (z.frames_evicted - 1)) == 0) {
    spdlog::warn(
        "Warn: the compressed-block buffer (--compress-buffer-mb {}) is full: {} unfinished "
        "block(s) dropped so far, each missing unless a later copy brings it whole; on a lossy "
        "link use --fec, or a larger --compress-buffer-mb",
        cfg_.compress_buffer_mb, z.frames_evicted);
  }
  counters_.zblocks_done = z.frames_done;
  counters_.zblocks_bad = z.frames_bad;
  counters_.zblocks_evicted = z.frames_evicted;
  counters_.zframe_bytes = z.frame_bytes;
  counters_.zraw_bytes = z.raw_bytes;
}

}  // namespace ddft::receiver
