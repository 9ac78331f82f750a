#include "sender/read/compressor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

#include "common/named_thread.hpp"
#include "common/protocol.hpp"

namespace ddft::sender {
namespace {
// --compress auto: the sample tried first, from the middle of the block.
constexpr size_t kProbeSize = 64 * 1024;

ZSTD_CCtx* new_cctx(int level, bool checksum) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  if (c == nullptr) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  // The receiver checks each frame against its content checksum as it decompresses.
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  return c;
}

}  // namespace

Compressor::Compressor(const SenderConfig& cfg, BufferPool& pool, WorkSink& out)
    : cfg_(cfg), pool_(pool), out_(out), jobs_(std::max(1u, cfg.compress_workers) * 2) {
  const unsigned n = std::max(1u, cfg.compress_workers);
  workers_.resize(n);
  try {
    for (Worker& w : workers_) {
      w.cctx = new_cctx(cfg.compress_level, true);
      if (cfg.compress == CompressMode::kAuto) w.probe = new_cctx(1, false);
      w.scratch.resize(pool.buffer_size());
    }
    for (unsigned i = 0; i < n; ++i) {
      threads_.push_back(common::start_named_thread(fmt::format("dd-zstd{}", i + 1),
                                                    [this, i] { run(workers_[i]); }));
    }
  } catch (...) {
    shut_down();  // the workers started wait on the queue: closed, they end and join
    throw;
  }
}

Compressor::~Compressor() { shut_down(); }

void Compressor::shut_down() {
  jobs_.close();
  threads_.clear();  // joins
  for (Worker& w : workers_) {
    ZSTD_freeCCtx(w.cctx);
    ZSTD_freeCCtx(w.probe);
    w.cctx = w.probe = nullptr;
  }
}

bool Compressor::push(WorkItem&& item) {
  if (closed_ || refused_.load(std::memory_order_acquire)) return false;
  Job job{next_ticket_, std::move(item)};
  if (!jobs_.push(std::move(job))) {
    item = std::move(job.item);  // untouched for the caller, as WorkSink promises
    return false;
  }
  ++next_ticket_;
  return true;
}

void Compressor::close() {
  if (closed_) return;
  closed_ = true;
  jobs_.close();
  threads_.clear();  // every queued job is handed on (or released) first
  out_.close();
}

void Compressor::run(Worker& w) {
  while (std::optional<Job> job = jobs_.pop()) {
    if (job->item.kind == WorkItem::Kind::kBlock && !refused_.load(std::memory_order_relaxed)) {
      try {
        compress(w, job->item);
      } catch (const std::exception& e) {  // the block goes raw: compression is an option
        spdlog::warn("Warn: a block of {} was sent uncompressed: {}", job->item.meta->rel_path,
                     e.what());
      }
    }
    hand_on(job->ticket, std::move(job->item));
  }
}

void Compressor::compress(Worker& w, WorkItem& item) {
  uint8_t* block = pool_.data(item.buffer);
  const size_t len = item.len;
  bool worth = len > 64;
  if (worth && w.probe != nullptr && len > kProbeSize) {
    const uint8_t* sample = block + (len - kProbeSize) / 2;
    const size_t n = ZSTD_compress2(w.probe, w.scratch.data(),
                                    common::zdata_frame_limit(kProbeSize), sample, kProbeSize);
    worth = !ZSTD_isError(n);
  }
  size_t sent = len;
  if (worth) {
    // A frame that would not save 1/kZMinSavingDiv does not fit the limit: ZSTD says so with
    // an error, and the block goes raw.
    const size_t n =
        ZSTD_compress2(w.cctx, w.scratch.data(), common::zdata_frame_limit(len), block, len);
    if (!ZSTD_isError(n)) {
      std::memcpy(block, w.scratch.data(), n);
      item.raw_len = static_cast<uint32_t>(len);
      item.len = n;
      item.compressed = true;
      sent = n;
    }
  }
  count(len, sent, item.compressed);
}

void Compressor::count(size_t raw, size_t sent, bool compressed) {
  const auto add = [](std::atomic<uint64_t>& a, uint64_t n) {
    a.fetch_add(n, std::memory_order_relaxed);
  };
  add(blocks_, 1);
  add(raw_bytes_, raw);
  add(sent_bytes_, sent);
  if (compressed) add(compressed_, 1);
  if (status_ == nullptr) return;
  add(status_->compress_blocks, 1);
  add(status_->compress_in_bytes, raw);
  add(status_->compress_out_bytes, sent);
  if (compressed) add(status_->compress_blocks_compressed, 1);
}

void Compressor::hand_on(uint64_t ticket, WorkItem&& item) {
  std::unique_lock lock(turn_mu_);
  turn_cv_.wait(lock, [&] { return turn_ == ticket; });
  // Pushed under the turn lock: one item at a time, in the reader's order.
  const int buffer = item.kind == WorkItem::Kind::kBlock ? item.buffer : -1;
  bool taken = false;
  if (!refused_.load(std::memory_order_relaxed)) {
    try {
      taken = out_.push(std::move(item));
    } catch (const std::exception& e) {  // the stream ends here, as if refused: no thread dies
      spdlog::error("Error: the compressed stream stopped: {}", e.what());
    }
  }
  if (!taken) {
    refused_.store(true, std::memory_order_release);
    if (buffer >= 0) pool_.release(buffer);  // nobody takes it any more
  }
  // Every ticket's turn ends, whatever happened: the workers after it must not wait forever.
  ++turn_;
  turn_cv_.notify_all();
}

CompressTotals Compressor::totals() const {
  CompressTotals t;
  t.blocks = blocks_.load();
  t.blocks_compressed = compressed_.load();
  t.raw_bytes = raw_bytes_.load();
  t.sent_bytes = sent_bytes_.load();
  return t;
}

}  // namespace ddft::sender
