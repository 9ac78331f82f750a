#include "common/block_io.hpp"

#include <fmt/format.h>
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "common/fd.hpp"
#include "common/named_thread.hpp"

namespace ddft::common {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

enum class Op { kWrite, kRead, kSync };

// One request as the engines keep it. `done` counts bytes already transferred by earlier,
// short completions.
struct Req {
  Op op = Op::kWrite;
  int fd = -1;
  uint8_t* buf = nullptr;
  size_t len = 0;
  uint64_t offset = 0;
  size_t done = 0;
  uint64_t cookie = 0;
  uint64_t submitted_ns = 0;
  bool datasync = false;
};

// Every engine here takes the three kinds of request as one Req, through add(); the pool hands
// its engines the Reqs it queued.
class RequestIo : public BlockIo {
 public:
  bool submit_write(int fd, const uint8_t* buf, size_t len, uint64_t offset,
                    uint64_t cookie) final {
    return add({Op::kWrite, fd, const_cast<uint8_t*>(buf), len, offset, 0, cookie, now_ns()});
  }
  bool submit_read(int fd, uint8_t* buf, size_t len, uint64_t offset, uint64_t cookie) final {
    return add({Op::kRead, fd, buf, len, offset, 0, cookie, now_ns()});
  }
  bool submit_sync(int fd, bool datasync, uint64_t cookie) final {
    return add({Op::kSync, fd, nullptr, 0, 0, 0, cookie, now_ns(), datasync});
  }
  // Queues `r` (r.done == 0); returns false when the engine is full.
  virtual bool add(const Req& r) = 0;
};

// An engine whose requests are over when submit returns; their completions wait in a queue for
// reap(), so callers see the same asynchronous contract as with io_uring.
class ImmediateIo : public RequestIo {
 public:
  explicit ImmediateIo(unsigned depth) : depth_(depth) {}
  bool add(const Req& req) override {
    if (done_.size() >= depth_) return false;
    Req r = req;
    const int error = execute(r);
    done_.push_back({r.cookie, error, r.done, now_ns() - r.submitted_ns});
    return true;
  }
  size_t reap(bool, const Callback& cb) override {
    size_t n = 0;
    while (!done_.empty()) {
      const IoCompletion c = done_.front();
      done_.pop_front();
      cb(c);
      ++n;
    }
    return n;
  }
  size_t in_flight() const override { return done_.size(); }
  size_t capacity() const override { return depth_; }

 protected:
  // Carries out `r` to its end; returns the errno (0 on success) and sets r.done.
  virtual int execute(Req& r) = 0;

 private:
  unsigned depth_;
  std::deque<IoCompletion> done_;
};

// Synchronous pread/pwrite: asked for, or the fallback when the kernel refuses io_uring.
class SyncIo final : public ImmediateIo {
 public:
  // `fallback` is why io_uring was refused, empty when pread/pwrite was asked for.
  SyncIo(unsigned depth, std::string fallback)
      : ImmediateIo(depth), fallback_(std::move(fallback)) {}
  std::string describe() const override {
    if (fallback_.empty()) return "pread/pwrite (synchronous)";
    return fmt::format("pread/pwrite (synchronous; io_uring unavailable: {})", fallback_);
  }
  IoEngine engine() const override { return IoEngine::kPwrite; }
  std::string fallback_reason() const override { return fallback_; }

 protected:
  int execute(Req& r) override {
    if (r.op == Op::kSync) return (r.datasync ? ::fdatasync(r.fd) : ::fsync(r.fd)) == 0 ? 0 : errno;
    while (r.done < r.len) {
      const off_t off = static_cast<off_t>(r.offset + r.done);
      const ssize_t n = r.op == Op::kWrite ? ::pwrite(r.fd, r.buf + r.done, r.len - r.done, off)
                                           : ::pread(r.fd, r.buf + r.done, r.len - r.done, off);
      if (n > 0) {
        r.done += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n == 0 && r.op == Op::kRead) {
        return 0;  // end of file
      } else {
        return n < 0 ? errno : EIO;
      }
    }
    return 0;
  }

 private:
  std::string fallback_;
};

// --sink null: every request completes at once and nothing is touched, so that the receive path
// can be measured without the disk.
class NullIo final : public ImmediateIo {
 public:
  using ImmediateIo::ImmediateIo;
  std::string describe() const override { return "null sink (nothing is written)"; }
  IoEngine engine() const override { return IoEngine::kNull; }
  std::string fallback_reason() const override { return ""; }

 protected:
  int execute(Req& r) override {
    r.done = r.len;
    return 0;
  }
};

class UringIo final : public RequestIo {
 public:
  UringIo(unsigned depth, std::span<uint8_t> fixed) : reqs_(depth) {
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    if (rc < 0)
      throw std::runtime_error(fmt::format("io_uring_queue_init: {}", std::strerror(-rc)));
    for (size_t i = 0; i < reqs_.size(); ++i) free_.push_back(i);
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    const bool ok = probe != nullptr && io_uring_opcode_supported(probe, IORING_OP_WRITE) &&
                    io_uring_opcode_supported(probe, IORING_OP_READ) &&
                    io_uring_opcode_supported(probe, IORING_OP_FSYNC);
    const bool has_fixed_ops = probe != nullptr &&
                               io_uring_opcode_supported(probe, IORING_OP_WRITE_FIXED) &&
                               io_uring_opcode_supported(probe, IORING_OP_READ_FIXED);
    if (probe != nullptr) io_uring_free_probe(probe);
    if (!ok) {
      io_uring_queue_exit(&ring_);
      throw std::runtime_error("io_uring lacks IORING_OP_WRITE, READ or FSYNC");
    }
    if (!fixed.empty() && has_fixed_ops) {
      iovec iov{fixed.data(), fixed.size()};
      // Registration pins the pages; it can fail under RLIMIT_MEMLOCK. Plain transfers still work.
      const int r = io_uring_register_buffers(&ring_, &iov, 1);
      fixed_registered_ = r == 0;
      if (r != 0) fixed_note_ = fmt::format(" (fixed buffers refused: {})", std::strerror(-r));
      fixed_ = fixed;
    }
  }
  ~UringIo() override {
    // Drain what is in flight: the kernel must not touch memory that is about to go away.
    try {
      while (in_flight_ > 0) reap(true, [](const IoCompletion&) {});
    } catch (...) {
    }
    io_uring_queue_exit(&ring_);
  }
  UringIo(const UringIo&) = delete;
  UringIo& operator=(const UringIo&) = delete;

  bool add(const Req& r) override {
    if (free_.empty()) return false;
    const size_t idx = free_.back();
    free_.pop_back();
    reqs_[idx] = r;
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
      --in_flight_;
      Req& r = reqs_[idx];
      const bool transfer = r.op != Op::kSync;
      if (res == -EAGAIN || res == -EINTR) {
        queue(idx);  // the slot it freed in the ring is reused at once
        continue;
      }
      if (transfer && res > 0 && r.done + static_cast<size_t>(res) < r.len) {
        r.done += static_cast<size_t>(res);  // short: the rest goes again
        queue(idx);
        continue;
      }
      int error = res < 0 ? -res : 0;
      if (transfer && res > 0) r.done += static_cast<size_t>(res);
      // A write that moves nothing is an error; a read that gets nothing met the end of the file.
      if (r.op == Op::kWrite && res == 0 && r.len > 0) error = EIO;
      free_.push_back(idx);
      cb({r.cookie, error, r.done, now_ns() - r.submitted_ns});
      ++delivered;
    }
    submit_pending();
    return delivered;
  }
  size_t in_flight() const override { return in_flight_ + unsubmitted_; }
  size_t capacity() const override { return reqs_.size(); }
  int completion_fd() override {
    if (!cq_fd_) {
      UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
      if (!fd) throw std::runtime_error(fmt::format("eventfd: {}", std::strerror(errno)));
      const int rc = io_uring_register_eventfd(&ring_, fd.get());
      if (rc < 0) {
        throw std::runtime_error(fmt::format("io_uring_register_eventfd: {}", std::strerror(-rc)));
      }
      cq_fd_ = std::move(fd);
    }
    return cq_fd_.get();
  }
  std::string describe() const override {
    return fmt::format("io_uring (queue depth {}, fixed buffers {}){}", reqs_.size(),
                       fixed_registered_ ? "registered" : "not used", fixed_note_);
  }
  IoEngine engine() const override { return IoEngine::kUring; }
  std::string fallback_reason() const override { return ""; }

 private:
  void queue(size_t idx) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      submit_pending();
      sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) throw std::runtime_error("io_uring submission queue full");
    }
    Req& r = reqs_[idx];
    if (r.op == Op::kSync) {
      io_uring_prep_fsync(sqe, r.fd, r.datasync ? IORING_FSYNC_DATASYNC : 0);
    } else {
      uint8_t* p = r.buf + r.done;
      const unsigned n = static_cast<unsigned>(r.len - r.done);
      const uint64_t off = r.offset + r.done;
      const bool fixed =
          fixed_registered_ && p >= fixed_.data() && p + n <= fixed_.data() + fixed_.size();
      if (r.op == Op::kWrite) {
        fixed ? io_uring_prep_write_fixed(sqe, r.fd, p, n, off, 0)
              : io_uring_prep_write(sqe, r.fd, p, n, off);
      } else {
        fixed ? io_uring_prep_read_fixed(sqe, r.fd, p, n, off, 0)
              : io_uring_prep_read(sqe, r.fd, p, n, off);
      }
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
  bool fixed_registered_ = false;
  std::string fixed_note_;
  std::span<uint8_t> fixed_;
  UniqueFd cq_fd_;  // signalled on every completion, once completion_fd() was asked for
};

std::string fallback_note(const std::string& reason) {
  return fmt::format("io_uring unavailable ({}), using pread/pwrite", reason);
}

// One engine, for the calling thread; a fallback says why in its fallback_reason().
std::unique_ptr<RequestIo> make_single(IoEngine engine, unsigned depth, std::span<uint8_t> fixed) {
  if (engine == IoEngine::kPwrite) return std::make_unique<SyncIo>(depth, "");
  if (engine == IoEngine::kNull) return std::make_unique<NullIo>(depth);
  try {
    return std::make_unique<UringIo>(depth, fixed);
  } catch (const std::exception& e) {
    if (engine == IoEngine::kUring) throw;
    return std::make_unique<SyncIo>(depth, e.what());
  }
}

// N IO threads, each driving its own engine, fed from one queue of requests. Any thread takes
// any request, so one file's blocks spread over all of them (the FileCatalyst "writer threads per
// file" model); completions come back through a second queue that reap() drains.
//
// A thread with requests in flight must still take new ones while it has room, so it sleeps in
// poll() on two eventfds: the pool's "work" fd, written by add(), and its ring's completion fd.
// A thread that takes requests and leaves some behind writes the work fd again, so that a wake-up
// consumed by a thread without room is passed on. Full threads do not watch the work fd.
class PooledIo final : public RequestIo {
 public:
  explicit PooledIo(const BlockIoOptions& o) : work_fd_(make_eventfd()) {
    // The engines are built here, on the caller's thread, so that a refusal is reported at once.
    std::string refused;
    bool mixed = false;
    for (unsigned i = 0; i < o.threads; ++i) {
      engines_.push_back(make_single(o.engine, o.queue_depth, o.fixed));
      if (refused.empty()) refused = engines_.back()->fallback_reason();
      mixed = mixed || engines_.back()->engine() != engines_.front()->engine();
    }
    // One engine for every thread: io_uring refused to some threads only (a limit on rings or on
    // locked memory met part way) makes them all fall back, so the pool is what it says.
    if (mixed) {
      engines_.clear();
      for (unsigned i = 0; i < o.threads; ++i) {
        engines_.push_back(std::make_unique<SyncIo>(o.queue_depth, refused));
      }
    }
    capacity_ = engines_.size() * engines_.front()->capacity();
    try {
      for (unsigned i = 0; i < o.threads; ++i) {
        workers_.push_back(start_named_thread(fmt::format("{}{}", o.thread_name, i + 1),
                                              [this, i] { work(*engines_[i]); }));
      }
    } catch (...) {
      stop_workers();
      throw;
    }
  }
  ~PooledIo() override { stop_workers(); }
  PooledIo(const PooledIo&) = delete;
  PooledIo& operator=(const PooledIo&) = delete;

  bool add(const Req& r) override {
    {
      std::lock_guard lock(mu_);
      if (failure_ || outstanding_ >= capacity_) return false;
      pending_.push_back(r);
      ++outstanding_;
    }
    signal(work_fd_.get());
    return true;
  }

  size_t reap(bool wait, const Callback& cb) override {
    std::deque<IoCompletion> got;
    {
      std::unique_lock lock(mu_);
      if (wait)
        done_cv_.wait(lock, [&] { return !done_.empty() || outstanding_ == 0 || failure_; });
      // A failed IO thread is fatal for the engine: every reap reports it, and nothing is left
      // "in flight" for callers to wait on (the requests it held will never complete).
      if (failure_) std::rethrow_exception(failure_);
      got.swap(done_);
      outstanding_ -= got.size();
    }
    for (const IoCompletion& c : got) cb(c);
    return got.size();
  }
  size_t in_flight() const override {
    std::lock_guard lock(mu_);
    return failure_ ? 0 : outstanding_;
  }
  size_t capacity() const override { return capacity_; }
  std::string describe() const override {
    return fmt::format("{} threads x {}", engines_.size(), engines_.front()->describe());
  }
  IoEngine engine() const override { return engines_.front()->engine(); }
  std::string fallback_reason() const override { return engines_.front()->fallback_reason(); }

 private:
  static int make_eventfd() {
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) throw std::runtime_error(fmt::format("eventfd: {}", std::strerror(errno)));
    return fd;
  }
  static void signal(int fd) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof one);
  }
  static void drain(int fd) {
    uint64_t v = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd, &v, sizeof v);
  }

  void stop_workers() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      signal(work_fd_.get());
    }
    for (auto& w : workers_) {
      if (w.joinable()) w.join();  // each drains its engine before it returns
    }
  }

  void work(RequestIo& io) {
    std::vector<IoCompletion> local;
    const auto collect = [&](const IoCompletion& c) { local.push_back(c); };
    const int cq_fd = io.completion_fd();
    try {
      for (;;) {
        std::vector<Req> mine;
        bool stopping = false;
        {
          std::lock_guard lock(mu_);
          stopping = stopping_;
          while (!pending_.empty() && io.in_flight() + mine.size() < io.capacity()) {
            mine.push_back(pending_.front());
            pending_.pop_front();
          }
          if (!mine.empty() && !pending_.empty()) signal(work_fd_.get());
          if (stopping && pending_.empty() && mine.empty() && io.in_flight() == 0) return;
        }
        // Latency is measured by this thread's engine, from when it submitted.
        for (Req& r : mine) {
          r.submitted_ns = now_ns();
          if (!io.add(r)) throw std::logic_error("IO thread overfilled its engine");
        }
        local.clear();
        io.reap(false, collect);
        if (!local.empty()) {
          {
            std::lock_guard lock(mu_);
            done_.insert(done_.end(), local.begin(), local.end());
          }
          done_cv_.notify_all();
        }
        if (!mine.empty() || !local.empty()) continue;
        // Nothing moved: sleep until new work (when there is room for it) or a completion.
        pollfd fds[2];
        nfds_t n = 0;
        const bool room = io.in_flight() < io.capacity();
        if (room && !stopping) fds[n++] = {work_fd_.get(), POLLIN, 0};
        if (io.in_flight() > 0) {
          if (cq_fd < 0) continue;  // an engine without a completion fd finishes at once
          fds[n++] = {cq_fd, POLLIN, 0};
        }
        if (n == 0) continue;
        if (::poll(fds, n, -1) < 0 && errno != EINTR) {
          throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
        }
        for (nfds_t k = 0; k < n; ++k) {
          if (fds[k].revents == 0) continue;
          if (fds[k].fd != work_fd_.get()) {
            drain(fds[k].fd);
            continue;
          }
          // The stop signal must stay set for every thread to see: the work fd is cleared only
          // under the lock, and never once stopping (stop_workers signals under the same lock).
          std::lock_guard lock(mu_);
          if (!stopping_) drain(work_fd_.get());
        }
      }
    } catch (...) {
      {
        std::lock_guard lock(mu_);
        if (!failure_) failure_ = std::current_exception();
      }
      done_cv_.notify_all();
    }
  }

  UniqueFd work_fd_;
  std::vector<std::unique_ptr<RequestIo>> engines_;
  std::vector<std::jthread> workers_;
  size_t capacity_ = 0;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<Req> pending_;
  std::deque<IoCompletion> done_;
  size_t outstanding_ = 0;  // accepted and not yet handed to reap()
  bool stopping_ = false;
  std::exception_ptr failure_;
};

}  // namespace

const char* io_engine_name(IoEngine engine) {
  switch (engine) {
    case IoEngine::kUring:
      return "io_uring";
    case IoEngine::kPwrite:
      return "pwrite";
    case IoEngine::kNull:
      return "null";
    case IoEngine::kAuto:
      break;
  }
  return "auto";
}

std::unique_ptr<BlockIo> make_block_io(const BlockIoOptions& options, std::string* note) {
  std::unique_ptr<BlockIo> io;
  if (options.threads <= 1) {
    io = make_single(options.engine, options.queue_depth, options.fixed);
  } else {
    io = std::make_unique<PooledIo>(options);
  }
  if (note != nullptr && !io->fallback_reason().empty())
    *note = fallback_note(io->fallback_reason());
  return io;
}

}  // namespace ddft::common
