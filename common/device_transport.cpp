#include "common/device_transport.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/protocol.hpp"

namespace ddft::common {
namespace {
constexpr size_t kMaxFrame = kHeaderSize + 0xFFFF;
constexpr size_t kStreamBuffer = 1 << 20;
constexpr int kStallPolls = 3;
}  // namespace

DeviceSink::DeviceSink(const std::string& path) : path_(path) {
  fd_.reset(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd_) {
    const int err = errno;
    throw std::runtime_error(fmt::format(
        "cannot open device '{}' for sending: {}", path,
        err == ENXIO ? "no reader has it open (start dd_file_receive first)" : std::strerror(err)));
  }
}

std::error_code DeviceSink::finish_partial(std::span<const uint8_t> frame, size_t written) {
  // A frame must never be cut: the reader finds frames by their headers. Wait for room.
  while (written < frame.size()) {
    const ssize_t n = ::write(fd_.get(), frame.data() + written, frame.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR || errno == ENOBUFS)) {
      pollfd p{fd_.get(), POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else {
      return {n < 0 ? errno : EIO, std::system_category()};
    }
  }
  return {};
}

std::error_code DeviceSink::send(std::span<const std::span<const uint8_t>> datagrams,
                                 size_t* sent) {
  *sent = 0;
  for (const auto& d : datagrams) {
    ssize_t n = ::write(fd_.get(), d.data(), d.size());
    while (n < 0 && errno == EINTR) n = ::write(fd_.get(), d.data(), d.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
        return std::make_error_code(std::errc::no_buffer_space);
      }
      return {errno, std::system_category()};
    }
    if (static_cast<size_t>(n) < d.size()) {
      if (auto ec = finish_partial(d, static_cast<size_t>(n))) return ec;
    }
    ++*sent;
  }
  return {};
}

DeviceSource::DeviceSource(const std::string& path) : path_(path), stream_(kStreamBuffer) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw std::runtime_error(
        fmt::format("cannot open device '{}' for receiving: {}", path, std::strerror(errno)));
  }
  // A FIFO opened read-write never reports end of file when a sender closes it.
  const int mode = S_ISFIFO(st.st_mode) ? O_RDWR : O_RDONLY;
  fd_.reset(::open(path.c_str(), mode | O_NONBLOCK | O_CLOEXEC));
  if (!fd_) {
    throw std::runtime_error(
        fmt::format("cannot open device '{}' for receiving: {}", path, std::strerror(errno)));
  }
}

size_t DeviceSource::extract(std::span<const std::span<uint8_t>> bufs, std::span<size_t> lens,
                             size_t first) {
  size_t n = first;
  while (n < bufs.size() && end_ - begin_ >= kHeaderPrefixSize) {
    const uint8_t* p = stream_.data() + begin_;
    if (!has_magic(p)) {
      // Resynchronise: skip to the next "DDFT" (or keep the last 3 bytes, which may start one).
      size_t skip = 1;
      while (begin_ + skip + sizeof(kMagic) <= end_ && !has_magic(p + skip)) ++skip;
      begin_ += skip;
      skipped_bytes_ += skip;
      continue;
    }
    // A header that cannot be ours (version, type) is not waited for.
    if (!plausible_header_prefix(p)) {
      begin_ += 1;
      skipped_bytes_ += 1;
      continue;
    }
    const size_t frame = peek_datagram_size(p);
    if (end_ - begin_ < frame) break;  // the rest has not arrived yet
    Packet pkt;
    if (decode_packet({p, frame}, &pkt) != DecodeStatus::kOk) {
      begin_ += 1;  // a magic inside damaged bytes: look for the next one
      skipped_bytes_ += 1;
      continue;
    }
    std::memcpy(bufs[n].data(), p, std::min(frame, bufs[n].size()));
    lens[n] = frame;
    begin_ += frame;
    ++n;
  }
  return n - first;
}

std::error_code DeviceSource::receive(std::span<const std::span<uint8_t>> bufs,
                                      std::span<size_t> lens, size_t* count,
                                      std::chrono::milliseconds timeout) {
  *count = extract(bufs, lens, 0);
  bool waited = false;
  while (*count < bufs.size()) {
    if (begin_ > 0 && (stream_.size() - end_ < kMaxFrame)) {
      std::memmove(stream_.data(), stream_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    const ssize_t r = ::read(fd_.get(), stream_.data() + end_, stream_.size() - end_);
    if (r > 0) {
      stalled_polls_ = 0;
      end_ += static_cast<size_t>(r);
      *count += extract(bufs, lens, *count);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      // End of file: the driver went away. Wait out the timeout rather than spin.
      if (*count == 0) ::poll(nullptr, 0, static_cast<int>(timeout.count()));
      break;
    }
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return {errno, std::system_category()};
    // Nothing more to read now: return what we have, or wait once for data.
    if (*count > 0 || waited) break;
    pollfd p{fd_.get(), POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (pr < 0 && errno != EINTR) return {errno, std::system_category()};
    if (pr == 0 && end_ > begin_ && ++stalled_polls_ >= kStallPolls) {
      // Several timeouts in a row without a byte while a frame is incomplete: its length field
      // was damaged (a real frame's bytes follow at once, even from a descheduled sender).
      // Skip a byte and look for the next magic, so the good frames behind it are not held.
      stalled_polls_ = 0;
      ++begin_;
      ++skipped_bytes_;
      *count += extract(bufs, lens, *count);
      break;
    }
    if (pr <= 0) break;
    waited = true;
  }
  return {};
}

}  // namespace ddft::common
