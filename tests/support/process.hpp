// Test helper: runs a program with its output captured in a file, with a bounded wait.
#pragma once

#include <sys/types.h>

#include <chrono>
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

}  // namespace ddft::testing
