#include "receiver/assembly/file_blocks.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace ddft::receiver {

Block* FileBlocks::find_or_take(File& f, uint64_t index) {
  if (auto it = f.blocks.find(index); it != f.blocks.end()) return it->second;
  Block* b = engine_.take(&f, index, f.size);
  if (b != nullptr) f.blocks.emplace(index, b);
  return b;
}

bool FileBlocks::fill(Block& b, size_t in_block, std::span<const uint8_t> data) {
  std::memcpy(b.mem + in_block, data.data(), data.size());
  const auto start = static_cast<uint32_t>(in_block);
  const auto end = static_cast<uint32_t>(in_block + data.size());
  // Merge into the block's sorted range list (almost always an append to the last range).
  auto it = std::lower_bound(b.ranges.begin(), b.ranges.end(), std::make_pair(start, end));
  it = b.ranges.insert(it, {start, end});
  if (it != b.ranges.begin() && std::prev(it)->second == it->first) {
    std::prev(it)->second = it->second;
    it = b.ranges.erase(it) - 1;
  }
  if (std::next(it) != b.ranges.end() && it->second == std::next(it)->first) {
    it->second = std::next(it)->second;
    b.ranges.erase(std::next(it));
  }
  b.filled += data.size();
  return b.filled == b.size;
}

void FileBlocks::on_filled(File& f, Block& b) {
  if (f.tmp_ready) submit(f, b);  // else FileTable::on_created() submits it
  if (f.hash_stream && b.index == f.hash_next) hash_in_order(f);
}

void FileBlocks::hash_in_order(File& f) {
  while (f.hash_stream) {
    auto it = f.blocks.find(f.hash_next);
    if (it == f.blocks.end()) return;
    Block& b = *it->second;
    if (b.filled != b.size) return;
    f.hasher->update({b.mem, b.size});
    b.hashed = true;
    ++f.hash_next;
    maybe_release(b);
  }
}

void FileBlocks::drop_hash_stream(File& f) {
  if (!f.hash_stream) return;
  f.hash_stream = false;
  std::vector<Block*> resident;
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) maybe_release(*b);
}

void FileBlocks::submit(File& f, Block& b) {
  f.ops_pending += engine_.submit_block(b, f.tmp.direct_fd.get(), f.tmp.fd.get());
  if (b.ranges.empty()) maybe_release(b);
}

void FileBlocks::submit_waiting(File& f, bool full_only) {
  std::vector<Block*> ready;
  for (auto& [idx, b] : f.blocks) {
    if (!b->submitted && (!full_only || b->filled == b->size)) ready.push_back(b);
  }
  for (Block* b : ready) submit(f, *b);
}

void FileBlocks::flush_for_failure(File& f) {
  // Everything received goes into the kept partial file, so that it holds exactly what the
  // record says was received: blocks not written yet are written now, then all are released.
  // While the temporary file is still being made they wait for it (FileTable::on_created()).
  if (!f.tmp_ready) return;
  std::vector<Block*> resident;
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) {
    if (!b->submitted && f.tmp.fd) {
      submit(f, *b);
    } else {
      b->submitted = true;
      maybe_release(*b);
    }
  }
}

void FileBlocks::evict(File& f) {
  drop_hash_stream(f);
  std::vector<Block*> partial;
  for (auto& [idx, b] : f.blocks) {
    if (!b->submitted) partial.push_back(b);
  }
  for (Block* b : partial) {
    f.evicted.insert(b->index);
    f.blocks.erase(b->index);
    b->orphan = true;
    submit(f, *b);
  }
}

void FileBlocks::release_all(File& f) {
  std::vector<Block*> resident;
  for (auto& [idx, b] : f.blocks) resident.push_back(b);
  for (Block* b : resident) release(*b);
}

File& FileBlocks::on_write_done(const common::IoCompletion& c) {
  Block& b = *reinterpret_cast<Block*>(c.cookie);
  File& f = *b.file;
  --b.writes_pending;
  --f.ops_pending;
  if (c.error != 0 && f.io_error == 0) f.io_error = c.error;
  maybe_release(b);
  return f;
}

void FileBlocks::maybe_release(Block& b) {
  if (!b.submitted || b.writes_pending > 0) return;
  File& f = *b.file;
  if (b.hashed || !f.hash_stream || b.orphan || f.state == FileState::kFailing) release(b);
}

void FileBlocks::release(Block& b) {
  File& f = *b.file;
  if (!b.orphan) {
    auto it = f.blocks.find(b.index);
    if (it != f.blocks.end() && it->second == &b) f.blocks.erase(it);
  }
  engine_.give_back(b);
}

}  // namespace ddft::receiver
