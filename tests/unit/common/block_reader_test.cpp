// Reading a file through BlockIo: blocks in file order with the right bytes, and on every way out
// (consumer refusal, stop, a file shorter than its size, a read error) no buffer kept.
#include "common/block_reader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/fd.hpp"
#include "support/engines.hpp"
#include "support/host_probe.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {
namespace fs = std::filesystem;

using ddft::testing::EngineParam;

class BlockReaderTest : public ::testing::TestWithParam<EngineParam> {
 protected:
  static constexpr size_t kBlock = 16384;
  static constexpr size_t kBuffers = 4;

  void SetUp() override {
    data_.resize(100'000);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>(i * 131 % 251);
    std::ofstream(path_, std::ios::binary).write(data_.data(), static_cast<long>(data_.size()));
    BlockIoOptions o;
    o.engine = GetParam().engine;
    o.threads = GetParam().threads;
    o.queue_depth = 3;
    o.fixed = pool_.memory();
    if (const std::string why = ddft::testing::engine_missing(o.engine); !why.empty()) {
      GTEST_SKIP() << why;
    }
    // The host has the engine: a refusal throws, and fails the test.
    io_ = make_block_io(o, nullptr);
    EXPECT_EQ(io_->engine(), o.engine) << io_->describe();
  }
  void TearDown() override { io_.reset(); }
  // Every buffer is back in the pool: all of them can be taken without waiting.
  bool all_buffers_free() {
    std::vector<int> taken;
    for (size_t i = 0; i < kBuffers; ++i) {
      const int b = pool_.try_acquire();
      if (b < 0) break;
      taken.push_back(b);
    }
    const bool all = taken.size() == kBuffers;
    for (int b : taken) pool_.release(b);
    return all;
  }

  testing::ScratchDir scratch_{"brd"};
  fs::path path_ = scratch_.path() / "blocks";
  std::string data_;
  BufferPool pool_{kBuffers, kBlock};
  std::unique_ptr<BlockIo> io_;
};

TEST_P(BlockReaderTest, HandsOnEveryBlockInFileOrder) {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  BlockReader reader(*io_, pool_);
  std::string got;
  std::vector<size_t> lens;
  std::string error;
  const auto r = reader.read_file(
      fd.get(), data_.size(), std::stop_token{},
      [&](int buf, uint64_t offset, size_t len) {
        EXPECT_EQ(offset, got.size());
        got.append(reinterpret_cast<const char*>(pool_.data(buf)), len);
        lens.push_back(len);
        pool_.release(buf);
        return true;
      },
      &error);
  EXPECT_EQ(r, ReadResult::kDone);
  EXPECT_EQ(got, data_);
  EXPECT_EQ(lens, (std::vector<size_t>{kBlock, kBlock, kBlock, kBlock, kBlock, kBlock, 1696}));
  EXPECT_TRUE(all_buffers_free());
}

TEST_P(BlockReaderTest, RefusedBlockEndsTheReadAndComesBack) {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  BlockReader reader(*io_, pool_);
  int calls = 0;
  std::string error;
  const auto r = reader.read_file(
      fd.get(), data_.size(), std::stop_token{},
      [&](int buf, uint64_t, size_t) {
        if (++calls == 2) return false;
        pool_.release(buf);
        return true;
      },
      &error);
  EXPECT_EQ(r, ReadResult::kRefused);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(all_buffers_free());
}

TEST_P(BlockReaderTest, StopEndsTheReadWithNothingHeld) {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  BlockReader reader(*io_, pool_);
  std::stop_source stop;
  int calls = 0;
  std::string error;
  const auto r = reader.read_file(
      fd.get(), data_.size(), stop.get_token(),
      [&](int buf, uint64_t, size_t) {
        ++calls;
        pool_.release(buf);
        stop.request_stop();
        return true;
      },
      &error);
  EXPECT_EQ(r, ReadResult::kStopped);
  // Blocks already read in the same round still go on; the stop is seen before the next round.
  EXPECT_GE(calls, 1);
  EXPECT_LT(calls, 7);
  EXPECT_TRUE(all_buffers_free());
}

TEST_P(BlockReaderTest, FileShorterThanItsSizeFails) {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  BlockReader reader(*io_, pool_);
  std::string error;
  uint64_t handed = 0;
  const auto r = reader.read_file(
      fd.get(), data_.size() + 5 * kBlock, std::stop_token{},
      [&](int buf, uint64_t, size_t len) {
        handed += len;
        pool_.release(buf);
        return true;
      },
      &error);
  EXPECT_EQ(r, ReadResult::kFailed);
  EXPECT_EQ(error, "file shrank while it was being read");
  EXPECT_LE(handed, data_.size());
  EXPECT_TRUE(all_buffers_free());
}

TEST_P(BlockReaderTest, ReadErrorIsNamed) {
  UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CLOEXEC));  // reads fail with EBADF
  BlockReader reader(*io_, pool_);
  std::string error;
  const auto r = reader.read_file(
      fd.get(), data_.size(), std::stop_token{},
      [&](int buf, uint64_t, size_t) {
        pool_.release(buf);
        return true;
      },
      &error);
  EXPECT_EQ(r, ReadResult::kFailed);
  EXPECT_EQ(error, std::string("read error: ") + std::strerror(EBADF));
  EXPECT_TRUE(all_buffers_free());
}

INSTANTIATE_TEST_SUITE_P(Engines, BlockReaderTest,
                         ::testing::Values(EngineParam{IoEngine::kPwrite, 1, "pread"},
                                           EngineParam{IoEngine::kPwrite, 3, "pread_pool"},
                                           EngineParam{IoEngine::kUring, 1, "uring"}),
                         ddft::testing::engine_name);

}  // namespace
}  // namespace ddft::common
