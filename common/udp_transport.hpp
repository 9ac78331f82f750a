// UDP transport (simulator mode): Boost.Asio opens, binds and connects the socket; the hot path
// uses batched sendmmsg/recvmmsg on its descriptor.
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

// Sends to one destination through a connected UDP socket.
class UdpSink final : public DatagramSink {
 public:
  // Resolves and connects to `dest`; asks for a send buffer of `sndbuf_bytes`. Throws
  // std::runtime_error with a one-line reason when the destination cannot be used.
  UdpSink(const Endpoint& dest, size_t sndbuf_bytes);
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) override;
  const SocketBufferReport& buffer_report() const { return report_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::udp::socket socket_;
  SocketBufferReport report_;
  std::vector<struct mmsghdr> msgs_;
  std::vector<struct iovec> iovs_;
};

// Receives on one bound UDP socket.
class UdpSource final : public DatagramSource {
 public:
  // Binds `listen`; asks for a receive buffer of `rcvbuf_bytes`. Throws std::runtime_error with a
  // one-line reason (e.g. the port is in use).
  UdpSource(const Endpoint& listen, size_t rcvbuf_bytes);
  std::error_code receive(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens,
                          size_t* count, std::chrono::milliseconds timeout) override;
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
  sockaddr_storage last_peer_{};  // receive thread only
  socklen_t last_peer_len_ = 0;
  mutable std::mutex peer_mu_;
  std::string peer_text_;  // guarded by peer_mu_
};

}  // namespace ddft::common
