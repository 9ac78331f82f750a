// UDP transport (simulator mode): Boost.Asio opens, binds and connects the socket; the hot path
// uses batched sendmmsg/recvmmsg on its descriptor.
//
// A UdpSink or UdpSource owns its socket and is used by one thread; peer() and link_drops() may
// be called from any. The constructors throw std::runtime_error with one line (a destination
// that cannot be resolved, a port in use); once open, send() and receive() report errors as
// std::error_code.
#pragma once

#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/transport.hpp"

namespace ddft::common {

// What the kernel granted for a socket buffer, so the programs can warn when it is capped.
struct SocketBufferReport {
  size_t requested = 0;
  size_t granted = 0;   // as the kernel reports it (Linux doubles the value set)
  bool forced = false;  // SO_{RCV,SND}BUFFORCE succeeded (root / CAP_NET_ADMIN)
  // Returns "" when the request was met, else one line naming the sysctl that raises the cap.
  std::string warning(const char* direction) const;
};

// Datagrams one UDP_SEGMENT send carries at most (the kernel's UDP_MAX_SEGMENTS is 64 before
// Linux 6.9, 128 since), and their bytes at most (a UDP datagram's 65,507, less a margin).
inline constexpr size_t kGsoMaxSegments = 64;
inline constexpr size_t kGsoMaxBytes = 65000;

// Sends to one destination through a connected UDP socket.
class UdpSink final : public DatagramSink {
 public:
  // Resolves and connects to `dest`; asks for a send buffer of `sndbuf_bytes`. `gso`: send each
  // run of datagrams of one size as one UDP_SEGMENT (generic segmentation offload) message when
  // the kernel takes the option: the kernel, or the NIC, cuts it into the same datagrams on the
  // wire, for one trip down the stack instead of one per datagram. Throws std::runtime_error
  // with a one-line reason when the destination cannot be used.
  UdpSink(const Endpoint& dest, size_t sndbuf_bytes, bool gso = false);
  // A send the path refuses with GSO (EIO: a NIC without checksum offload; EINVAL: a datagram
  // over the path's MTU) switches GSO off for good, with one log line, and goes again without.
  [[nodiscard]] std::error_code send(std::span<const std::span<const uint8_t>> datagrams,
                                     size_t* sent) override;
  const SocketBufferReport& buffer_report() const { return report_; }
  // True while sends use UDP_SEGMENT.
  bool gso() const { return gso_; }
  // The socket, for options a test or a caller sets itself.
  int fd() { return socket_.native_handle(); }

 private:
  // Fills msgs_ for `datagrams`: with GSO one message per run of equal sizes (its last datagram
  // may be shorter), else one per datagram; counts_[k] is how many datagrams message k carries.
  size_t build_messages(std::span<const std::span<const uint8_t>> datagrams);

  boost::asio::io_context io_;
  boost::asio::ip::udp::socket socket_;
  SocketBufferReport report_;
  bool gso_ = false;
  std::vector<struct mmsghdr> msgs_;
  std::vector<struct iovec> iovs_;
  std::vector<size_t> counts_;
  struct Control {
    alignas(struct cmsghdr) char bytes[CMSG_SPACE(sizeof(uint16_t))];
  };
  std::vector<Control> controls_;
};

// Receives on one bound UDP socket.
class UdpSource final : public DatagramSource {
 public:
  // Binds `listen`; asks for a receive buffer of `rcvbuf_bytes`. `gro`: asks the kernel to
  // hand over runs of datagrams of one size as one bundle (UDP_GRO), when it takes the option.
  // Throws std::runtime_error with a one-line reason (e.g. the port is in use).
  UdpSource(const Endpoint& listen, size_t rcvbuf_bytes, bool gro = false);
  // One datagram per buffer (a GRO socket's bundles are not split here: use receive_bundles()).
  [[nodiscard]] std::error_code receive(std::span<const std::span<uint8_t>> bufs,
                                        std::span<size_t> lens, size_t* count,
                                        std::chrono::milliseconds timeout) override;
  size_t max_bundle() const override { return gro_ ? kMaxBundle : 0; }
  [[nodiscard]] std::error_code receive_bundles(std::span<const std::span<uint8_t>> bufs,
                                                std::span<size_t> lens, std::span<size_t> segs,
                                                size_t* count,
                                                std::chrono::milliseconds timeout) override;
  // True when the kernel bundles datagrams for this socket (UDP_GRO).
  bool gro() const { return gro_; }
  // A bundle's largest size: a UDP datagram's.
  static constexpr size_t kMaxBundle = 65535;
  const SocketBufferReport& buffer_report() const { return report_; }
  // The bound port (useful when 0 was asked for).
  uint16_t local_port() const;
  // Datagrams the kernel dropped on this socket since it opened (the "drops" column of
  // /proc/net/udp{,6} for the socket's inode). Returns -1 when unknown.
  long link_drops() const override;
  std::string peer() const override;

 private:
  boost::asio::io_context io_;
  boost::asio::ip::udp::socket socket_;
  SocketBufferReport report_;
  std::vector<struct mmsghdr> msgs_;
  std::vector<struct iovec> iovs_;
  std::vector<sockaddr_storage> names_;
  bool gro_ = false;
  struct GroControl {
    alignas(struct cmsghdr) char bytes[CMSG_SPACE(sizeof(int))];
  };
  std::vector<GroControl> controls_;
  // recvmmsg into bufs, waiting up to `timeout`; with `segs`, each message's GRO segment size.
  [[nodiscard]] std::error_code receive_some(std::span<const std::span<uint8_t>> bufs,
                                             std::span<size_t> lens, size_t* segs, size_t* count,
                                             std::chrono::milliseconds timeout);
  void note_peer(int n);
  sockaddr_storage last_peer_{};  // receive thread only
  socklen_t last_peer_len_ = 0;
  mutable std::mutex peer_mu_;
  std::string peer_text_;  // guarded by peer_mu_
};

}  // namespace ddft::common
