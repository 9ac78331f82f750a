// A sliding window over sequence numbers: which of the last `Size` numbers below the highest seen
// have been taken. The loss counter (SeqCounter) and the replay guard (ReplayGuard) both use it.
//
// A plain value: no I/O, one thread; nothing throws.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace ddft::receiver {

template <uint64_t Size>
class SeqWindow {
  static_assert(Size % 64 == 0 && Size > 0);

 public:
  enum class Take {
    kNew,     // not seen before: now taken
    kSeen,    // taken before, within the window
    kTooOld,  // Size or more below the highest seen: cannot tell
  };

  Take take(uint64_t seq) {
    if (!started_) {
      started_ = true;
      max_ = seq;
    } else if (seq > max_) {
      // Clear the bits of the numbers skipped over (the window reuses them). Counting down from
      // seq by k never wraps, even for seq = UINT64_MAX.
      const uint64_t gap = std::min<uint64_t>(seq - max_, Size);
      for (uint64_t k = 0; k < gap; ++k) word(seq - k) &= ~bit(seq - k);
      max_ = seq;
    } else if (max_ - seq >= Size) {
      return Take::kTooOld;
    }
    if (word(seq) & bit(seq)) return Take::kSeen;
    word(seq) |= bit(seq);
    return Take::kNew;
  }
  bool started() const { return started_; }
  uint64_t max() const { return max_; }  // the highest number seen (when started)

 private:
  uint64_t& word(uint64_t s) { return bits_[(s % Size) / 64]; }
  static uint64_t bit(uint64_t s) { return uint64_t{1} << (s % 64); }

  bool started_ = false;
  uint64_t max_ = 0;
  std::array<uint64_t, Size / 64> bits_{};
};

}  // namespace ddft::receiver
