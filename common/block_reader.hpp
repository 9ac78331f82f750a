// Reading one file front to back through the block IO engine: several blocks ahead, handed on in
// file order. The sender's reader stage reads every file with it, and dd_iotest --test read times
// it, so that the self-test's read figure is the sender's own.
//
// One thread calls read_file() at a time; the engine and the pool are the caller's and must
// outlive the reader. A block's buffer is the sink's once it takes it, else the reader gives it
// back: on every way out no read is in flight and no buffer is lost. A failed read is kFailed
// with a reason; only a broken engine throws (common/block_io.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>

#include "common/block_io.hpp"
#include "common/buffer_pool.hpp"

namespace ddft::common {

// What became of one read_file().
enum class ReadResult {
  kDone,     // every block was handed on
  kFailed,   // a read failed or the file shrank: the reason is in *why
  kStopped,  // the stop token was requested
  kRefused,  // the pool was closed, or the consumer refused a block
};

// Reads through `io` into buffers of `pool`'s share `share` (one block per buffer, buffer_size()
// bytes), as many
// blocks ahead as the engine has room for. `io` and `pool` must outlive the reader. Not
// thread-safe: one thread calls read_file() at a time.
class BlockReader {
 public:
  // Takes one block, in file order: the pool buffer `buf` holds `len` bytes of the file from
  // `offset`. Returns true when it took the buffer (it gives it back to the pool itself, now or
  // later), false to end the read: the buffer then stays with the reader, which gives it back.
  using BlockSink = std::function<bool(int buf, uint64_t offset, size_t len)>;

  BlockReader(BlockIo& io, BufferPool& pool, size_t share = 0)
      : io_(io), pool_(pool), share_(share) {}

  // Reads bytes [0, size) of the open descriptor `fd` and hands every block to `sink`. On every
  // way out, no read is left in flight and every buffer the reader held is back in the pool.
  // With kFailed, *why says why in a few words ("read error: ...", "file shrank while it was
  // being read"). `stop` is looked at before each round of reads.
  [[nodiscard]] ReadResult read_file(int fd, uint64_t size, const std::stop_token& stop,
                                     const BlockSink& sink, std::string* why);

 private:
  BlockIo& io_;
  BufferPool& pool_;
  size_t share_;
};

}  // namespace ddft::common
