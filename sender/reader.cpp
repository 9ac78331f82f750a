#include "sender/reader.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "common/fd.hpp"

namespace ddft::sender {
namespace {

std::unique_ptr<common::BlockIo> make_io(const SenderConfig& cfg, BufferPool& pool) {
  common::BlockIoOptions io;
  io.threads = cfg.readers;
  io.queue_depth = cfg.read_queue_depth;
  io.fixed = pool.memory();
  io.thread_name = "rio";
  std::string note;
  auto engine = common::make_block_io(io, &note);
  if (!note.empty()) spdlog::warn("Warn: {}", note);
  return engine;
}

}  // namespace

Reader::Reader(const std::vector<SourceFile>& files, const SenderConfig& cfg, common::Clock& clock,
               BufferPool& pool, common::BoundedQueue<WorkItem>& out)
    : owned_list_(std::make_unique<ListSource>(files)),
      files_(*owned_list_),
      cfg_(cfg),
      clock_(clock),
      pool_(pool),
      out_(out),
      io_(make_io(cfg, pool)) {}

Reader::Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
               common::BoundedQueue<WorkItem>& out)
    : files_(files), cfg_(cfg), clock_(clock), pool_(pool), out_(out), io_(make_io(cfg, pool)) {}

bool Reader::lock_shared(int fd, const std::string& path, std::stop_token& stop,
                         std::string* why) {
  const auto deadline =
      clock_.now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::duration<double>(cfg_.lock_timeout_s));
  while (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (stop.stop_requested()) {
      *why = "sender stopped";
      return false;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      *why = fmt::format("cannot lock '{}' for reading: {}", path, std::strerror(errno));
      return false;
    }
    if (clock_.now() >= deadline) {
      *why = fmt::format("cannot read '{}': a writer held its lock for {} s (FILE_LOCK=Y, "
                         "--lock-timeout)",
                         path, cfg_.lock_timeout_s);
      return false;
    }
    clock_.sleep_until(std::min(deadline, clock_.now() + std::chrono::milliseconds(100)));
  }
  return true;
}

bool Reader::skip(const SourceFile& src, const std::string& why) {
  spdlog::error("Error: {}", why);
  ++open_failures_;
  auto meta = std::make_shared<FileMeta>();
  meta->rel_path = src.rel_path;
  meta->src_path = src.path;
  meta->tag = src.tag;
  WorkItem item{WorkItem::Kind::kSkip, std::move(meta)};
  item.reason = why;
  return out_.push(std::move(item));
}

void Reader::run(std::stop_token stop) {
  try {
    uint32_t next_id = 1;
    while (true) {
      std::optional<SourceFile> next = files_.next(stop);
      if (!next || stop.stop_requested()) break;
      const SourceFile& src = *next;
      if (src.synthetic) {
        auto meta = std::make_shared<FileMeta>();
        meta->file_id = next_id++;
        meta->rel_path = src.rel_path;
        meta->size = src.synthetic_size;
        meta->mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        meta->mode = 0644;
        meta->tag = src.tag;
        if (!send_copies([&](uint8_t c) { return read_synthetic(meta, c, stop); })) break;
        continue;
      }
      common::UniqueFd fd(::open(src.path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) {
        if (!skip(src, fmt::format("cannot read '{}': {}", src.path, std::strerror(errno)))) break;
        continue;
      }
      // Under FILE_LOCK the size is taken after the lock: a writer that held it may have
      // changed the file meanwhile.
      std::string why;
      if (cfg_.file_lock && !lock_shared(fd.get(), src.path, stop, &why)) {
        if (stop.stop_requested() || !skip(src, why)) break;
        continue;
      }
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        const int err = S_ISREG(st.st_mode) ? errno : EINVAL;
        if (!skip(src, fmt::format("cannot read '{}': {}", src.path, std::strerror(err)))) break;
        continue;
      }
      ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
      auto meta = std::make_shared<FileMeta>();
      meta->file_id = next_id++;
      meta->rel_path = src.rel_path;
      meta->src_path = src.path;
      meta->size = static_cast<uint64_t>(st.st_size);
      meta->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      meta->mode = st.st_mode & 07777;
      meta->tag = src.tag;
      if (!send_copies([&](uint8_t c) { return read_file(fd.get(), meta, c, stop); })) break;
    }
  } catch (const std::exception& e) {
    spdlog::error("Error: reader stopped: {}", e.what());
  }
  out_.close();
}

template <typename ReadCopy>
bool Reader::send_copies(ReadCopy&& read_copy) {
  for (unsigned c = 0; c < cfg_.repeat; ++c) {
    const Outcome o = read_copy(static_cast<uint8_t>(c));
    if (o == Outcome::kStopped) return false;
    if (o == Outcome::kAborted) return true;  // no further copy of a file that cannot be read
  }
  return true;
}

Reader::Outcome Reader::read_synthetic(const std::shared_ptr<const FileMeta>& meta, uint8_t copy,
                                       std::stop_token& stop) {
  WorkItem begin{WorkItem::Kind::kBegin, meta};
  begin.copy = copy;
  if (!out_.push(std::move(begin))) return Outcome::kStopped;
  auto hasher = common::make_hasher(cfg_.verify);
  for (uint64_t offset = 0; offset < meta->size;) {
    if (stop.stop_requested()) {
      WorkItem abort{WorkItem::Kind::kAbort, meta};
      abort.reason = "sender stopped";
      out_.push(std::move(abort));
      return Outcome::kStopped;
    }
    const int buf = pool_.acquire();
    if (buf < 0) return Outcome::kStopped;
    const size_t len =
        static_cast<size_t>(std::min<uint64_t>(pool_.buffer_size(), meta->size - offset));
    hasher->update({pool_.data(buf), len});
    WorkItem block{WorkItem::Kind::kBlock, meta, buf, offset, len};
    block.copy = copy;
    if (!out_.push(std::move(block))) {
      pool_.release(buf);
      return Outcome::kStopped;
    }
    offset += len;
  }
  WorkItem end{WorkItem::Kind::kEnd, meta};
  end.digest = hasher->finish();
  end.copy = copy;
  return out_.push(std::move(end)) ? Outcome::kSent : Outcome::kStopped;
}

Reader::Outcome Reader::read_file(int fd, const std::shared_ptr<const FileMeta>& meta,
                                  uint8_t copy, std::stop_token& stop) {
  WorkItem begin{WorkItem::Kind::kBegin, meta};
  begin.copy = copy;
  if (!out_.push(std::move(begin))) return Outcome::kStopped;
  auto hasher = common::make_hasher(cfg_.verify);
  // Blocks being read, and blocks read but waiting for an earlier one, by file offset (the
  // request's cookie). Reads complete in any order; blocks go on in file order.
  struct Block {
    int buf = -1;
    size_t want = 0;
    size_t got = 0;
    int error = 0;
    bool done = false;
  };
  std::map<uint64_t, Block> blocks;
  const auto on_done = [&](const common::IoCompletion& c) {
    Block& b = blocks.at(c.cookie);
    b.done = true;
    b.error = c.error;
    b.got = c.bytes;
  };
  // Waits for every read in flight and gives all held buffers back.
  const auto drain = [&] {
    while (io_->in_flight() > 0) io_->reap(true, on_done);
    for (auto& [off, b] : blocks) pool_.release(b.buf);
    blocks.clear();
  };
  uint64_t next_read = 0;
  uint64_t next_out = 0;
  std::string failure;
  while (next_out < meta->size) {
    if (stop.stop_requested()) {
      failure = "sender stopped";
      break;
    }
    // Read ahead while the engine has room. With reads already held, a buffer is only taken when
    // one is free: waiting for the transmitter while holding the block it needs next would stall.
    while (next_read < meta->size && blocks.size() < io_->capacity()) {
      const int buf = blocks.empty() ? pool_.acquire() : pool_.try_acquire();
      if (buf < 0) break;
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(pool_.buffer_size(), meta->size - next_read));
      if (!io_->submit_read(fd, pool_.data(buf), want, next_read, next_read)) {
        pool_.release(buf);
        break;
      }
      blocks[next_read] = Block{buf, want};
      next_read += want;
    }
    if (blocks.empty()) return Outcome::kStopped;  // the pool was closed: the transmitter stopped
    io_->reap(!blocks.begin()->second.done, on_done);
    while (!blocks.empty() && blocks.begin()->first == next_out && blocks.begin()->second.done) {
      const Block b = blocks.begin()->second;
      blocks.erase(blocks.begin());
      if (b.error != 0) {
        failure = std::string("read error: ") + std::strerror(b.error);
      } else if (b.got < b.want) {
        failure = "file shrank while it was being read";
      }
      if (!failure.empty()) {
        pool_.release(b.buf);
        break;
      }
      hasher->update({pool_.data(b.buf), b.got});
      WorkItem block{WorkItem::Kind::kBlock, meta, b.buf, next_out, b.got};
      block.copy = copy;
      if (!out_.push(std::move(block))) {
        pool_.release(b.buf);
        drain();
        return Outcome::kStopped;
      }
      next_out += b.got;
    }
    if (!failure.empty()) break;
  }
  drain();
  if (!failure.empty()) {
    WorkItem abort{WorkItem::Kind::kAbort, meta};
    abort.reason = failure;
    return out_.push(std::move(abort)) && !stop.stop_requested() ? Outcome::kAborted
                                                                   : Outcome::kStopped;
  }
  WorkItem end{WorkItem::Kind::kEnd, meta};
  end.digest = hasher->finish();
  end.copy = copy;
  return out_.push(std::move(end)) ? Outcome::kSent : Outcome::kStopped;
}

}  // namespace ddft::sender
