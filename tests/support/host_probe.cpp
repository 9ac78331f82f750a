#include "support/host_probe.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ddft::testing {
namespace {

std::string error_text(int err) { return std::strerror(err); }

// Closes a descriptor when it goes (the probes return early on every refusal).
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A scratch file's name in `dir`, unique to this process and probe.
std::filesystem::path scratch_in(const std::filesystem::path& dir, const char* probe) {
  return dir / (std::string(".ddft-") + probe + "-probe-" + std::to_string(::getpid()));
}

// The ring the probe works on; queue_exit'ed when it goes.
class ProbeRing {
 public:
  ProbeRing() = default;
  ~ProbeRing() {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  ProbeRing(const ProbeRing&) = delete;
  ProbeRing& operator=(const ProbeRing&) = delete;
  // io_uring_queue_init's result (0 or -errno).
  int init(unsigned depth) {
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    ready_ = rc == 0;
    return rc;
  }
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
  bool ready_ = false;
};

std::string probe_io_uring() {
  // As deep as the deepest ring a test asks the engine for.
  constexpr unsigned kDepth = 64;
  ProbeRing ring;
  if (const int rc = ring.init(kDepth); rc < 0) {
    return "no io_uring here: io_uring_queue_init: " + error_text(-rc);
  }
  io_uring_probe* probe = io_uring_get_probe_ring(ring.get());
  if (probe == nullptr) return "no io_uring opcode probe here (io_uring_get_probe_ring failed)";
  std::string lacking;
  const std::pair<int, const char*> needed[] = {{IORING_OP_READ, "IORING_OP_READ"},
                                                {IORING_OP_WRITE, "IORING_OP_WRITE"},
                                                {IORING_OP_FSYNC, "IORING_OP_FSYNC"}};
  for (const auto& [op, name] : needed) {
    if (!io_uring_opcode_supported(probe, op)) lacking += std::string(" ") + name;
  }
  io_uring_free_probe(probe);
  if (!lacking.empty()) return "io_uring here lacks" + lacking;
  ScopedFd efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (efd.get() < 0) return "no eventfd here: " + error_text(errno);
  if (const int rc = io_uring_register_eventfd(ring.get(), efd.get()); rc < 0) {
    return "io_uring here refuses an eventfd: io_uring_register_eventfd: " + error_text(-rc);
  }
  io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
  if (sqe == nullptr) return "io_uring here gives no submission entry";
  io_uring_prep_nop(sqe);
  if (const int rc = io_uring_submit(ring.get()); rc != 1) {
    return "io_uring here does not take a request: io_uring_submit: " +
           (rc < 0 ? error_text(-rc) : std::to_string(rc) + " submitted");
  }
  io_uring_cqe* cqe = nullptr;
  if (const int rc = io_uring_wait_cqe(ring.get(), &cqe); rc < 0) {
    return "io_uring here completes nothing: io_uring_wait_cqe: " + error_text(-rc);
  }
  const int res = cqe->res;
  io_uring_cqe_seen(ring.get(), cqe);
  if (res < 0) return "io_uring here fails a NOP: " + error_text(-res);
  return "";
}

}  // namespace

const std::string& io_uring_missing() {
  static const std::string why = probe_io_uring();
  return why;
}

std::string engine_missing(common::IoEngine engine) {
  return engine == common::IoEngine::kUring ? io_uring_missing() : std::string();
}

std::string file_leases_missing(const std::filesystem::path& dir) {
  const std::filesystem::path path = scratch_in(dir, "lease");
  {
    ScopedFd made(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (made.get() < 0)
      return "cannot make a scratch file in " + dir.string() + ": " + error_text(errno);
  }
  std::string why;
  {
    ScopedFd reader(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (reader.get() < 0) {
      why = "cannot read a scratch file in " + dir.string() + ": " + error_text(errno);
    } else if (::fcntl(reader.get(), F_SETLEASE, F_RDLCK) != 0) {
      why = "no file leases on the file system of " + dir.string() +
            ": F_SETLEASE: " + error_text(errno);
    } else {
      // Given back before a writer opens it: a writer opening a leased file would be held up
      // and this process sent SIGIO.
      ::fcntl(reader.get(), F_SETLEASE, F_UNLCK);
      ScopedFd writer(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
      if (writer.get() < 0) {
        why =
            "cannot open a scratch file in " + dir.string() + " for writing: " + error_text(errno);
      } else if (::fcntl(reader.get(), F_SETLEASE, F_RDLCK) == 0) {
        ::fcntl(reader.get(), F_SETLEASE, F_UNLCK);
        why = "file leases on " + dir.string() + " do not see a writer (a read lease granted " +
              "while the file is open for writing)";
      } else if (errno != EAGAIN) {
        why = "F_SETLEASE on " + dir.string() + " with a writer: " + error_text(errno) +
              " (not EAGAIN)";
      }
    }
  }
  std::filesystem::remove(path);
  return why;
}

std::string direct_io_missing(const std::filesystem::path& dir) {
  const std::filesystem::path path = scratch_in(dir, "direct");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    std::filesystem::remove(path);
    return "the file system of " + dir.string() + " refuses O_DIRECT: " + error_text(err);
  }
  ::close(fd);
  std::filesystem::remove(path);
  return "";
}

std::string ipv6_loopback_missing() {
  ScopedFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return "no IPv6 sockets here: " + error_text(errno);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return "no IPv6 loopback here: bind [::1]:0: " + error_text(errno);
  }
  if (::listen(fd.get(), 1) != 0) return "cannot listen on [::1]: " + error_text(errno);
  return "";
}

std::string udp_receive_buffer_missing(size_t bytes) {
  ScopedFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return "no UDP socket here: " + error_text(errno);
  const int want = static_cast<int>(bytes);
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0) {
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
  }
  int got = 0;
  socklen_t len = sizeof got;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &got, &len) != 0) {
    return "SO_RCVBUF cannot be read: " + error_text(errno);
  }
  if (static_cast<size_t>(got) >= bytes) return "";
  return "a UDP receive buffer of " + std::to_string(bytes) + " bytes is capped at " +
         std::to_string(got) +
         " here (needs root or net.core.rmem_max >= " + std::to_string(bytes / 2) + ")";
}

}  // namespace ddft::testing
