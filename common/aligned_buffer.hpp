// Page-aligned memory mapped once (mmap), for O_DIRECT and io_uring fixed buffers.
//
// An AlignedBuffer owns its mapping and unmaps it when destroyed (move-only). Its bytes carry no
// lock: the threads that share them agree on who writes what (a BufferPool's slots, a ring's
// producer and consumer). The constructor throws std::bad_alloc when the memory cannot be
// mapped; nothing else throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ddft::common {

// Owns `size` bytes of page-aligned, zero-filled anonymous memory. Move-only.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Throws std::bad_alloc when the memory cannot be mapped. `populate` touches every page now so
  // that the hot path never takes a page fault.
  explicit AlignedBuffer(size_t size, bool populate = false);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_, size_}; }
  // Locks the pages in RAM (mlock). False, with the kernel's reason (strerror) in *why, when it
  // refuses.
  [[nodiscard]] bool lock(std::string* why);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool locked_ = false;
};

// Fills `bytes` with a fixed xorshift64 sequence: fast, and incompressible, so that a compressing
// file system cannot cheat on it. Buffers reused over a long transfer still repeat: a
// deduplicating store could.
void fill_pseudo_random(std::span<uint8_t> bytes);

}  // namespace ddft::common
