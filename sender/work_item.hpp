// What the sender's reader stage hands its transmit stage: one WorkItem per file event or block,
// each block a slot handle into a common::BufferPool. Observers (sender/events.hpp) see files as
// FileMeta.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/buffer_pool.hpp"
#include "common/hash.hpp"

namespace ddft::sender {

// The pool the reader fills and the transmitter empties is the common one.
using common::BufferPool;

// One file being sent, as the reader found it. Shared (read-only) by every WorkItem of the file.
struct FileMeta {
  uint32_t file_id = 0;
  std::string rel_path;
  std::string src_path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t mode = 0644;
  uint64_t tag = 0;  // SourceFile::tag
};

// One unit of work from the reader to the transmitter. Blocks refer to a pool buffer by index;
// the transmitter gives the buffer back once its data is packetised. kSkip: a file that could not
// be opened (never announced); it reaches the transmitter only so that observers hear of it in
// order.
struct WorkItem {
  enum class Kind { kBegin, kBlock, kEnd, kAbort, kSkip };
  Kind kind = Kind::kBegin;
  std::shared_ptr<const FileMeta> meta;
  int buffer = -1;
  uint64_t offset = 0;
  size_t len = 0;
  common::Digest digest{};  // kEnd
  std::string reason{};     // kAbort, kSkip
  uint8_t copy = 0;         // --repeat: which copy of the file (kBegin, kBlock, kEnd)
};

}  // namespace ddft::sender
