#include "sender/read/reader.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/fd.hpp"
#include "common/open_below.hpp"
#include "common/protocol_regions.hpp"

namespace ddft::sender {
namespace {

std::unique_ptr<common::BlockIo> make_io(const SenderConfig& cfg, BufferPool& pool) {
  common::BlockIoOptions io;
  io.threads = cfg.readers;
  io.queue_depth = cfg.read_queue_depth;
  io.fixed = pool.memory();
  io.thread_name = "dd-rio";
  std::string note;
  auto engine = common::make_block_io(io, &note);
  if (!note.empty()) spdlog::warn("Warn: {}", note);
  return engine;
}

}  // namespace

Reader::Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
               WorkSink& out)
    : Reader(files, cfg, clock, pool, out, ReadChannel{}) {}

Reader::Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
               WorkSink& out, const ReadChannel& channel)
    : channel_(channel),
      files_(files),
      cfg_(cfg),
      clock_(clock),
      pool_(pool),
      out_(out),
      io_(make_io(cfg, pool)),
      block_reader_(*io_, pool, channel.pool_share) {}

Reader::Reader(FileSource& files, const SenderConfig& cfg, common::Clock& clock, BufferPool& pool,
               common::BoundedQueue<WorkItem>& out)
    : owned_sink_(std::make_unique<QueueSink>(out)),
      files_(files),
      cfg_(cfg),
      clock_(clock),
      pool_(pool),
      out_(*owned_sink_),
      io_(make_io(cfg, pool)),
      block_reader_(*io_, pool) {}

Reader::Reader(const std::vector<SourceFile>& files, const SenderConfig& cfg, common::Clock& clock,
               BufferPool& pool, common::BoundedQueue<WorkItem>& out)
    : owned_list_(std::make_unique<ListSource>(files)),
      owned_sink_(std::make_unique<QueueSink>(out)),
      files_(*owned_list_),
      cfg_(cfg),
      clock_(clock),
      pool_(pool),
      out_(*owned_sink_),
      io_(make_io(cfg, pool)),
      block_reader_(*io_, pool) {}

std::shared_ptr<FileMeta> Reader::new_meta(const SourceFile& src) {
  if (channel_.ids == nullptr) {
    own_ids_ = std::make_unique<FileIds>(cfg_.first_file_id);
    channel_.ids = own_ids_.get();
  }
  auto meta = std::make_shared<FileMeta>();
  meta->file_id = channel_.ids->take();
  meta->rel_path = src.rel_path;
  meta->tag = src.tag;
  meta->set_channel(channel_.name);
  return meta;
}

bool Reader::lock_shared(int fd, const std::string& path, std::stop_token& stop, std::string* why) {
  const auto deadline = clock_.now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
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
      *why = fmt::format(
          "cannot read '{}': a writer held its lock for {} s (FILE_LOCK=Y, "
          "--lock-timeout)",
          path, cfg_.lock_timeout_s);
      return false;
    }
    clock_.sleep_until(std::min(deadline, clock_.now() + std::chrono::milliseconds(100)));
  }
  return true;
}

std::optional<std::string> Reader::path_refusal(const SourceFile& src) const {
  const size_t len = src.rel_path.size() + (channel_.name.empty() ? 0 : channel_.name.size() + 1);
  if (len <= common::kMaxPathSize &&
      common::announce_datagram_size(len) <= source_datagram_size(cfg_)) {
    return std::nullopt;
  }
  return fmt::format(
      "cannot send '{}': its path on the wire ({} bytes{}) does not fit an announce of "
      "--packet-size {}",
      src.path, len, channel_.name.empty() ? "" : ", with its channel", cfg_.packet_size);
}

common::UniqueFd Reader::open_source(SourceFile& src, std::string* why) const {
  if (src.opened) return common::UniqueFd(src.opened->release());
  if (src.root.empty()) {
    common::UniqueFd fd(::open(src.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) *why = fmt::format("cannot read '{}': {}", src.path, std::strerror(errno));
    return fd;
  }
  std::string link;
  common::UniqueFd fd = common::open_below(src.root, src.below, O_RDONLY, &link);
  if (fd) return fd;
  if (errno == ELOOP && !link.empty()) {
    *why = fmt::format(
        "cannot read '{}': '{}' is a symbolic link now, not what was listed (--symlinks {}: "
        "not followed)",
        src.path, link, symlink_mode_name(cfg_.symlinks));
  } else {
    *why = fmt::format("cannot read '{}': {}", src.path, std::strerror(errno));
  }
  return fd;
}

bool Reader::skip(const SourceFile& src, const std::string& why, bool refused) {
  spdlog::error("Error: {}", why);
  ++open_failures_;
  if (status_ != nullptr) {
    (refused ? status_->files_refused : status_->read_failures)
        .fetch_add(1, std::memory_order_relaxed);
  }
  auto meta = std::make_shared<FileMeta>();
  meta->rel_path = src.rel_path;
  meta->src_path = src.path;
  meta->tag = src.tag;
  meta->set_channel(channel_.name);
  WorkItem item{WorkItem::Kind::kSkip, std::move(meta)};
  item.reason = why;
  return out_.push(std::move(item));
}

void Reader::run(std::stop_token stop) {
  try {
    while (true) {
      std::optional<SourceFile> next = files_.next(stop);
      if (!next || stop.stop_requested()) break;
      SourceFile& src = *next;
      if (const std::optional<std::string> why = path_refusal(src)) {
        if (!skip(src, *why, /*refused=*/true)) break;
        continue;
      }
      if (src.synthetic) {
        const std::shared_ptr<FileMeta> meta = new_meta(src);
        meta->size = src.synthetic_size;
        meta->mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        meta->mode = 0644;
        if (!send_copies([&](uint8_t c) { return read_synthetic(meta, c, stop); })) break;
        continue;
      }
      std::string why;
      common::UniqueFd fd = open_source(src, &why);
      if (!fd) {
        if (!skip(src, why)) break;
        continue;
      }
      // Under FILE_LOCK the size is taken after the lock: a writer that held it may have
      // changed the file meanwhile.
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
      const std::shared_ptr<FileMeta> meta = new_meta(src);
      meta->src_path = src.path;
      meta->size = static_cast<uint64_t>(st.st_size);
      meta->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      meta->mode = st.st_mode & 07777;
      meta->resend_of = src.resend_of;
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
    const int buf = pool_.acquire(channel_.pool_share);
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

Reader::Outcome Reader::read_file(int fd, const std::shared_ptr<const FileMeta>& meta, uint8_t copy,
                                  std::stop_token& stop) {
  WorkItem begin{WorkItem::Kind::kBegin, meta};
  begin.copy = copy;
  if (!out_.push(std::move(begin))) return Outcome::kStopped;
  auto hasher = common::make_hasher(cfg_.verify);
  const auto hand_on = [&](int buf, uint64_t offset, size_t len) {
    hasher->update({pool_.data(buf), len});
    WorkItem block{WorkItem::Kind::kBlock, meta, buf, offset, len};
    block.copy = copy;
    return out_.push(std::move(block));
  };
  std::string failure;
  const common::ReadResult result =
      block_reader_.read_file(fd, meta->size, stop, hand_on, &failure);
  switch (result) {
    case common::ReadResult::kDone:
      break;
    case common::ReadResult::kRefused:
      return Outcome::kStopped;  // the transmitter stopped: nobody takes an abort either
    case common::ReadResult::kStopped:
      failure = "sender stopped";
      [[fallthrough]];
    case common::ReadResult::kFailed: {
      if (status_ != nullptr && result == common::ReadResult::kFailed) {
        status_->read_failures.fetch_add(1, std::memory_order_relaxed);
      }
      WorkItem abort{WorkItem::Kind::kAbort, meta};
      abort.reason = failure;
      return out_.push(std::move(abort)) && !stop.stop_requested() ? Outcome::kAborted
                                                                   : Outcome::kStopped;
    }
  }
  WorkItem end{WorkItem::Kind::kEnd, meta};
  end.digest = hasher->finish();
  end.copy = copy;
  return out_.push(std::move(end)) ? Outcome::kSent : Outcome::kStopped;
}

}  // namespace ddft::sender
