#include "iotest/disk.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/block_io.hpp"
#include "common/block_reader.hpp"
#include "common/buffer_pool.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"

namespace ddft::iotest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kAlign = 4096;
constexpr uint64_t kMiB = 1024 * 1024;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One file of a write run: its descriptors (buffered, and O_DIRECT or invalid), its size and the
// offset of its next block.
struct TestFile {
  common::UniqueFd fd;
  common::UniqueFd direct_fd;
  uint64_t size = 0;
  uint64_t next = 0;
};

// The block I/O engine of a write run, as the receiver would pick it: `threads` writers of
// queue depth queue_depth_of(p) over `fixed`. Says once (*noted then true) on stderr when it fell
// back from io_uring.
std::unique_ptr<common::BlockIo> make_write_engine(const Params& p, unsigned threads,
                                                   std::span<uint8_t> fixed, bool* noted) {
  common::BlockIoOptions o;
  o.threads = threads;
  o.queue_depth = queue_depth_of(p);
  o.fixed = fixed;
  o.thread_name = "dd-wio";
  std::string note;
  auto io = common::make_block_io(o, &note);
  if (!note.empty() && !*noted) {
    std::fprintf(stderr, "Warning: %s: the figures are pwrite's, as the receiver's would be\n",
                 note.c_str());
    *noted = true;
  }
  return io;
}

// The next file, in turn from `*turn`, that has blocks left to write (advancing *turn past it),
// or null when all are written.
TestFile* next_file(std::vector<TestFile>& files, size_t* turn) {
  const size_t count = files.size();
  for (size_t k = 0; k < count; ++k) {
    TestFile& cand = files[(*turn + k) % count];
    if (cand.next < cand.size) {
      *turn = (*turn + k + 1) % count;
      return &cand;
    }
  }
  return nullptr;
}

// Syncs every file through `io` (fdatasync with `datasync`, else fsync) and waits for all that is
// in flight; completions go to `on_done`.
void sync_files(common::BlockIo& io, const std::vector<TestFile>& files, bool datasync,
                const common::BlockIo::Callback& on_done) {
  for (size_t i = 0; i < files.size(); ++i) {
    while (!io.submit_sync(files[i].fd.get(), datasync, (uint64_t{1} << 32) | i)) {
      io.reap(true, on_done);
    }
  }
  while (io.in_flight() > 0) io.reap(true, on_done);
}

}  // namespace

size_t read_block_bytes(unsigned block_kb) {
  // The data bytes of one packet at the sender's default packet size, without FEC or a seal.
  constexpr size_t kChunk =
      common::kDefaultPacketSize - common::kHeaderSize - common::kDataHeaderSize;
  return std::max<size_t>(1, size_t{block_kb} * 1024 / kChunk) * kChunk;
}

uint64_t page_cache_ram() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

Preflight preflight(const Params& p) {
  Preflight out;
  struct stat st {};
  if (::stat(p.path.c_str(), &st) != 0) {
    throw std::runtime_error(fmt::format("cannot test '{}': {}", p.path, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    throw std::runtime_error(fmt::format("cannot test '{}': not a folder", p.path));
  }
  if (::access(p.path.c_str(), W_OK | X_OK) != 0) {
    throw std::runtime_error(fmt::format("cannot write in '{}': {}", p.path, std::strerror(errno)));
  }
  struct statvfs vfs {};
  if (::statvfs(p.path.c_str(), &vfs) != 0) {
    throw std::runtime_error(
        fmt::format("cannot read the free space of '{}': {}", p.path, std::strerror(errno)));
  }
  out.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  // Each run's files exist together; a margin keeps the file system out of its last blocks.
  const uint64_t need = (p.size_mb << 20) + (p.size_mb << 20) / 50 + 16 * kMiB;
  if (out.free_bytes < need) {
    throw std::runtime_error(
        fmt::format("not enough free space in '{}' for the test: it needs "
                    "{} MB, {} MB are free; give a smaller --size-mb",
                    p.path, need / kMiB, out.free_bytes / kMiB));
  }
  if (p.kind == Kind::kWrite && p.direct) {
    // The receiver probes the same way: an unnamed file opened O_DIRECT (nothing is written).
    const int fd = ::open(p.path.c_str(), O_TMPFILE | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0) {
      throw std::runtime_error(
          fmt::format("the file system of '{}' refuses O_DIRECT ({}): test "
                      "with direct IO off (--direct-io off)",
                      p.path, std::strerror(errno)));
    }
    ::close(fd);
  }
  out.page_cache_bytes = page_cache_ram();
  const bool cache_can_serve =
      p.kind == Kind::kRead || (!p.direct && p.mode == common::WriteMode::kBuffered);
  if (cache_can_serve && out.page_cache_bytes > 0 && (p.size_mb << 20) < out.page_cache_bytes) {
    out.warnings.push_back(fmt::format(
        "the file size ({} MB) is below the RAM the page cache can use ({} MB): the figures may be "
        "the cache's, not the disk's; give --size-mb {} or more for the disk's own figure",
        p.size_mb, out.page_cache_bytes / kMiB, out.page_cache_bytes / kMiB + 1));
  }
  return out;
}

DiskRunner::DiskRunner(const Params& p, std::stop_token stop) : p_(p), stop_(std::move(stop)) {
  dir_.reset(::open(p.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_)
    throw std::runtime_error(fmt::format("cannot open '{}': {}", p.path, std::strerror(errno)));
}

DiskRunner::~DiskRunner() { remove_files(); }

std::string DiskRunner::new_name() {
  return fmt::format(".ddft-iotest-{}-{}", ::getpid(), ++next_id_);
}

void DiskRunner::unlink_name(const std::string& name) {
  ::unlinkat(dir_.get(), name.c_str(), 0);
  made_.erase(std::remove(made_.begin(), made_.end(), name), made_.end());
}

void DiskRunner::remove_files() {
  while (!made_.empty()) unlink_name(made_.back());
  read_file_.clear();
}

RunOutcome DiskRunner::run(unsigned block_kb, unsigned threads, unsigned files) {
  try {
    const RunOutcome o =
        p_.kind == Kind::kWrite ? write_run(block_kb, threads, files) : read_run(block_kb, threads);
    // Untimed: what the run left dirty is written out now, not during the next run.
    ::syncfs(dir_.get());
    return o;
  } catch (...) {
    remove_files();
    throw;
  }
}

RunOutcome DiskRunner::write_run(unsigned block_kb, unsigned threads, unsigned files) {
  std::vector<std::string> names;
  const RunOutcome o = write_files(block_kb, threads, files, p_.size_mb << 20, true, &names);
  for (const std::string& n : names) unlink_name(n);
  return o;
}

RunOutcome DiskRunner::write_files(unsigned block_kb, unsigned threads, unsigned count,
                                   uint64_t total, bool timed, std::vector<std::string>* names) {
  const size_t block = size_t{block_kb} * 1024;
  const size_t nbuf = write_buffers_for(block_kb);
  if (memory_block_ != block) {
    memory_ = common::AlignedBuffer();  // the old pool goes first: never two large ones at once
    memory_ = common::AlignedBuffer(nbuf * block, /*populate=*/true);
    common::fill_pseudo_random(memory_.span());
    memory_block_ = block;
  }
  std::vector<TestFile> fs(count);
  for (unsigned i = 0; i < count; ++i) {
    const std::string name = new_name();
    // As the receiver makes its temporary files: O_EXCL, never following a link.
    fs[i].fd.reset(::openat(dir_.get(), name.c_str(),
                            O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fs[i].fd) {
      throw std::runtime_error(
          fmt::format("cannot create a test file in '{}': {}", p_.path, std::strerror(errno)));
    }
    made_.push_back(name);
    names->push_back(name);
    if (p_.direct && timed) {
      fs[i].direct_fd.reset(
          ::openat(dir_.get(), name.c_str(), O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC));
    }
    fs[i].size = total / count + (i + 1 == count ? total % count : 0);
  }

  const auto io = make_write_engine(p_, threads, memory_.span(), &engine_noted_);

  std::vector<size_t> free_bufs;
  for (size_t i = 0; i < nbuf; ++i) free_bufs.push_back(i);
  RunOutcome out;
  int error = 0;
  bool stop_submitting = false;
  size_t turn = 0;
  const auto on_done = [&](const common::IoCompletion& c) {
    if (c.error != 0 && error == 0) error = c.error;
    out.bytes += c.bytes;
    if ((c.cookie >> 32) == 0) free_bufs.push_back(static_cast<size_t>(c.cookie));
  };
  const auto t0 = Clock::now();
  for (;;) {
    // Blocks go to the files in turn, as a receiver writing several files at once would.
    while (!stop_submitting && error == 0 && !free_bufs.empty()) {
      TestFile* f = next_file(fs, &turn);
      if (f == nullptr) break;
      const size_t buf = free_bufs.back();
      const size_t len = static_cast<size_t>(std::min<uint64_t>(block, f->size - f->next));
      const bool direct = f->direct_fd && len % kAlign == 0 && f->next % kAlign == 0;
      if (!io->submit_write(direct ? f->direct_fd.get() : f->fd.get(), memory_.data() + buf * block,
                            len, f->next, buf)) {
        break;
      }
      free_bufs.pop_back();
      f->next += len;
    }
    if (io->in_flight() == 0) break;
    io->reap(true, on_done);
    if (stop_.stop_requested()) stop_submitting = true;
    if (timed && seconds_since(t0) > p_.timeout_s && !stop_submitting) {
      stop_submitting = true;
      out.timed_out = true;
    }
  }
  if (error == 0 && !stop_.stop_requested() && p_.mode != common::WriteMode::kBuffered) {
    // --write-mode rwd / rws: the receiver syncs each file before its rename (a run cut short
    // by its timeout too: its figure must carry the same cost).
    sync_files(*io, fs, p_.mode == common::WriteMode::kDataSync, on_done);
  }
  out.seconds = seconds_since(t0);
  if (error != 0) {
    throw std::runtime_error(
        fmt::format("writing the test file in '{}' failed: {}", p_.path, std::strerror(error)));
  }
  return out;
}

RunOutcome DiskRunner::read_run(unsigned block_kb, unsigned threads) {
  if (read_file_.empty()) {
    // The file to read is made once, untimed, with the data on disk (synced).
    std::vector<std::string> names;
    write_files(1024, 1, 1, p_.size_mb << 20, false, &names);
    common::UniqueFd fd(::openat(dir_.get(), names[0].c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0) {
      throw std::runtime_error(fmt::format("cannot prepare the read test's file in '{}': {}",
                                           p_.path, std::strerror(errno)));
    }
    read_file_ = names[0];
  }
  {
    // Clean pages can be dropped: each run reads from the disk, not from the cache.
    common::UniqueFd fd(::openat(dir_.get(), read_file_.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  }
  common::UniqueFd fd(::openat(dir_.get(), read_file_.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    throw std::runtime_error(fmt::format("cannot open the read test's file in '{}'", p_.path));
  }
  // As the sender reads a source: sequential advice, its pool, its engine, its hashing.
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  common::BufferPool pool(common::kDefaultReadBuffers, read_block_bytes(block_kb));
  common::BlockIoOptions o;
  o.threads = threads;
  o.queue_depth = queue_depth_of(p_);
  o.fixed = pool.memory();
  o.thread_name = "dd-rio";
  std::string note;
  auto io = common::make_block_io(o, &note);
  if (!note.empty()) spdlog::warn("Warn: {}", note);
  common::BlockReader reader(*io, pool);
  auto hasher = common::make_hasher(common::VerifyType::kB2B);

  RunOutcome out;
  std::stop_source run_stop;
  const auto t0 = Clock::now();
  const auto take = [&](int buf, uint64_t /*offset*/, size_t len) {
    hasher->update({pool.data(buf), len});
    out.bytes += len;
    pool.release(buf);
    if (!run_stop.stop_requested()) {
      if (stop_.stop_requested()) run_stop.request_stop();
      if (seconds_since(t0) > p_.timeout_s) {
        out.timed_out = true;
        run_stop.request_stop();
      }
    }
    return true;
  };
  std::string failure;
  const common::ReadResult r = reader.read_file(fd.get(), static_cast<uint64_t>(st.st_size),
                                                run_stop.get_token(), take, &failure);
  out.seconds = seconds_since(t0);
  if (r == common::ReadResult::kFailed) {
    throw std::runtime_error(
        fmt::format("reading the test file in '{}' failed: {}", p_.path, failure));
  }
  if (r != common::ReadResult::kDone && !run_stop.stop_requested()) {
    throw std::runtime_error(
        fmt::format("the reader stopped before the end of the test file in "
                    "'{}' (see the error above)",
                    p_.path));
  }
  return out;
}

}  // namespace ddft::iotest
