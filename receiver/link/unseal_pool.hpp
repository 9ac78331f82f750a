// The receiver's unseal workers (--workers N; the log calls them "open workers", after the
// AEAD's open): the per-datagram work that needs no order, done for a batch of datagrams side by
// side before the writer thread takes them in order.
//
//   ring ──> WriterLoop::drain: a batch of datagrams ──> UnsealPool::run ──> Assembler, in order
//                                                         ├ the writer thread: items [0, n/N)
//                                                         └ N-1 "dd-open" threads: the rest
//
// Each item gets SessionGate::precheck(): its checksum and lengths checked and, with a key, the
// datagram unsealed (AES-256-GCM open) into a buffer of its own: most of a sealed datagram's
// cost. Each worker has its own Opener (OpenSSL contexts are not shared between threads). What
// needs arrival order (the replay window, sessions, sequence numbers, FEC, files, hashing) stays
// on the writer thread.
//
// With one worker there is no thread: run() does everything on the caller's.
//
// run() from one thread (the writer's), which takes a share itself. The pool owns its threads
// (joined by its destructor), its Openers and the inner buffers, valid until the next run(). The
// constructor throws std::invalid_argument for a batch of 0 (a bug); run() throws again, once
// every share is done, what a worker threw (OpenSSL out of memory).
#pragma once

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "common/seal.hpp"
#include "receiver/link/session_gate.hpp"

namespace ddft::receiver {

class UnsealPool {
 public:
  // `workers` counts the caller: workers - 1 threads are started. `keys` empty: no sealing, so
  // items are only decoded. `max_packet` is the largest datagram accepted; `batch` the most
  // items one run() takes.
  UnsealPool(unsigned workers, const std::vector<common::Key>& keys, size_t max_packet,
             size_t batch);
  ~UnsealPool();
  UnsealPool(const UnsealPool&) = delete;
  UnsealPool& operator=(const UnsealPool&) = delete;

  // Prechecks every item (data and real_len set by the caller), spread over the workers in
  // contiguous shares; returns when all are done. Item i's inner datagram, if any, is in a
  // buffer of the pool's, valid until the next run(). At most batch() items. An exception in
  // a worker (OpenSSL out of memory) is thrown again here, once every share is done.
  void run(std::span<Prechecked> items);

  unsigned workers() const { return static_cast<unsigned>(openers_.size()); }
  // Items the helper threads (not the caller) have prechecked so far.
  uint64_t items_by_helpers() const { return by_helpers_.load(std::memory_order_relaxed); }
  size_t batch() const { return batch_; }

 private:
  // Worker w's share of the current items.
  void work(unsigned w);
  void helper(unsigned w);

  size_t max_packet_;
  size_t batch_;
  std::vector<uint8_t> inner_;  // batch_ buffers of max_packet_ bytes (with a key)
  std::vector<std::unique_ptr<common::Opener>> openers_;  // one per worker (null: no key)
  std::span<Prechecked> items_;                           // the current run's
  size_t shares_ = 1;  // how many workers share the current run (1: the caller alone)
  std::vector<std::exception_ptr> errors_;  // per worker, from the current run
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> by_helpers_{0};
  // Every worker, the caller included, meets at `start_` before a run's shares and at `done_`
  // after them.
  std::barrier<> start_;
  std::barrier<> done_;
  std::vector<std::jthread> threads_;
};

// --workers 0: one worker per core beyond the two that the receive thread and the writer thread
// keep busy, at most 4, at least 1.
unsigned default_open_workers(unsigned cores);
// --workers as given, or (0) the default for this machine's cores.
unsigned open_workers(unsigned configured);

}  // namespace ddft::receiver
