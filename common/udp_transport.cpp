#include "common/udp_transport.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ddft::common {
namespace asio = boost::asio;
using asio::ip::udp;

namespace {

// Sets a socket buffer size, preferring the FORCE variant that root may use past the sysctl cap.
SocketBufferReport set_buffer(int fd, int force_opt, int opt, size_t bytes) {
  SocketBufferReport r;
  r.requested = bytes;
  if (bytes > 0) {
    const int v = static_cast<int>(std::min<size_t>(bytes, 1u << 30));
    if (::setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof v) == 0) {
      r.forced = true;
    } else {
      ::setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v);
    }
  }
  int got = 0;
  socklen_t len = sizeof got;
  ::getsockopt(fd, SOL_SOCKET, opt, &got, &len);
  r.granted = static_cast<size_t>(got);
  return r;
}

udp::endpoint resolve(asio::io_context& io, const Endpoint& ep, bool passive) {
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(ep.host, ec);
  if (!ec) return udp::endpoint(addr, ep.port);
  udp::resolver resolver(io);
  auto results =
      passive ? resolver.resolve(ep.host, std::to_string(ep.port), udp::resolver::passive, ec)
              : resolver.resolve(ep.host, std::to_string(ep.port), ec);
  if (ec || results.empty()) {
    throw std::runtime_error(
        fmt::format("cannot resolve '{}': {}", ep.host, ec ? ec.message() : "no address"));
  }
  return results.begin()->endpoint();
}

void prepare_batch(size_t n, std::vector<mmsghdr>& msgs, std::vector<iovec>& iovs) {
  if (msgs.size() < n) {
    msgs.resize(n);
    iovs.resize(n);
  }
}

}  // namespace

std::string SocketBufferReport::warning(const char* direction) const {
  // Linux reports twice the value that was set; anything at or above the request is fine.
  if (requested == 0 || granted >= requested) return "";
  const char* sysctl =
      std::string_view(direction) == "receive" ? "net.core.rmem_max" : "net.core.wmem_max";
  return fmt::format(
      "the kernel capped the socket {} buffer at {} bytes (asked for {}); run as root, or raise "
      "the cap with: sysctl -w {}={}",
      direction, granted, requested, sysctl, requested);
}

UdpSink::UdpSink(const Endpoint& dest, size_t sndbuf_bytes, bool gso) : socket_(io_) {
  const udp::endpoint target = resolve(io_, dest, false);
  boost::system::error_code ec;
  socket_.open(target.protocol(), ec);
  if (!ec) socket_.connect(target, ec);
  if (ec) {
    throw std::runtime_error(fmt::format("cannot send to {}: {}", dest.to_string(), ec.message()));
  }
  report_ = set_buffer(socket_.native_handle(), SO_SNDBUFFORCE, SO_SNDBUF, sndbuf_bytes);
  if (gso) {
    // The kernel takes UDP_SEGMENT since Linux 4.18: the option reads back where it exists.
    int size = 0;
    socklen_t len = sizeof size;
    gso_ = ::getsockopt(socket_.native_handle(), SOL_UDP, UDP_SEGMENT, &size, &len) == 0;
  }
}

size_t UdpSink::build_messages(std::span<const std::span<const uint8_t>> datagrams) {
  const size_t n = datagrams.size();
  prepare_batch(n, msgs_, iovs_);
  if (counts_.size() < n) {
    counts_.resize(n);
    controls_.resize(n);
  }
  size_t messages = 0;
  for (size_t i = 0; i < n;) {
    const size_t seg = datagrams[i].size();
    size_t count = 0;
    size_t bytes = 0;
    // A run: datagrams of the first one's size, and at most one shorter (never empty: an empty
    // segment does not exist) to end it. The first is always taken, whatever its size.
    while (i + count < n && count < (gso_ ? kGsoMaxSegments : 1)) {
      const size_t len = datagrams[i + count].size();
      if (count > 0 && (len > seg || len == 0 || bytes + len > kGsoMaxBytes)) break;
      bytes += len;
      ++count;
      if (len < seg) break;
    }
    for (size_t k = 0; k < count; ++k) {
      iovs_[i + k].iov_base = const_cast<uint8_t*>(datagrams[i + k].data());
      iovs_[i + k].iov_len = datagrams[i + k].size();
    }
    mmsghdr& m = msgs_[messages];
    m = {};
    m.msg_hdr.msg_iov = &iovs_[i];
    m.msg_hdr.msg_iovlen = count;
    if (count > 1) {
      Control& c = controls_[messages];
      m.msg_hdr.msg_control = c.bytes;
      m.msg_hdr.msg_controllen = sizeof c.bytes;
      cmsghdr* cm = CMSG_FIRSTHDR(&m.msg_hdr);
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const auto size = static_cast<uint16_t>(seg);
      std::memcpy(CMSG_DATA(cm), &size, sizeof size);
    }
    counts_[messages++] = count;
    i += count;
  }
  return messages;
}

std::error_code UdpSink::send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) {
  *sent = 0;
  const size_t messages = build_messages(datagrams);
  const int fd = socket_.native_handle();
  size_t done = 0;
  while (done < messages) {
    const int n = ::sendmmsg(fd, msgs_.data() + done, static_cast<unsigned>(messages - done), 0);
    if (n > 0) {
      for (size_t k = done; k < done + static_cast<size_t>(n); ++k) *sent += counts_[k];
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
      return std::make_error_code(std::errc::no_buffer_space);
    }
    // A connected UDP socket reports an earlier ICMP "port unreachable" as ECONNREFUSED on the
    // next send. On a diode there is no receiver feedback; the datagram itself was not sent, so
    // retry it once rather than losing it.
    if (n < 0 && errno == ECONNREFUSED) continue;
    if (n < 0 && (errno == EIO || errno == EINVAL) && counts_[done] > 1) {
      // Refused before anything of it went out: the same datagrams go again, one by one.
      const int err = errno;
      spdlog::warn(
          "Warn: UDP segmentation offload switched off: a segmented send failed ({}); "
          "sending datagram by datagram from now on",
          std::strerror(err));
      gso_ = false;
      size_t more = 0;
      const auto ec = send(datagrams.subspan(*sent), &more);
      *sent += more;
      return ec;
    }
    return std::error_code(n < 0 ? errno : EIO, std::system_category());
  }
  return {};
}

UdpSource::UdpSource(const Endpoint& listen, size_t rcvbuf_bytes, bool gro) : socket_(io_) {
  const udp::endpoint local = resolve(io_, listen, true);
  boost::system::error_code ec;
  socket_.open(local.protocol(), ec);
  if (!ec) socket_.bind(local, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}: {}", listen.to_string(), ec.message()));
  }
  report_ = set_buffer(socket_.native_handle(), SO_RCVBUFFORCE, SO_RCVBUF, rcvbuf_bytes);
  if (gro) {
    const int on = 1;
    gro_ = ::setsockopt(socket_.native_handle(), SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
  }
}

uint16_t UdpSource::local_port() const { return socket_.local_endpoint().port(); }

std::error_code UdpSource::receive(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens,
                                   size_t* count, std::chrono::milliseconds timeout) {
  return receive_some(bufs, lens, nullptr, count, timeout);
}

std::error_code UdpSource::receive_bundles(std::span<const std::span<uint8_t>> bufs,
                                           std::span<size_t> lens, std::span<size_t> segs,
                                           size_t* count, std::chrono::milliseconds timeout) {
  return receive_some(bufs, lens, segs.data(), count, timeout);
}

std::error_code UdpSource::receive_some(std::span<const std::span<uint8_t>> bufs,
                                        std::span<size_t> lens, size_t* segs, size_t* count,
                                        std::chrono::milliseconds timeout) {
  *count = 0;
  const int fd = socket_.native_handle();
  prepare_batch(bufs.size(), msgs_, iovs_);
  if (names_.size() < bufs.size()) names_.resize(bufs.size());
  if (segs != nullptr && controls_.size() < bufs.size()) controls_.resize(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    iovs_[i].iov_base = bufs[i].data();
    iovs_[i].iov_len = bufs[i].size();
    msgs_[i] = {};
    msgs_[i].msg_hdr.msg_iov = &iovs_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
    msgs_[i].msg_hdr.msg_name = &names_[i];
    msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    if (segs != nullptr) {
      msgs_[i].msg_hdr.msg_control = controls_[i].bytes;
      msgs_[i].msg_hdr.msg_controllen = sizeof controls_[i].bytes;
    }
  }
  int n = ::recvmmsg(fd, msgs_.data(), static_cast<unsigned>(bufs.size()), MSG_DONTWAIT, nullptr);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    pollfd p{fd, POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (pr < 0 && errno != EINTR) return {errno, std::system_category()};
    if (pr <= 0) return {};
    n = ::recvmmsg(fd, msgs_.data(), static_cast<unsigned>(bufs.size()), MSG_DONTWAIT, nullptr);
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return {};
    return {errno, std::system_category()};
  }
  for (int i = 0; i < n; ++i) {
    // MSG_TRUNC in msg_flags: the datagram was longer than the buffer; report it as longer so
    // the caller counts it as a bad length instead of decoding a cut packet.
    lens[i] = (msgs_[i].msg_hdr.msg_flags & MSG_TRUNC) ? bufs[i].size() + 1 : msgs_[i].msg_len;
    if (segs == nullptr) continue;
    // A bundle says its segment size in a UDP_GRO control message; a lone datagram has none.
    segs[i] = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msgs_[i].msg_hdr); c != nullptr;
         c = CMSG_NXTHDR(&msgs_[i].msg_hdr, c)) {
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int seg = 0;
        std::memcpy(&seg, CMSG_DATA(c), sizeof seg);
        if (seg > 0 && static_cast<size_t>(seg) < lens[i]) segs[i] = static_cast<size_t>(seg);
      }
    }
  }
  *count = static_cast<size_t>(n);
  if (n > 0) note_peer(n);
  return {};
}

// The sender's address, for the records of files a crash leaves behind: formatted only when it
// changes (one compare per batch).
void UdpSource::note_peer(int n) {
  const socklen_t len = msgs_[n - 1].msg_hdr.msg_namelen;
  const auto& name = names_[static_cast<size_t>(n - 1)];
  if (len == last_peer_len_ && std::memcmp(&name, &last_peer_, len) == 0) return;
  last_peer_ = name;
  last_peer_len_ = len;
  char host[INET6_ADDRSTRLEN] = "";
  std::string text;
  if (name.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(name);
    ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
    text = fmt::format("{}:{}", host, ntohs(a.sin_port));
  } else if (name.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(name);
    ::inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof host);
    text = fmt::format("[{}]:{}", host, ntohs(a.sin6_port));
  }
  std::lock_guard lock(peer_mu_);
  peer_text_ = std::move(text);
}

std::string UdpSource::peer() const {
  std::lock_guard lock(peer_mu_);
  return peer_text_;
}

long UdpSource::link_drops() const {
  struct stat st {};
  if (::fstat(const_cast<udp::socket&>(socket_).native_handle(), &st) != 0) return -1;
  const std::string inode = std::to_string(st.st_ino);
  for (const char* table : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::vector<std::string> f;
      for (std::string w; fields >> w;) f.push_back(w);
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
      if (f.size() >= 13 && f[9] == inode) return std::stol(f[12]);
    }
  }
  return -1;
}

}  // namespace ddft::common
