// Test helper: runs a program with its output captured in a file, with a bounded wait.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ddft::testing {

class Process {
 public:
  // Starts argv[0] with stdout and stderr appended to `output`. Throws on failure.
  Process(const std::vector<std::string>& argv, const std::filesystem::path& output);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Waits up to `timeout`; returns the exit code, 128 + signal when killed by one, or -1 when it
  // did not end in time (it is then killed with SIGKILL).
  int wait(std::chrono::milliseconds timeout);
  void signal(int sig);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Runs a program to completion (bounded) and returns its exit code as Process::wait does.
int run(const std::vector<std::string>& argv, const std::filesystem::path& output,
        std::chrono::milliseconds timeout = std::chrono::seconds(120));

std::string read_file(const std::filesystem::path& p);
// True when both files exist and hold the same bytes.
bool same_content(const std::filesystem::path& a, const std::filesystem::path& b);
// Writes `size` pseudo-random bytes (from `seed`) to `p`, creating its folders.
void write_pattern(const std::filesystem::path& p, uint64_t size, uint64_t seed);
// The failure records (*.json) in the receiver's failed folder below `out`.
std::vector<std::filesystem::path> failed_records(const std::filesystem::path& out);
// A UDP port on 127.0.0.1 that was free a moment ago.
uint16_t free_udp_port();
// Polls `pred` every 20 ms until it holds or `timeout` passes; returns its last value.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    struct timespec ts {
      0, 20'000'000
    };
    nanosleep(&ts, nullptr);
  }
  return pred();
}

}  // namespace ddft::testing
