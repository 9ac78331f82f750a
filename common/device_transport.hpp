// The card-driver transport: packets go through the Owl v7 driver's device node (or anything that
// behaves like one: a character device, a FIFO standing in for it in tests).
//
// What it expects of a driver (an adapter for another diode card must provide exactly this):
//  - Send side: the node opens with open(O_WRONLY | O_NONBLOCK). Each write() carries one whole
//    datagram (a frame: the 32-byte ddft header, whose bytes 6-7 hold the payload length, then
//    the payload). The driver accepts the whole frame or refuses it with EAGAIN/ENOBUFS when its
//    buffer is full; the sender then waits BUFF_FULL_DELAY ms and writes the same frame again.
//    (A partial write, which a FIFO may do, is completed before anything else is written.)
//  - Receive side: the node opens with open(O_RDONLY | O_NONBLOCK) (a FIFO: O_RDWR, so that the
//    sender closing it is not an end of file) and is poll()able for POLLIN. read() returns frame
//    bytes in order; frame boundaries need not match read() boundaries: frames are found by their
//    header (magic "DDFT", length), and bytes that do not form a valid frame (checksum) are
//    skipped up to the next magic, counted and reported.
//  - Frames are at most 32 + 65535 bytes. Nothing else is in the stream.
//
// A DeviceSink or DeviceSource owns its descriptor and is used by one thread (its lane's
// transmit or receive thread). The constructors throw std::runtime_error with one line when the
// node cannot be opened; once open, send() and receive() report errors as std::error_code.
#pragma once

#include <string>
#include <vector>

#include "common/fd.hpp"
#include "common/transport.hpp"

namespace ddft::common {

class DeviceSink final : public DatagramSink {
 public:
  // Opens `path` for writing. Throws std::runtime_error with a one-line reason.
  explicit DeviceSink(const std::string& path);
  [[nodiscard]] std::error_code send(std::span<const std::span<const uint8_t>> datagrams,
                                     size_t* sent) override;

 private:
  [[nodiscard]] std::error_code finish_partial(std::span<const uint8_t> frame, size_t written);
  std::string path_;
  UniqueFd fd_;
};

class DeviceSource final : public DatagramSource {
 public:
  // Opens `path` for reading. Throws std::runtime_error with a one-line reason.
  explicit DeviceSource(const std::string& path);
  [[nodiscard]] std::error_code receive(std::span<const std::span<uint8_t>> bufs,
                                        std::span<size_t> lens, size_t* count,
                                        std::chrono::milliseconds timeout) override;
  // Bytes skipped because they did not form a valid frame.
  long link_drops() const override { return static_cast<long>(skipped_bytes_); }

 private:
  // Takes whole frames from the front of stream_ into bufs; returns how many.
  size_t extract(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens, size_t first);

  std::string path_;
  UniqueFd fd_;
  std::vector<uint8_t> stream_;
  size_t begin_ = 0;  // first unread byte in stream_
  size_t end_ = 0;    // one past the last byte read
  uint64_t skipped_bytes_ = 0;
  int stalled_polls_ = 0;  // timeouts in a row with an incomplete frame pending
};

}  // namespace ddft::common
