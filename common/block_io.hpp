// Asynchronous block reads and writes: io_uring when the kernel allows it, else pread/pwrite,
// on the calling thread or spread over a pool of IO threads (--writers / --readers).
// The receiver writes with it, the sender reads with it, and dd_iotest measures the disks with
// it, so that the self-test's figures are the programs' own.
//
// Every request completes exactly once, whole or with an error: short transfers and
// -EAGAIN/-EINTR are resubmitted here, so callers only see the final outcome. The one exception
// is a read that meets the end of the file: it completes with the bytes there were.
//
// One thread submits and reaps; the IO threads are the engine's own, joined by its destructor.
// Buffers stay the caller's and must stay valid until their completion is reaped.
// make_block_io() throws std::runtime_error when io_uring is demanded and refused; a running
// engine throws only when it breaks itself (io_uring_submit fails), never for a request: a
// failed request is its completion's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace ddft::common {

struct IoCompletion {
  uint64_t cookie = 0;
  int error = 0;            // 0, or an errno value
  size_t bytes = 0;         // bytes written or read (a read stops short only at end of file)
  uint64_t latency_ns = 0;  // submit to completion
};

// Defaults shared by the programs and dd_iotest, so that the self-test runs what they run.
inline constexpr unsigned kDefaultWriteQueueDepth = 32;
inline constexpr unsigned kDefaultReadQueueDepth = 4;
inline constexpr size_t kDefaultReadBuffers = 16;  // the sender's reader pool (--read-buffers)

// kNull completes every request at once without touching the disk: --sink null.
enum class IoEngine { kAuto, kUring, kPwrite, kNull };

// "io_uring", "pwrite", "null" or "auto": the engine's name in the metrics.
const char* io_engine_name(IoEngine engine);

// Not thread-safe: one thread submits and reaps (the pool's threads are its own business).
class BlockIo {
 public:
  using Callback = std::function<void(const IoCompletion&)>;
  virtual ~BlockIo() = default;
  // Queues a write of buf[0..len) at `offset` of `fd`. `buf` must stay valid until the
  // completion is reaped. Returns false when the queue is full (reap first).
  [[nodiscard]] virtual bool submit_write(int fd, const uint8_t* buf, size_t len, uint64_t offset,
                                          uint64_t cookie) = 0;
  // Queues a read of len bytes at `offset` of `fd` into buf. Same rules as submit_write.
  [[nodiscard]] virtual bool submit_read(int fd, uint8_t* buf, size_t len, uint64_t offset,
                                         uint64_t cookie) = 0;
  // Queues fdatasync (datasync) or fsync of `fd`, ordered after nothing in particular: callers
  // submit it only once the file's writes have completed.
  [[nodiscard]] virtual bool submit_sync(int fd, bool datasync, uint64_t cookie) = 0;
  // Delivers completed requests to `cb`. With `wait`, blocks until at least one completes (when
  // any is in flight). Returns how many were delivered.
  virtual size_t reap(bool wait, const Callback& cb) = 0;
  virtual size_t in_flight() const = 0;
  virtual size_t capacity() const = 0;
  // A descriptor that polls readable when a completion may be waiting (an eventfd; read it to
  // clear), for threads that wait on more than this engine. -1 for engines that complete every
  // request inside submit.
  virtual int completion_fd() { return -1; }
  // "io_uring ..." or "pread/pwrite ...", with details (and a fallback's reason) for the start-up
  // log.
  virtual std::string describe() const = 0;
  // The engine that carries the requests: kUring, kPwrite or kNull, never kAuto.
  virtual IoEngine engine() const = 0;
  // Why kAuto runs pread/pwrite: the kernel's refusal of io_uring, on one line. Empty when
  // nothing fell back (io_uring runs, or pread/pwrite or the null sink was asked for).
  virtual std::string fallback_reason() const = 0;
};

struct BlockIoOptions {
  IoEngine engine = IoEngine::kAuto;
  // 1: requests go to the kernel from the caller's thread. N > 1: N IO threads, each with its own
  // engine of `queue_depth`, share the requests (any thread may take any request).
  unsigned threads = 1;
  unsigned queue_depth = kDefaultWriteQueueDepth;
  // The memory all buffers live in (may be empty): io_uring registers it once so transfers use
  // fixed buffers.
  std::span<uint8_t> fixed{};
  std::string thread_name = "dd-io";  // the IO threads are named thread_name + index
};

// Builds the engine. kAuto tries io_uring and falls back to pread/pwrite when the kernel refuses
// it (a line saying so and why is put in *note; the engine's fallback_reason() keeps the why).
// With several threads, every thread runs the same engine: when one is refused io_uring, all
// fall back. Throws std::runtime_error when kUring was demanded and is unavailable.
std::unique_ptr<BlockIo> make_block_io(const BlockIoOptions& options, std::string* note);

}  // namespace ddft::common
