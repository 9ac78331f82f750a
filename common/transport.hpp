// The link between the programs, seen as a stream of datagrams. UDP (simulator mode) implements it
// here; the card-driver device transport implements the same interfaces.
//
// A sink or a source is used by one thread, but for the calls that say "any thread". Send and
// receive errors are std::error_code; a full link buffer is std::errc::no_buffer_space, for the
// caller to wait and retry (a sink drops nothing). The parse functions return false with a
// reason; nothing here throws.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace ddft::common {

// --transport: what carries the datagrams. Parsed once by each program's config.
enum class TransportKind {
  kUdp,     // simulator mode: a plain NIC
  kDevice,  // the diode card driver's node
};
// "udp" or "device", as --transport spells it.
std::string_view transport_name(TransportKind kind);
// Parses a --transport value; false (and *kind untouched) for anything else.
[[nodiscard]] bool parse_transport(std::string_view text, TransportKind* kind);

// Sends datagrams into the link. One thread owns an instance.
class DatagramSink {
 public:
  virtual ~DatagramSink() = default;
  // Sends `datagrams` in order. On return *sent says how many went out. A full link buffer
  // (EAGAIN/ENOBUFS) is returned as std::errc::no_buffer_space with *sent < size: the caller
  // waits (BUFF_FULL_DELAY) and retries the rest; nothing is dropped here.
  [[nodiscard]] virtual std::error_code send(std::span<const std::span<const uint8_t>> datagrams,
                                             size_t* sent) = 0;
};

// Calls fn(datagram, real_len) for each datagram of a receive buffer `buf` that got `len` bytes
// (more than buf.size(): truncated) with segment size `seg` (0: one datagram).
template <typename Fn>
void for_each_datagram(std::span<const uint8_t> buf, size_t len, size_t seg, Fn&& fn) {
  if (seg == 0 || len <= seg || len > buf.size()) {
    fn(buf.first(std::min(len, buf.size())), len);
    return;
  }
  for (size_t off = 0; off < len; off += seg) {
    const size_t n = std::min(seg, len - off);
    fn(buf.subspan(off, n), n);
  }
}

// Receives datagrams from the link. One thread owns an instance.
class DatagramSource {
 public:
  virtual ~DatagramSource() = default;
  // Waits up to `timeout` for at least one datagram, then receives as many as are ready, up to
  // bufs.size(), datagram i into bufs[i]. *count says how many; lens[i] is the datagram's real
  // length, which is larger than bufs[i].size() when it was truncated. A timeout is not an error
  // (*count = 0).
  [[nodiscard]] virtual std::error_code receive(std::span<const std::span<uint8_t>> bufs,
                                                std::span<size_t> lens, size_t* count,
                                                std::chrono::milliseconds timeout) = 0;
  // The most one receive buffer may get when the source coalesces datagrams of one size into
  // bundles (UDP GRO), 0 when each buffer gets one datagram.
  virtual size_t max_bundle() const { return 0; }
  // As receive(), where buffer i (of max_bundle() bytes) may get a bundle: datagrams of segs[i]
  // bytes back to back, the last one possibly shorter (segs[i] 0: one datagram). Without
  // bundles, receive() with every segs[i] 0.
  [[nodiscard]] virtual std::error_code receive_bundles(std::span<const std::span<uint8_t>> bufs,
                                                        std::span<size_t> lens,
                                                        std::span<size_t> segs, size_t* count,
                                                        std::chrono::milliseconds timeout) {
    const auto ec = receive(bufs, lens, count, timeout);
    for (size_t i = 0; i < *count; ++i) segs[i] = 0;
    return ec;
  }
  // Datagrams the link layer dropped before they reached this program (a full socket buffer),
  // or -1 when the transport cannot tell.
  virtual long link_drops() const { return -1; }
  // Where the latest datagrams came from ("192.0.2.7:40000"), "" when the transport cannot tell
  // or nothing came yet. Any thread.
  virtual std::string peer() const { return ""; }
};

// "HOST:PORT", "[v6addr]:PORT". Host may be a name.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const;
};

// Parses `text` into *out. On failure returns false and sets *why to a one-line reason.
[[nodiscard]] bool parse_endpoint(std::string_view text, Endpoint* out, std::string* why);

}  // namespace ddft::common
