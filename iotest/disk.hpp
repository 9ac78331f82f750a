// The disk side of the self-test: checks before anything is written, and the runs themselves,
// driven through the programs' own IO code:
//  - write: common::BlockIo as the receiver sets it up (io_uring with the write pool registered
//    as fixed buffers, --queue-depth per writer, --writers IO threads, whole 4 KiB-aligned blocks
//    through an O_DIRECT descriptor, the rest buffered, the --write-mode sync at the end);
//  - read: common::BlockReader as the sender's reader stage sets it up (BlockIo read-ahead,
//    --readers, its pool of --read-buffers blocks rounded to whole packets, each block hashed),
//    from a file whose pages are dropped before each run.
// Every file it makes is named .ddft-iotest-PID-N in the tested folder and removed on every way
// out: success, error, Ctrl-C.
//
// One thread drives a DiskRunner (main's); the BlockIo it builds runs the IO threads. The runner
// owns the files it makes. preflight() and a run throw std::runtime_error with one line (a run's
// files removed first).
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/fd.hpp"
#include "common/write_mode.hpp"
#include "iotest/sweep.hpp"

namespace ddft::iotest {

struct Preflight {
  uint64_t free_bytes = 0;
  uint64_t page_cache_bytes = 0;  // RAM the page cache could use (MemAvailable)
  std::vector<std::string> warnings;
};

// Checks, before anything is written, that p.path is a folder this process can write, that it
// has room for the test, and that it takes O_DIRECT when asked; collects the honest-figure
// warnings. Throws std::runtime_error with a one-line reason.
Preflight preflight(const Params& p);

// The sender's reader block for --read-block-kb `block_kb` at its default packet size (no FEC,
// no seal): rounded down to whole packets' data, at least one (sender::reader_block_size()).
size_t read_block_bytes(unsigned block_kb);

// The RAM the page cache can use, from /proc/meminfo (MemAvailable); 0 when unknown.
uint64_t page_cache_ram();

class DiskRunner {
 public:
  // Opens p.path (checked by preflight()). `stop` ends a run early (Ctrl-C).
  DiskRunner(const Params& p, std::stop_token stop);
  ~DiskRunner();  // removes every file it made
  DiskRunner(const DiskRunner&) = delete;
  DiskRunner& operator=(const DiskRunner&) = delete;

  // One timed run. Throws std::runtime_error (one line) on an IO error; the files are gone then.
  RunOutcome run(unsigned block_kb, unsigned threads, unsigned files);
  // Removes every file made so far (also done by the destructor).
  void remove_files();

 private:
  RunOutcome write_run(unsigned block_kb, unsigned threads, unsigned files);
  RunOutcome read_run(unsigned block_kb, unsigned threads);
  // Writes `count` files of `total` bytes in all through BlockIo and returns what it timed.
  // With `timed` false (making the read test's file) there is no timeout and the files stay.
  RunOutcome write_files(unsigned block_kb, unsigned threads, unsigned count, uint64_t total,
                         bool timed, std::vector<std::string>* names);
  std::string new_name();
  void unlink_name(const std::string& name);

  Params p_;
  std::stop_token stop_;
  common::UniqueFd dir_;
  unsigned next_id_ = 0;
  std::vector<std::string> made_;  // files present now
  std::string read_file_;          // the read test's file, made on first use
  common::AlignedBuffer memory_;   // the write pool, refilled when the block size changes
  size_t memory_block_ = 0;
  bool engine_noted_ = false;  // the io_uring fallback was reported
};

}  // namespace ddft::iotest
