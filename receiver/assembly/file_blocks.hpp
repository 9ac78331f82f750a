// A file's write blocks: filling them with its data, hashing them in file order, queuing their
// writes on the write engine and giving them back once written (and hashed). The hot path of
// the receiver runs here: FileTable::handle_data() → fill() → on_filled() → hash → submit.
//
// Writer thread only. It changes the File it is given (its block map, hash, pending I/O count)
// but never ends a file nor moves it on: the file table does, after these calls return.
// The blocks are the write engine's (the caller's), lent to a file while resident. It throws only
// what the engine's BlockIo throws when it breaks (common/block_io.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/block_io.hpp"
#include "receiver/assembly/file.hpp"
#include "receiver/delivery/write_engine.hpp"

namespace ddft::receiver {

class FileBlocks {
 public:
  // `engine` must outlive this.
  explicit FileBlocks(WriteEngine& engine) : engine_(engine) {}

  size_t block_size() const { return engine_.block_size(); }
  // Block `index` of `f`: the resident one, else a free one now resident; null when every
  // block is taken (the caller makes room and asks again).
  Block* find_or_take(File& f, uint64_t index);
  // Copies `data` into `b` at `in_block` and merges the range into b.ranges. True when the
  // block is now full.
  static bool fill(Block& b, size_t in_block, std::span<const uint8_t> data);
  // A block just became full: written (once the temporary file exists) and hashed in order.
  void on_filled(File& f, Block& b);
  // Gives up in-order hashing for `f` (it is then verified by reading it back).
  void drop_hash_stream(File& f);
  // Queues the writes of `b` (its temporary file must exist).
  void submit(File& f, Block& b);
  // Queues every resident block not submitted yet; with `full_only`, while the file still
  // receives, only the full ones.
  void submit_waiting(File& f, bool full_only);
  // The file failed: what it received is written (when its temporary file exists), and each
  // block is given back once written.
  void flush_for_failure(File& f);
  // Writes the resident partial blocks of `f` out early and takes them from its map (when
  // every block is held and none can be freed otherwise). Drops its hash stream first.
  void evict(File& f);
  // Gives every resident block of `f` back (no write of theirs may be pending).
  void release_all(File& f);
  // A write of a block completed: the counts go down and the block is given back when it can
  // be. Returns its file, which the caller moves on.
  File& on_write_done(const common::IoCompletion& c);

 private:
  void hash_in_order(File& f);
  void maybe_release(Block& b);
  void release(Block& b);

  WriteEngine& engine_;
};

}  // namespace ddft::receiver
