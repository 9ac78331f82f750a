// Asynchronous file writes for the receiver: io_uring when the kernel allows it, else pwrite.
// Every request completes exactly once, whole or with an error: short writes and -EAGAIN/-EINTR
// are resubmitted here, so callers only see the final outcome.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ddft::receiver {

struct WriteCompletion {
  uint64_t cookie = 0;
  int error = 0;             // 0, or an errno value
  uint64_t latency_ns = 0;   // submit to completion
};

// Not thread-safe: one thread submits and reaps.
class BlockWriter {
 public:
  using Callback = std::function<void(const WriteCompletion&)>;
  virtual ~BlockWriter() = default;
  // Queues a write of buf[0..len) at `offset` of `fd`. `buf` must stay valid until the
  // completion is reaped. Returns false when the queue is full (reap first).
  virtual bool submit_write(int fd, const uint8_t* buf, size_t len, uint64_t offset,
                            uint64_t cookie) = 0;
  // Queues fdatasync (datasync) or fsync of `fd`, ordered after nothing in particular: callers
  // submit it only once the file's writes have completed.
  virtual bool submit_sync(int fd, bool datasync, uint64_t cookie) = 0;
  // Delivers completed requests to `cb`. With `wait`, blocks until at least one completes (when
  // any is in flight). Returns how many were delivered.
  virtual size_t reap(bool wait, const Callback& cb) = 0;
  virtual size_t in_flight() const = 0;
  virtual size_t capacity() const = 0;
  // "io_uring" or "pwrite", with details for the start-up log.
  virtual std::string describe() const = 0;
};

// kNull completes every request at once without writing: --sink null.
enum class IoEngine { kAuto, kUring, kPwrite, kNull };

// Builds the writer. kAuto tries io_uring and falls back to pwrite when the kernel refuses it
// (the reason is put in *note). `fixed` (may be empty) is the memory all write buffers live in;
// io_uring registers it once so writes use fixed buffers. Throws std::runtime_error when kUring
// was demanded and is unavailable.
std::unique_ptr<BlockWriter> make_block_writer(IoEngine engine, unsigned queue_depth,
                                               std::span<uint8_t> fixed, std::string* note);

}  // namespace ddft::receiver
