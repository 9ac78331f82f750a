#include "common/aligned_buffer.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

namespace ddft::common {

AlignedBuffer::AlignedBuffer(size_t size, bool populate) : size_(size) {
  if (size == 0) return;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
}

AlignedBuffer::~AlignedBuffer() {
  if (data_ != nullptr) {
    if (locked_) ::munlock(data_, size_);
    ::munmap(data_, size_);
  }
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      locked_(std::exchange(o.locked_, false)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
  if (this != &o) {
    AlignedBuffer tmp(std::move(o));
    std::swap(data_, tmp.data_);
    std::swap(size_, tmp.size_);
    std::swap(locked_, tmp.locked_);
  }
  return *this;
}

bool AlignedBuffer::lock(std::string* why) {
  if (data_ == nullptr || locked_) return true;
  if (::mlock(data_, size_) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  locked_ = true;
  return true;
}

void fill_pseudo_random(std::span<uint8_t> bytes) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(bytes.data() + i, &x, 8);
  }
  for (; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(x >> (8 * (i % 8)));
}

}  // namespace ddft::common
