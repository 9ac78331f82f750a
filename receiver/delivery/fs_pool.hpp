// A small pool of threads for the file-system calls the writer thread must never wait on:
// creating folders and temporary files, renaming into place, flushing a file or a whole file
// system, moving failed files aside and writing their records, reading a file back to verify it.
//
// Why threads and not io_uring for these: each of them is a sequence of calls with checks in
// between (a folder walk with openat2(RESOLVE_BENEATH) and mkdir per component, a rename with
// the collision policy's RENAME_NOREPLACE retries, futimens then syncfs), some of which io_uring
// has no operation for (syncfs, futimens, fchmod); the kernel would run the ones it has on its
// own worker threads anyway, since they block in the file system. The data writes and the
// folder syncs stay in io_uring (common/block_io.hpp).
//
// A work item runs on a pool thread ("dd-fsop1".."dd-fsopN"); its `done` runs later on the thread
// that calls reap() (the writer thread), in the order the work finished. Work items may run in any
// order and at the same time: callers order dependent steps themselves (a step is posted from
// the previous step's `done`).
//
// The pool owns its threads (joined by its destructor) and the queued work; what a work item
// touches is its poster's to keep alive until its `done` runs. Work must not throw (a throw is
// caught and logged, and `done` still runs); reap() passes on what a `done` throws, the rest
// staying queued.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ddft::receiver {

class FsPool {
 public:
  // Starts `threads` threads named `name` + index. With 0 threads, work runs inside post() (for
  // --sink null, where no call touches a disk), and its `done` still waits for reap().
  explicit FsPool(unsigned threads, const std::string& name = "dd-fsop");
  // Finishes the queued work (its `done` callbacks are dropped), then joins the threads.
  ~FsPool();
  FsPool(const FsPool&) = delete;
  FsPool& operator=(const FsPool&) = delete;

  // Queues `work` for a pool thread; `done` then runs on the reaping thread. Work must not
  // throw (an exception is caught, logged, and `done` still runs). Any thread.
  void post(std::function<void()> work, std::function<void()> done);
  // Runs the `done` of every finished item, in the order they finished; returns how many ran.
  // One thread only (the owner's).
  size_t reap();
  // Blocks up to `timeout` until an item has finished (at once when one is waiting, or when
  // nothing is pending). Owner's thread.
  void wait(std::chrono::nanoseconds timeout);
  // Items posted whose `done` has not run yet. Owner's thread.
  size_t pending() const { return pending_; }

 private:
  struct Item {
    std::function<void()> work;
    std::function<void()> done;
  };
  void run();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Item> queue_;                      // guarded by mu_
  std::deque<std::function<void()>> finished_;  // guarded by mu_
  bool stopping_ = false;                       // guarded by mu_
  size_t pending_ = 0;                          // owner's thread only
  std::vector<std::jthread> threads_;
};

}  // namespace ddft::receiver
