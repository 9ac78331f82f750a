#include "sender/reader.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/fd.hpp"

namespace ddft::sender {

Reader::Reader(const std::vector<SourceFile>& files, const SenderConfig& cfg, common::Clock& clock,
               BufferPool& pool, common::BoundedQueue<WorkItem>& out)
    : files_(files), cfg_(cfg), clock_(clock), pool_(pool), out_(out) {}

bool Reader::lock_shared(int fd, const std::string& path, std::stop_token& stop) {
  const auto deadline =
      clock_.now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::duration<double>(cfg_.lock_timeout_s));
  while (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    if (stop.stop_requested()) return false;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      spdlog::error("Error: cannot lock '{}' for reading: {}", path, std::strerror(errno));
      return false;
    }
    if (clock_.now() >= deadline) {
      spdlog::error("Error: cannot read '{}': a writer held its lock for {} s (FILE_LOCK=Y, "
                    "--lock-timeout)",
                    path, cfg_.lock_timeout_s);
      return false;
    }
    clock_.sleep_until(std::min(deadline, clock_.now() + std::chrono::milliseconds(100)));
  }
  return true;
}

void Reader::run(std::stop_token stop) {
  try {
    uint32_t next_id = 1;
    for (const SourceFile& src : files_) {
      if (stop.stop_requested()) break;
      if (src.synthetic) {
        auto meta = std::make_shared<FileMeta>();
        meta->file_id = next_id++;
        meta->rel_path = src.rel_path;
        meta->size = src.synthetic_size;
        meta->mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        meta->mode = 0644;
        if (!read_file(-1, meta, stop)) break;
        continue;
      }
      common::UniqueFd fd(::open(src.path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) {
        spdlog::error("Error: cannot read '{}': {}", src.path, std::strerror(errno));
        ++open_failures_;
        continue;
      }
      // Under FILE_LOCK the size is taken after the lock: a writer that held it may have
      // changed the file meanwhile.
      if (cfg_.file_lock && !lock_shared(fd.get(), src.path, stop)) {
        ++open_failures_;
        continue;
      }
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        spdlog::error("Error: cannot read '{}': {}", src.path,
                      std::strerror(S_ISREG(st.st_mode) ? errno : EINVAL));
        ++open_failures_;
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
      if (!read_file(fd.get(), meta, stop)) break;
    }
  } catch (const std::exception& e) {
    spdlog::error("Error: reader stopped: {}", e.what());
  }
  out_.close();
}

bool Reader::read_file(int fd, const std::shared_ptr<const FileMeta>& meta, std::stop_token& stop) {
  if (!out_.push(WorkItem{WorkItem::Kind::kBegin, meta})) return false;
  auto hasher = common::make_hasher(cfg_.verify);
  uint64_t offset = 0;
  std::string failure;
  while (offset < meta->size) {
    if (stop.stop_requested()) {
      failure = "sender stopped";
      break;
    }
    const int buf = pool_.acquire();
    if (buf < 0) return false;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(pool_.buffer_size(), meta->size - offset));
    // A synthetic source (fd < 0) costs nothing: its data is what the pool buffers were filled
    // with at start, never rewritten.
    size_t got = fd < 0 ? want : 0;
    while (got < want) {
      const ssize_t n = ::read(fd, pool_.data(buf) + got, want - got);
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (n == 0) {
        failure = "file shrank while it was being read";
        break;
      } else if (errno != EINTR) {
        failure = std::string("read error: ") + std::strerror(errno);
        break;
      }
    }
    if (!failure.empty()) {
      pool_.release(buf);
      break;
    }
    hasher->update({pool_.data(buf), got});
    WorkItem block{WorkItem::Kind::kBlock, meta, buf, offset, got};
    if (!out_.push(std::move(block))) {
      pool_.release(buf);
      return false;
    }
    offset += got;
  }
  if (!failure.empty()) {
    WorkItem abort{WorkItem::Kind::kAbort, meta};
    abort.reason = failure;
    return out_.push(std::move(abort)) && !stop.stop_requested();
  }
  WorkItem end{WorkItem::Kind::kEnd, meta};
  end.digest = hasher->finish();
  return out_.push(std::move(end));
}

}  // namespace ddft::sender
