#include "receiver/delivery/write_engine.hpp"

#include <algorithm>

namespace ddft::receiver {

WriteEngine::WriteEngine(common::BlockIo& io, common::AlignedBuffer& memory, size_t block_size)
    : io_(io), block_size_(block_size) {
  const size_t count = memory.size() / block_size_;
  blocks_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    blocks_[i].mem = memory.data() + i * block_size_;
    free_blocks_.push_back(static_cast<int>(count - 1 - i));
  }
  collect_ = [this](const common::IoCompletion& c) { completions_.push_back(c); };
}

Block* WriteEngine::take(File* f, uint64_t index, uint64_t file_size) {
  if (free_blocks_.empty()) return nullptr;
  Block& b = blocks_[static_cast<size_t>(free_blocks_.back())];
  free_blocks_.pop_back();
  b.file = f;
  b.index = index;
  b.size = static_cast<size_t>(std::min<uint64_t>(block_size_, file_size - index * block_size_));
  b.filled = 0;
  b.ranges.clear();
  b.hashed = false;
  b.submitted = false;
  b.orphan = false;
  b.writes_pending = 0;
  return &b;
}

void WriteEngine::give_back(Block& b) {
  b.file = nullptr;
  free_blocks_.push_back(static_cast<int>(&b - blocks_.data()));
}

int WriteEngine::submit_block(Block& b, int direct_fd, int fd) {
  b.submitted = true;
  // With --direct-io, the 4 KiB-aligned part of a range goes through the O_DIRECT descriptor (the
  // pool's blocks and their file offsets are aligned); an unaligned rest, the file's tail or a
  // partial block's pieces, through the buffered one. Both reach the same file.
  constexpr uint32_t kAlign = 4096;
  int queued = 0;
  auto queue_write = [&](int to_fd, uint32_t from, uint32_t to) {
    PendingOp op;
    op.fd = to_fd;
    op.buf = b.mem + from;
    op.len = to - from;
    op.offset = b.index * block_size_ + from;
    op.cookie = reinterpret_cast<uint64_t>(&b);
    ++b.writes_pending;
    ++queued;
    submit(op);
  };
  for (const auto& [start, end] : b.ranges) {
    uint32_t from = start;
    // O_DIRECT needs the file offset, the memory address and the length aligned; the offset and
    // address depend on the block size, so both are checked, not just the place in the block.
    const uint64_t file_off = b.index * block_size_ + start;
    const auto addr = reinterpret_cast<uintptr_t>(b.mem + start);
    if (direct_fd >= 0 && file_off % kAlign == 0 && addr % kAlign == 0 && end - start >= kAlign) {
      const uint32_t aligned_end = start + ((end - start) / kAlign) * kAlign;
      queue_write(direct_fd, start, aligned_end);
      from = aligned_end;
    }
    if (from < end) queue_write(fd, from, end);
  }
  return queued;
}

void WriteEngine::submit_sync(int fd, uint64_t cookie, bool datasync) {
  PendingOp op;
  op.sync = true;
  op.fd = fd;
  op.cookie = cookie;
  op.datasync = datasync;
  submit(op);
}

bool WriteEngine::try_submit(const PendingOp& op) {
  return op.sync ? io_.submit_sync(op.fd, op.datasync, op.cookie)
                 : io_.submit_write(op.fd, op.buf, op.len, op.offset, op.cookie);
}

// Never waits and never reaps: a full writer queue parks the op in the backlog, which
// flush_backlog() drains. Keeping submission free of nested completions keeps the file state
// machine simple.
void WriteEngine::submit(const PendingOp& op) {
  if (backlog_.empty() && try_submit(op)) return;
  backlog_.push_back(op);
}

void WriteEngine::flush_backlog() {
  while (!backlog_.empty()) {
    if (!try_submit(backlog_.front())) return;
    backlog_.pop_front();
  }
}

size_t WriteEngine::reap(bool wait) { return io_.reap(wait, collect_); }

}  // namespace ddft::receiver
