#include "receiver/block_writer.hpp"

#include <fmt/format.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <stdexcept>

namespace ddft::receiver {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A writer whose requests are over when submit returns; their completions wait in a queue for
// reap(), so callers see the same asynchronous contract as with io_uring.
class ImmediateWriter : public BlockWriter {
 public:
  explicit ImmediateWriter(unsigned depth) : depth_(depth) {}
  size_t reap(bool, const Callback& cb) override {
    size_t n = 0;
    while (!done_.empty()) {
      const WriteCompletion c = done_.front();
      done_.pop_front();
      cb(c);
      ++n;
    }
    return n;
  }
  size_t in_flight() const override { return done_.size(); }
  size_t capacity() const override { return depth_; }

 protected:
  void complete(uint64_t cookie, int error, uint64_t latency_ns) {
    done_.push_back({cookie, error, latency_ns});
  }

 private:
  unsigned depth_;
  std::deque<WriteCompletion> done_;
};

// Synchronous fallback when the kernel refuses io_uring.
class PwriteWriter final : public ImmediateWriter {
 public:
  using ImmediateWriter::ImmediateWriter;
  bool submit_write(int fd, const uint8_t* buf, size_t len, uint64_t offset,
                    uint64_t cookie) override {
    const uint64_t t0 = now_ns();
    int error = 0;
    size_t done = 0;
    while (done < len) {
      const ssize_t n = ::pwrite(fd, buf + done, len - done, static_cast<off_t>(offset + done));
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        error = n < 0 ? errno : EIO;
        break;
      }
    }
    complete(cookie, error, now_ns() - t0);
    return true;
  }
  bool submit_sync(int fd, bool datasync, uint64_t cookie) override {
    const uint64_t t0 = now_ns();
    const int rc = datasync ? ::fdatasync(fd) : ::fsync(fd);
    complete(cookie, rc == 0 ? 0 : errno, now_ns() - t0);
    return true;
  }
  std::string describe() const override { return "pwrite (synchronous)"; }
};

// --sink null: every request completes at once and nothing is written, so that the receive path
// can be measured without the disk.
class NullWriter final : public ImmediateWriter {
 public:
  using ImmediateWriter::ImmediateWriter;
  bool submit_write(int, const uint8_t*, size_t, uint64_t, uint64_t cookie) override {
    complete(cookie, 0, 0);
    return true;
  }
  bool submit_sync(int, bool, uint64_t cookie) override {
    complete(cookie, 0, 0);
    return true;
  }
  std::string describe() const override { return "null sink (nothing is written)"; }
};

class UringWriter final : public BlockWriter {
 public:
  UringWriter(unsigned depth, std::span<uint8_t> fixed) : reqs_(depth) {
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    if (rc < 0) throw std::runtime_error(fmt::format("io_uring_queue_init: {}", std::strerror(-rc)));
    for (size_t i = 0; i < reqs_.size(); ++i) free_.push_back(i);
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    const bool ok = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
                    io_uring_opcode_supported(probe, IORING_OP_FSYNC);
    has_fixed_op_ = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_WRITE_FIXED);
    if (probe != nullptr) io_uring_free_probe(probe);
    if (!ok) {
      io_uring_queue_exit(&ring_);
      throw std::runtime_error("io_uring lacks IORING_OP_WRITE or IORING_OP_FSYNC");
    }
    if (!fixed.empty() && has_fixed_op_) {
      iovec iov{fixed.data(), fixed.size()};
      // Registration pins the pages; it can fail under RLIMIT_MEMLOCK. Plain writes still work.
      const int r = io_uring_register_buffers(&ring_, &iov, 1);
      fixed_registered_ = r == 0;
      if (r != 0) fixed_note_ = fmt::format(" (fixed buffers refused: {})", std::strerror(-r));
      fixed_ = fixed;
    }
  }
  ~UringWriter() override {
    // Drain what is in flight: the kernel must not write into memory that is about to go away.
    while (in_flight_ > 0) reap(true, [](const WriteCompletion&) {});
    io_uring_queue_exit(&ring_);
  }
  UringWriter(const UringWriter&) = delete;
  UringWriter& operator=(const UringWriter&) = delete;

  bool submit_write(int fd, const uint8_t* buf, size_t len, uint64_t offset,
                    uint64_t cookie) override {
    if (free_.empty()) return false;
    const size_t idx = free_.back();
    free_.pop_back();
    reqs_[idx] = Req{Op::kWrite, fd, buf, len, offset, 0, cookie, now_ns(), false};
    queue(idx);
    return true;
  }
  bool submit_sync(int fd, bool datasync, uint64_t cookie) override {
    if (free_.empty()) return false;
    const size_t idx = free_.back();
    free_.pop_back();
    reqs_[idx] = Req{Op::kSync, fd, nullptr, 0, 0, 0, cookie, now_ns(), datasync};
    queue(idx);
    return true;
  }

  size_t reap(bool wait, const Callback& cb) override {
    size_t delivered = 0;
    submit_pending();
    if (in_flight_ == 0) return 0;
    io_uring_cqe* cqe = nullptr;
    if (wait) {
      const int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc < 0 && rc != -EINTR) throw std::runtime_error("io_uring_wait_cqe failed");
    }
    // Each CQE is marked seen before its callback runs, so a callback that throws can never
    // make the same completion be delivered twice.
    while (io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
      const size_t idx = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      Req& r = reqs_[idx];
      const bool again = res == -EAGAIN || res == -EINTR;
      const bool short_write =
          r.op == Op::kWrite && res > 0 && r.done + static_cast<size_t>(res) < r.len;
      if (again || short_write) {
        if (short_write) r.done += static_cast<size_t>(res);  // the rest goes again
        --in_flight_;
        queue(idx);  // the slot it freed in the ring is reused at once
        continue;
      }
      int error = res < 0 ? -res : 0;
      if (r.op == Op::kWrite && res == 0 && r.len > 0) error = EIO;
      --in_flight_;
      free_.push_back(idx);
      cb({r.cookie, error, now_ns() - r.submitted_ns});
      ++delivered;
    }
    submit_pending();
    return delivered;
  }
  size_t in_flight() const override { return in_flight_ + unsubmitted_; }
  size_t capacity() const override { return reqs_.size(); }
  std::string describe() const override {
    return fmt::format("io_uring (queue depth {}, fixed buffers {}){}", reqs_.size(),
                       fixed_registered_ ? "registered" : "not used", fixed_note_);
  }

 private:
  enum class Op { kWrite, kSync };
  struct Req {
    Op op;
    int fd;
    const uint8_t* buf;
    size_t len;
    uint64_t offset;
    size_t done;
    uint64_t cookie;
    uint64_t submitted_ns;
    bool datasync;
  };

  void queue(size_t idx) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      submit_pending();
      sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) throw std::runtime_error("io_uring submission queue full");
    }
    Req& r = reqs_[idx];
    if (r.op == Op::kWrite) {
      const uint8_t* p = r.buf + r.done;
      const unsigned n = static_cast<unsigned>(r.len - r.done);
      const uint64_t off = r.offset + r.done;
      if (fixed_registered_ && p >= fixed_.data() && p + n <= fixed_.data() + fixed_.size()) {
        io_uring_prep_write_fixed(sqe, r.fd, p, n, off, 0);
      } else {
        io_uring_prep_write(sqe, r.fd, p, n, off);
      }
    } else {
      io_uring_prep_fsync(sqe, r.fd, r.datasync ? IORING_FSYNC_DATASYNC : 0);
    }
    io_uring_sqe_set_data64(sqe, idx);
    ++unsubmitted_;
  }

  void submit_pending() {
    while (unsubmitted_ > 0) {
      const int rc = io_uring_submit(&ring_);
      if (rc == -EINTR || rc == -EAGAIN) continue;
      if (rc < 0) throw std::runtime_error(fmt::format("io_uring_submit: {}", std::strerror(-rc)));
      in_flight_ += static_cast<size_t>(rc);
      unsubmitted_ -= static_cast<size_t>(rc);
    }
  }

  io_uring ring_{};
  std::vector<Req> reqs_;
  std::vector<size_t> free_;
  size_t in_flight_ = 0;
  size_t unsubmitted_ = 0;
  bool has_fixed_op_ = false;
  bool fixed_registered_ = false;
  std::string fixed_note_;
  std::span<uint8_t> fixed_;
};

}  // namespace

std::unique_ptr<BlockWriter> make_block_writer(IoEngine engine, unsigned queue_depth,
                                               std::span<uint8_t> fixed, std::string* note) {
  if (engine == IoEngine::kPwrite) return std::make_unique<PwriteWriter>(queue_depth);
  if (engine == IoEngine::kNull) return std::make_unique<NullWriter>(queue_depth);
  try {
    return std::make_unique<UringWriter>(queue_depth, fixed);
  } catch (const std::exception& e) {
    if (engine == IoEngine::kUring) throw;
    if (note != nullptr) *note = fmt::format("io_uring unavailable ({}), using pwrite", e.what());
    return std::make_unique<PwriteWriter>(queue_depth);
  }
}

}  // namespace ddft::receiver
