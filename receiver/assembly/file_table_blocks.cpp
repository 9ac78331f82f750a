// The file table's write blocks: taking one for a file's data, and making room when every block
// is taken.
#include <spdlog/spdlog.h>

#include <map>
#include <optional>
#include <stdexcept>

#include "receiver/assembly/file_table.hpp"

namespace ddft::receiver {
using namespace std::chrono;

// Block `index` of *f. When every block is taken, makes room: what that reaps may fail or end
// any file, *f too, so *f is found again by its key afterwards (null: the caller drops the
// packet's data, as the file is no longer receiving).
Block* FileTable::get_block(File*& f, uint64_t index) {
  if (Block* b = blocks_.find_or_take(*f, index)) return b;
  const uint32_t id = f->id;
  f = nullptr;  // may dangle from here until found again
  while (!engine_.has_free()) {
    pump(false);
    if (engine_.has_free()) break;
    if (!engine_.backlog_empty() || engine_.in_flight() > 0) {
      pump(true);
    } else if (!evict_one()) {
      // Every block is held by files whose temporary file is still being made, or by the
      // committer's work: wait for the pool (the ring holds the link's data meanwhile).
      fs_.wait(milliseconds(10));
    }
  }
  f = find(id);
  if (f == nullptr || f->state != FileState::kReceiving) return nullptr;
  return blocks_.find_or_take(*f, index);
}

// Called when every block is taken and no write is in flight: blocks are held either because an
// earlier hole keeps them from being hashed, or because they have holes themselves. Give up
// in-order hashing for one file (it is verified by reading it back) and write its blocks out:
// the oldest file of the sender that holds the most blocks, so that one sender's flood costs
// its own files, not another sender's.
bool FileTable::evict_one() {
  std::map<uint64_t, size_t> held;  // blocks held by files still receiving, by session
  for (auto& [key, f] : files_) {
    if (f->state == FileState::kReceiving) held[key.first] += f->blocks.size();
  }
  const uint64_t heaviest = busiest_session(held);
  // The oldest file of session `s` (any, when nullopt) whose blocks can be written out.
  const auto oldest = [this](std::optional<uint64_t> s) {
    File* victim = nullptr;
    for (auto& [key, f] : files_) {
      if ((!s || key.first == *s) && f->state == FileState::kReceiving && f->tmp_ready &&
          !f->blocks.empty() && (victim == nullptr || f->announced < victim->announced)) {
        victim = f.get();
      }
    }
    return victim;
  };
  File* victim = held.empty() ? nullptr : oldest(heaviest);
  // The heaviest sender's blocks wait for their temporary files to be made: wait for the pool.
  if (victim == nullptr && fs_.pending() > 0) return false;
  if (victim == nullptr) victim = oldest(std::nullopt);
  if (victim == nullptr) throw std::logic_error("write pool exhausted with no block to evict");
  spdlog::warn(
      "Warn: {}: data arrived out of order beyond the write buffers; it will be "
      "verified by reading it back",
      victim->path);
  blocks_.evict(*victim);
  return true;
}

}  // namespace ddft::receiver
