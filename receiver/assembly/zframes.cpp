#include "receiver/assembly/zframes.hpp"

#include <fmt/format.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ddft::receiver {

ZFrames::ZFrames(size_t budget) : budget_(std::max(budget, common::kMaxZBlockSize)) {
  dctx_ = ZSTD_createDCtx();
  if (dctx_ == nullptr) throw std::bad_alloc();
  // A block is at most kMaxZBlockSize: a frame asking for a larger window is not ours.
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, 23);
}

ZFrames::~ZFrames() { ZSTD_freeDCtx(dctx_); }

void ZFrames::erase(Iter it) {
  held_ -= it->second.bytes.size() + kFrameOverhead;
  by_birth_.erase(it->second.born);
  frames_.erase(it);
}

void ZFrames::make_room(size_t need) {
  while (held_ + need > budget_ && !by_birth_.empty()) {
    erase(frames_.find(by_birth_.begin()->second));
    ++counters_.frames_evicted;
  }
}

ZFrames::Result ZFrames::add(uint64_t session, uint32_t file, const common::ZDataHeader& z,
                             std::span<const uint8_t> piece, size_t piece_size, bool rebuilt) {
  const Key key{session, file, z.offset};
  auto it = frames_.find(key);
  if (it == frames_.end()) {
    if (z.frame_off == 0 && piece.size() == z.frame_len) {
      // A frame of one piece: whole at once, nothing to hold (and nothing to drop for it).
      Result r = decompress(piece, z.raw_len, z.offset);
      if (r.status == Status::kComplete) r.rebuilt = rebuilt ? 1 : 0;
      return r;
    }
    make_room(z.frame_len + kFrameOverhead);
    Frame f;
    f.raw_len = z.raw_len;
    f.bytes.resize(z.frame_len);
    f.missing = (z.frame_len + piece_size - 1) / piece_size;
    f.have.assign(f.missing, false);
    f.born = births_++;
    it = frames_.emplace(key, std::move(f)).first;
    by_birth_.emplace(it->second.born, key);
    held_ += z.frame_len + kFrameOverhead;
  }
  Frame& f = it->second;
  if (f.raw_len != z.raw_len || f.bytes.size() != z.frame_len) {
    return {Status::kMismatch, {}, {}, 0};
  }
  const size_t index = z.frame_off / piece_size;
  if (f.have[index]) return {Status::kDuplicate, {}, {}, 0};
  f.have[index] = true;
  f.rebuilt += rebuilt ? 1 : 0;
  std::memcpy(f.bytes.data() + z.frame_off, piece.data(), piece.size());
  if (--f.missing > 0) return {Status::kPending, {}, {}, 0};
  Result r = decompress(f.bytes, f.raw_len, z.offset);
  if (r.status == Status::kComplete) r.rebuilt = f.rebuilt;
  erase(it);
  return r;
}

ZFrames::Result ZFrames::decompress(std::span<const uint8_t> frame, uint32_t raw_len,
                                    uint64_t offset) {
  const auto bad = [&](const std::string& why) {
    ++counters_.frames_bad;
    return Result{
        Status::kBad,
        {},
        fmt::format("the compressed block at offset {} ({} bytes) {}", offset, raw_len, why),
        0};
  };
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) return bad("is not a zstd frame");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != raw_len) {
    return bad(fmt::format("claims to hold {} bytes: refused unexpanded", declared));
  }
  if (out_.size() < common::kMaxZBlockSize) out_.resize(common::kMaxZBlockSize);
  // The output is capped at the block's size: a frame that expands further stops there.
  const size_t n = ZSTD_decompressDCtx(dctx_, out_.data(), raw_len, frame.data(), frame.size());
  if (ZSTD_isError(n)) {
    return bad(ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall
                   ? std::string("expands past its size: refused")
                   : fmt::format("does not decompress: {}", ZSTD_getErrorName(n)));
  }
  if (n != raw_len) return bad(fmt::format("decompresses to {} bytes only", n));
  ++counters_.frames_done;
  counters_.frame_bytes += frame.size();
  counters_.raw_bytes += n;
  return {Status::kComplete, std::span<const uint8_t>(out_.data(), n), {}, 0};
}

void ZFrames::drop_file(uint64_t session, uint32_t file) {
  auto it = frames_.lower_bound({session, file, 0});
  while (it != frames_.end() && std::get<0>(it->first) == session &&
         std::get<1>(it->first) == file) {
    erase(it++);
  }
}

void ZFrames::clear() {
  frames_.clear();
  by_birth_.clear();
  held_ = 0;
}

}  // namespace ddft::receiver
