// Reader stage: reads each file in large blocks into pool buffers, hashes it, and hands
// begin/block/end (or abort) items to the transmitter.
#pragma once

#include <atomic>
#include <stop_token>
#include <vector>

#include "common/bounded_queue.hpp"
#include "sender/pipeline.hpp"

namespace ddft::sender {

class Reader {
 public:
  // `pool` and `out` must outlive run(). `failed` counts files that could not be opened.
  Reader(const std::vector<SourceFile>& files, common::VerifyType verify, BufferPool& pool,
         common::BoundedQueue<WorkItem>& out);
  // Runs on the reader thread. Closes `out` when done (also when stopped or on error).
  void run(std::stop_token stop);
  uint64_t open_failures() const { return open_failures_.load(); }

 private:
  // Reads one opened file; returns false when stopped.
  bool read_file(int fd, const std::shared_ptr<const FileMeta>& meta, std::stop_token& stop);

  const std::vector<SourceFile>& files_;
  common::VerifyType verify_;
  BufferPool& pool_;
  common::BoundedQueue<WorkItem>& out_;
  std::atomic<uint64_t> open_failures_{0};
};

}  // namespace ddft::sender
