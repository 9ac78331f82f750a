// Compressed blocks (kZData, sender --compress) being gathered. Each block's frame collects its
// pieces in a side buffer; once the last piece is in, the frame is decompressed, bounded to the
// block's stated size, and its bytes handed back for the file's ordinary data path (so the file's
// chunk bitmap, missing ranges and digest stay in the file's own bytes).
//
// Memory: at most `budget` bytes of frames are held; past it the oldest frame is dropped (its
// block then stays missing, as if its packets were lost) and counted. A frame's pieces may come
// from different copies (--repeat): a block compresses to the same frame in every copy.
//
// Writer thread only.
// It owns the frames it holds and one zstd context: the constructor throws std::bad_alloc when
// zstd cannot make one. A frame that does not decompress is kBad, never an exception.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/protocol.hpp"

namespace ddft::receiver {

class ZFrames {
 public:
  enum class Status {
    kPending,    // the piece is kept; the frame misses others
    kDuplicate,  // the frame had this piece already
    kMismatch,   // the piece disagrees with the frame gathered so far (sizes): dropped
    kComplete,   // the frame is whole and decompressed: Result::raw holds the block
    kBad,        // the frame is whole but does not decompress to raw_len bytes: Result::error
  };
  struct Result {
    Status status = Status::kPending;
    std::span<const uint8_t> raw;  // kComplete: raw_len bytes, valid until the next add()
    std::string error;             // kBad: why, one line
    uint32_t rebuilt = 0;          // kComplete: how many of the frame's pieces FEC rebuilt
  };
  struct Counters {
    uint64_t frames_done = 0;     // decompressed whole
    uint64_t frames_bad = 0;      // did not decompress to their stated size
    uint64_t frames_evicted = 0;  // dropped to stay within the budget
    uint64_t frame_bytes = 0;     // compressed bytes of the frames done
    uint64_t raw_bytes = 0;       // what they decompressed to
  };

  explicit ZFrames(size_t budget);
  ~ZFrames();
  ZFrames(const ZFrames&) = delete;
  ZFrames& operator=(const ZFrames&) = delete;

  // Adds one piece of file `file` of session `session`. `piece_size` is the file's
  // zdata_piece_size(): the caller has checked that z.frame_off is a multiple of it and that the
  // piece is as long as its place says. `rebuilt`: FEC made the piece (counted in the frame's
  // Result::rebuilt when it is taken).
  Result add(uint64_t session, uint32_t file, const common::ZDataHeader& z,
             std::span<const uint8_t> piece, size_t piece_size, bool rebuilt = false);
  // Drops what is held of one file (its life ended) or of everything.
  void drop_file(uint64_t session, uint32_t file);
  void clear();

  // What one held frame costs beyond its bytes (map node, piece bitmap), charged to the budget so
  // that a stream of tiny partial frames is bounded as well as a few large ones.
  static constexpr size_t kFrameOverhead = 256;

  // Bytes charged for the frames held: their lengths plus kFrameOverhead each.
  size_t held_bytes() const { return held_; }
  size_t frames() const { return frames_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  using Key = std::tuple<uint64_t, uint32_t, uint64_t>;  // session, file, block offset
  struct Frame {
    uint32_t raw_len = 0;
    std::vector<uint8_t> bytes;  // frame_len
    std::vector<bool> have;      // one per piece
    size_t missing = 0;
    uint32_t rebuilt = 0;  // pieces taken that FEC rebuilt
    uint64_t born = 0;     // for eviction, oldest first
  };
  using Iter = std::map<Key, Frame>::iterator;
  Result decompress(std::span<const uint8_t> frame, uint32_t raw_len, uint64_t offset);
  void make_room(size_t need);
  void erase(Iter it);

  size_t budget_;
  size_t held_ = 0;
  uint64_t births_ = 0;
  std::map<Key, Frame> frames_;
  std::map<uint64_t, Key> by_birth_;  // the frames held, oldest first (eviction order)
  std::vector<uint8_t> out_;          // the decompressed block, kMaxZBlockSize once used
  ZSTD_DCtx* dctx_ = nullptr;
  Counters counters_;
};

}  // namespace ddft::receiver
