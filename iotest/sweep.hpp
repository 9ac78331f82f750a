// The disk self-test's sweep: every (block size x thread count) setting, several runs each, the
// table of averages, the recommended setting, and the same figures as JSON. The runs themselves
// are done by a Runner (iotest/disk.hpp drives the disk; unit tests give a scripted one).
//
// One thread (the caller's); the only I/O is the Runner's. The parsers and checks throw
// std::invalid_argument with one line for a bad parameter; the sweep passes on what the Runner
// throws; the formatters throw nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/write_mode.hpp"

namespace ddft::iotest {

enum class Kind { kWrite, kRead };

struct Params {
  Kind kind = Kind::kWrite;
  std::string path;        // folder the test files go in
  uint64_t size_mb = 500;  // bytes per run (MB = 2^20), split over `files`
  double timeout_s = 60;   // per run
  unsigned runs = 5;       // per setting; cells are their average
  std::vector<unsigned> block_kb = {64, 128, 256, 512, 1024, 2048, 4096};
  std::vector<unsigned> threads = {1, 2, 4, 6, 8};
  unsigned files = 1;  // written at once (never more than the threads); write only
  bool direct = true;  // O_DIRECT for whole aligned blocks, as --direct-io; write only
  common::WriteMode mode = common::WriteMode::kBuffered;  // as --write-mode; write only
  unsigned queue_depth = 0;  // per thread; the programs' defaults when 0
};

// The block sizes the programs accept (--write-block-kb, --read-block-kb).
inline constexpr unsigned kMinBlockKb = 64;
inline constexpr unsigned kMaxBlockKb = 65536;
inline constexpr unsigned kMaxThreads = 64;
inline constexpr unsigned kMaxWriteQueueDepth = 4096;  // dd_file_receive --queue-depth
inline constexpr unsigned kMaxReadQueueDepth = 1024;   // dd_file_send --read-queue-depth

// The receiver's write pool for a block size: its default 64 blocks (--write-buffers), fewer for
// very large blocks so that the pool stays within 1 GiB (at least 4).
size_t write_buffers_for(unsigned block_kb);
// The receiver's defaults the recommendation is measured against.
inline constexpr size_t kDefaultWriteBuffers = 64;
inline constexpr size_t kDefaultBufferMb = 1024;

// Parses "64,128, 256" into numbers in [lo, hi], sorted, without duplicates. Throws
// std::invalid_argument with a one-line reason naming `what`.
std::vector<unsigned> parse_list(std::string_view text, std::string_view what, unsigned lo,
                                 unsigned hi);
// The queue depth per thread a test runs with: p.queue_depth, or the program's default for the
// test (the receiver's for writes, the sender's for reads).
unsigned queue_depth_of(const Params& p);
// Parses a file mode, rw, rwd or rws; throws std::invalid_argument with a one-line reason.
common::WriteMode parse_mode(std::string_view mode);
// Checks that every block size is one the programs take; throws std::invalid_argument.
void check_block_sizes(const std::vector<unsigned>& block_kb);
// Checks the whole set (ranges, files vs threads); throws std::invalid_argument, one line.
void validate(const Params& p);

struct RunOutcome {
  uint64_t bytes = 0;      // moved within the run
  double seconds = 0;      // the run's wall time
  bool timed_out = false;  // stopped at the timeout: the figure covers what was moved until then
};
// MB/s (2^20) of one run; 0 when nothing was timed.
double mb_per_s(const RunOutcome& r);

struct Cell {
  unsigned block_kb = 0;
  unsigned threads = 0;
  unsigned files = 0;  // files at once in this cell: min(files, threads)
  std::vector<double> runs_mbps;
  unsigned timeouts = 0;
  double mean = 0;  // average of runs_mbps
};

struct Sweep {
  Params params;
  std::vector<Cell> cells;   // row-major: rows are block sizes, columns thread counts
  bool interrupted = false;  // stopped before every cell was measured
  const Cell& at(size_t row, size_t col) const { return cells[row * params.threads.size() + col]; }
};

// One run of a setting. Called with the block size (KB), threads and files at once.
using Runner = std::function<RunOutcome(unsigned block_kb, unsigned threads, unsigned files)>;
// Called after each run (for a progress line).
using Progress = std::function<void(const Cell& cell, unsigned run, const RunOutcome& outcome)>;

// Runs every setting `p.runs` times, row by row. `stop_requested` is asked between runs; when it
// says yes the sweep ends early with interrupted = true and the cells measured so far.
Sweep run_sweep(const Params& p, const Runner& runner, const std::function<bool()>& stop_requested,
                const Progress& progress = {});

struct Recommendation {
  bool valid = false;
  unsigned block_kb = 0;
  unsigned threads = 0;
  double mbps = 0;
  // The fastest cell; the recommendation may be a simpler one within kTolerance of it.
  unsigned best_block_kb = 0;
  unsigned best_threads = 0;
  double best_mbps = 0;
};
// Cells within this fraction of the fastest count as equally fast (the noise of one disk).
inline constexpr double kTolerance = 0.03;
// The fastest cell, or the one with the fewest threads within kTolerance of it (fewer threads
// cost less CPU and memory for the same figure), then the fastest of those. Cells that hit a
// timeout are only chosen when every cell did.
Recommendation recommend(const Sweep& s);

// "Tests run with the following parameters:" block, the seed's table, the recommendation with
// the flags and config lines, and the JSON document. `warnings` go into the JSON.
std::string format_params(const Params& p);
std::string format_table(const Sweep& s);
std::string format_recommendation(const Sweep& s, const Recommendation& r);
std::string to_json(const Sweep& s, const Recommendation& r,
                    const std::vector<std::string>& warnings);

// The programs' settings for a recommendation: flags on one line, then config-file lines.
std::string recommended_flags(const Params& p, const Recommendation& r);
std::vector<std::string> recommended_config_lines(const Params& p, const Recommendation& r);

}  // namespace ddft::iotest
