// Test helper: wait, bounded, for a condition that another process or thread brings about.
#pragma once

#include <chrono>
#include <thread>

namespace ddft::testing {

// Polls `pred` every 20 ms until it holds or `timeout` passes; returns its last value.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

}  // namespace ddft::testing
