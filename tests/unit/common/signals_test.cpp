// StopOnSignals for real, in forked children (signals are process-wide): SIGTERM and SIGINT
// request a stop on the stop source it was given, SIGHUP reopens the log instead; once it is gone
// the default action is back. Bounded: a child that hangs is ended by its alarm() (SIGALRM).
#include "common/signals.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string_view>
#include <thread>

namespace ddft::common {
namespace {

// Child exit codes.
constexpr int kStopped = 10;  // the stop was requested
constexpr int kNotStopped = 11;

// Forks a child that installs StopOnSignals, tells the parent it is ready through a pipe, and
// waits (the child's alarm() bounds it) for a stop: it exits kStopped. The parent sends `sig`
// once the child is ready and returns its wait status.
int run_child_and_signal(int sig) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::alarm(20);
    std::stop_source stop;
    StopOnSignals handler(stop);
    const char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    while (!stop.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::_exit(kStopped);
  }
  ::close(ready[1]);
  char c = 0;
  const bool up = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  if (up) ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(StopOnSignals, SigtermRequestsAStop) {
  const int status = run_child_and_signal(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), kStopped);
}

TEST(StopOnSignals, SigintRequestsAStop) {
  const int status = run_child_and_signal(SIGINT);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), kStopped);
}

// A log sink that notes the line SIGHUP's handler logs (read from another thread: atomic).
class ReopenedSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::atomic<bool> seen{false};

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (text == "Info: SIGHUP: log file reopened") seen = true;
  }
  void flush_() override {}
};

// SIGHUP reopens the log file and logs that it did; it does not stop anything.
TEST(StopOnSignals, SighupReopensTheLogAndDoesNotStop) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(20);
    auto sink = std::make_shared<ReopenedSink>();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("child", sink));
    std::stop_source stop;
    StopOnSignals handler(stop);
    ::raise(SIGHUP);
    // The handler's thread logs once it has reopened the log (the alarm bounds this wait).
    while (!sink->seen) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::_exit(stop.stop_requested() ? kStopped : kNotStopped);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), kNotStopped);
}

// After the handler is destroyed, SIGTERM is no longer caught: it ends the process.
TEST(StopOnSignals, WhenItIsGoneTheDefaultActionIsBack) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(20);
    {
      std::stop_source stop;
      StopOnSignals handler(stop);
    }
    ::raise(SIGTERM);
    ::_exit(kNotStopped);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
}  // namespace ddft::common
