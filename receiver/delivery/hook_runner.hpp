// --on-complete: runs the operator's command on each delivered file, off the receive path.
//
//   writer thread ──enqueue()──> [queue, at most max_pending] ──> threads "dd-hook1".."dd-hookN"
//   (takes a lock, never waits    full: the file is logged           (--on-complete-jobs): each
//    for a hook)                  "not run (queue full)"             posix_spawn()s /bin/sh in a
//                                                                    process group of its own,
//                                                                    keeps the tail of its output,
//                                                                    and kills the group at the
//                                                                    timeout (TERM, then KILL)
//
// The command never sees the path as shell text: it runs as
//   /bin/sh -c 'CMD "$@"' ddft-on-complete FINAL_PATH
// so CMD may be a shell snippet and the path is its last argument, with DDFT_PATH,
// DDFT_REL_PATH, DDFT_SIZE, DDFT_KEY and DDFT_SESSION in its environment. stdin is /dev/null, and
// no descriptor of the receiver reaches it. Each outcome is one log line:
//   Info: on-complete "REL_PATH": exit 0 (1.234 s)
//   Warn: on-complete "REL_PATH": exit 3 (0.012 s; output: "last\nlines")
//   Warn: on-complete "REL_PATH": killed by signal 9 (SIGKILL, 0.012 s; output: "...")
//   Warn: on-complete "REL_PATH": timed out after 300 s (process group killed; output: "...")
//   Warn: on-complete "REL_PATH": not run (queue full: 10000 waiting; file: "FINAL_PATH")
// (not run also for "receiver stopping" and "cannot start /bin/sh: ..."). A command the shell
// runs that dies of a signal shows as the shell's exit 128 + N ("Killed" in the output); "killed
// by signal" is the shell itself killed. The output tail (last 3 lines, 200 bytes each) is
// logged on failure only. A hook never moves, removes or holds back the file: the file is
// delivered before its hook is queued.
//
// enqueue() and file_moved() from any thread (the writer's); the runner owns its queue, its
// threads and their child processes, and stop() (or the destructor) joins them. Nothing leaves a
// hook thread: a hook that cannot start or be watched is logged as its outcome.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.hpp"
#include "receiver/delivery/delivered_file.hpp"

namespace ddft::receiver {

struct HookOptions {
  std::string command;  // CMD; must not be empty
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
  std::chrono::nanoseconds kill_grace = std::chrono::seconds(5);  // SIGTERM to SIGKILL
  unsigned jobs = 1;                                              // hooks running at once
  size_t max_pending = 10000;                                     // queued, not yet started
  std::string shell = "/bin/sh";
};

// Totals since start, for the log's summary and the metrics. Written by the runner, read from
// any thread.
struct HookCounters {
  std::atomic<uint64_t> ok{0};         // exit status 0
  std::atomic<uint64_t> failed{0};     // another exit status, or killed by a signal
  std::atomic<uint64_t> timed_out{0};  // ran past the timeout and was killed
  std::atomic<uint64_t> not_run{0};    // queue full, receiver stopping, or could not start
};

class HookRunner {
 public:
  // Starts opts.jobs threads. Deadlines and durations come from `clock` (tests use a FakeClock
  // and advance it); the clock must outlive the runner.
  HookRunner(HookOptions opts, common::Clock& clock);
  // stop(), if not done yet.
  ~HookRunner();
  HookRunner(const HookRunner&) = delete;
  HookRunner& operator=(const HookRunner&) = delete;

  // Queues the hook of `file`. Never waits for a hook: with max_pending queued already, or once
  // stop() has begun, the file is logged as not run and counted. Thread-safe.
  void enqueue(const DeliveredFile& file);
  // A queued file was moved (--on-collision rename put a newer one of the same name in its
  // place): its hook, not started yet, gets the new path. Thread-safe.
  void file_moved(const std::string& from, const std::string& to);
  // Blocks until every queued hook has finished, or `stop` is requested (--once: the session is
  // over, its hooks still run). Returns true when idle.
  bool wait_idle(std::stop_token stop);
  // Takes no more hooks, lets the running ones finish (each up to its timeout), then logs every
  // file still queued as "not run (receiver stopping)" and a summary line. Idempotent.
  void stop();

  const HookCounters& counters() const { return counters_; }
  // Hooks queued and not started.
  size_t pending() const;
  // True once stop() has begun.
  bool stopping() const;

 private:
  void worker();
  void run_one(const DeliveredFile& file);
  void not_run(const DeliveredFile& file, const std::string& why);

  const HookOptions opts_;
  common::Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;       // a job was queued, or stopping
  std::condition_variable_any idle_cv_;  // a job finished
  std::deque<DeliveredFile> queue_;      // guarded by mu_
  unsigned running_ = 0;                 // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  bool stopped_ = false;                 // guarded by mu_
  HookCounters counters_;
  std::vector<std::jthread> threads_;
};

}  // namespace ddft::receiver
