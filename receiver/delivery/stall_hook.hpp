// Test hook (hidden options --test-stall-writer-s S and --test-stall-after-mb M): the disk stalls
// once for S seconds after M MiB were written, as a disk does when it hiccups. It wraps the write
// engine only when asked for, so the normal path pays nothing for it.
// The stall blocks the thread that submits the write (dd-write), as a stuck disk queue would
// hold it; otherwise it is the engine it wraps, which it owns: same threads, same throws.
#pragma once

#include <chrono>
#include <memory>
#include <thread>

#include "common/block_io.hpp"

namespace ddft::receiver {

class StallingIo final : public common::BlockIo {
 public:
  StallingIo(std::unique_ptr<common::BlockIo> inner, double stall_s, uint64_t after_bytes)
      : inner_(std::move(inner)), stall_s_(stall_s), after_(after_bytes) {}

  bool submit_write(int fd, const uint8_t* buf, size_t len, uint64_t offset,
                    uint64_t cookie) override {
    written_ += len;
    if (!stalled_ && written_ >= after_) {
      stalled_ = true;
      std::this_thread::sleep_for(std::chrono::duration<double>(stall_s_));
    }
    return inner_->submit_write(fd, buf, len, offset, cookie);
  }
  bool submit_read(int fd, uint8_t* buf, size_t len, uint64_t offset, uint64_t cookie) override {
    return inner_->submit_read(fd, buf, len, offset, cookie);
  }
  bool submit_sync(int fd, bool datasync, uint64_t cookie) override {
    return inner_->submit_sync(fd, datasync, cookie);
  }
  size_t reap(bool wait, const Callback& cb) override { return inner_->reap(wait, cb); }
  size_t in_flight() const override { return inner_->in_flight(); }
  size_t capacity() const override { return inner_->capacity(); }
  int completion_fd() override { return inner_->completion_fd(); }
  std::string describe() const override { return inner_->describe() + " (test stall hook)"; }
  common::IoEngine engine() const override { return inner_->engine(); }
  std::string fallback_reason() const override { return inner_->fallback_reason(); }

 private:
  std::unique_ptr<common::BlockIo> inner_;
  double stall_s_;
  uint64_t after_;
  uint64_t written_ = 0;
  bool stalled_ = false;
};

}  // namespace ddft::receiver
