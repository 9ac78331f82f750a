#include "common/block_io.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/fd.hpp"
#include "support/engines.hpp"
#include "support/host_probe.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {
namespace fs = std::filesystem;

using ddft::testing::EngineParam;

class BlockIoTest : public ::testing::TestWithParam<EngineParam> {
 protected:
  void SetUp() override {
    mem_ = AlignedBuffer(2 << 20);
    BlockIoOptions o;
    o.engine = GetParam().engine;
    o.threads = GetParam().threads;
    o.queue_depth = 8;
    o.fixed = mem_.span();
    if (const std::string why = ddft::testing::engine_missing(o.engine); !why.empty()) {
      GTEST_SKIP() << why;
    }
    // The host has the engine: a refusal throws, and fails the test.
    std::string note;
    io_ = make_block_io(o, &note);
    EXPECT_EQ(io_->engine(), o.engine) << io_->describe();
    EXPECT_EQ(note, "");
  }
  void TearDown() override { io_.reset(); }
  // Submits `count` requests made by `submit(i)` (more than the queue holds: submit reports
  // "full" and the caller reaps) and returns each cookie's completions.
  template <typename Submit>
  std::map<uint64_t, std::vector<IoCompletion>> run_all(size_t count, Submit submit) {
    std::map<uint64_t, std::vector<IoCompletion>> seen;
    size_t next = 0;
    while (next < count || io_->in_flight() > 0) {
      while (next < count && submit(next)) ++next;
      io_->reap(true, [&](const IoCompletion& c) { seen[c.cookie].push_back(c); });
    }
    return seen;
  }
  testing::ScratchDir scratch_{"bio"};
  fs::path path_ = scratch_.path() / "blocks";
  AlignedBuffer mem_;
  std::unique_ptr<BlockIo> io_;
};

constexpr size_t kBlock = 64 * 1024;
constexpr size_t kBlocks = 16;

TEST_P(BlockIoTest, WritesEveryBlockAndReportsEachOnce) {
  UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
  ASSERT_TRUE(fd);
  for (size_t i = 0; i < kBlocks; ++i) std::memset(mem_.data() + i * kBlock, int('a' + i), kBlock);
  EXPECT_GE(io_->capacity(), 8u * GetParam().threads);
  auto seen = run_all(kBlocks, [&](size_t i) {
    return io_->submit_write(fd.get(), mem_.data() + i * kBlock, kBlock, i * kBlock, 100 + i);
  });
  ASSERT_EQ(seen.size(), kBlocks);
  for (auto& [cookie, cs] : seen) {
    ASSERT_EQ(cs.size(), 1u) << cookie;
    EXPECT_EQ(cs[0].error, 0);
    EXPECT_EQ(cs[0].bytes, kBlock);
  }
  ASSERT_TRUE(io_->submit_sync(fd.get(), true, 999));
  bool synced = false;
  while (!synced) {
    io_->reap(true, [&](const IoCompletion& c) {
      EXPECT_EQ(c.cookie, 999u);
      EXPECT_EQ(c.error, 0);
      synced = true;
    });
  }
  EXPECT_EQ(fs::file_size(path_), kBlocks * kBlock);
  std::vector<char> back(kBlock);
  ASSERT_EQ(::pread(fd.get(), back.data(), kBlock, 5 * kBlock), ssize_t(kBlock));
  EXPECT_EQ(back[0], 'f');
  EXPECT_EQ(back[kBlock - 1], 'f');
}

TEST_P(BlockIoTest, ReadsEveryBlockAndStopsShortOnlyAtTheEnd) {
  // A file of 15.5 blocks: the last read meets the end of the file and says how much it got.
  const size_t size = kBlocks * kBlock - kBlock / 2;
  {
    std::vector<uint8_t> data(size);
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<uint8_t>(i * 7 + i / kBlock);
    UniqueFd w(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    ASSERT_EQ(::write(w.get(), data.data(), size), ssize_t(size));
  }
  UniqueFd fd(::open(path_.c_str(), O_RDONLY));
  ASSERT_TRUE(fd);
  std::memset(mem_.data(), 0, kBlocks * kBlock);
  auto seen = run_all(kBlocks + 1, [&](size_t i) {
    return io_->submit_read(fd.get(), mem_.data() + i * kBlock, kBlock, i * kBlock, i);
  });
  ASSERT_EQ(seen.size(), kBlocks + 1);
  for (auto& [i, cs] : seen) {
    ASSERT_EQ(cs.size(), 1u) << i;
    EXPECT_EQ(cs[0].error, 0);
    const size_t want = i * kBlock >= size ? 0 : std::min(kBlock, size - i * kBlock);
    EXPECT_EQ(cs[0].bytes, want) << "block " << i;
  }
  for (size_t i = 0; i < size; i += 4093) {
    ASSERT_EQ(mem_.data()[i], static_cast<uint8_t>(i * 7 + i / kBlock)) << "byte " << i;
  }
}

TEST_P(BlockIoTest, ErrorsAreReportedNotThrown) {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CREAT, 0600));  // not writable
  ASSERT_TRUE(fd);
  ASSERT_TRUE(io_->submit_write(fd.get(), mem_.data(), 4096, 0, 7));
  ASSERT_TRUE(io_->submit_read(-1, mem_.data(), 4096, 0, 8));
  std::map<uint64_t, int> error;
  while (io_->in_flight() > 0) {
    io_->reap(true, [&](const IoCompletion& c) { error[c.cookie] = c.error; });
  }
  EXPECT_EQ(error[7], EBADF);
  EXPECT_EQ(error[8], EBADF);
}

// IO threads with requests stuck in flight must still take new ones while they have room: a
// request whose data is ready completes although two earlier ones (reads of empty pipes) have not.
TEST(PooledBlockIo, ANewRequestDoesNotWaitForUnrelatedOnes) {
  BlockIoOptions o;
  o.engine = IoEngine::kUring;
  o.threads = 2;
  o.queue_depth = 2;
  if (const std::string why = ddft::testing::io_uring_missing(); !why.empty()) GTEST_SKIP() << why;
  std::unique_ptr<BlockIo> io = make_block_io(o, nullptr);
  int a[2], b[2], c[2];
  ASSERT_EQ(::pipe(a), 0);
  ASSERT_EQ(::pipe(b), 0);
  ASSERT_EQ(::pipe(c), 0);
  char buf[3][8] = {};
  ASSERT_TRUE(io->submit_read(a[0], reinterpret_cast<uint8_t*>(buf[0]), 1, 0, 1));
  ASSERT_TRUE(io->submit_read(b[0], reinterpret_cast<uint8_t*>(buf[1]), 1, 0, 2));
  // Let both threads settle into waiting for those completions (not a timing assertion: the
  // pause only makes likely the interleaving in which a wrong pool would stall).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(::write(c[1], "z", 1), 1);
  ASSERT_TRUE(io->submit_read(c[0], reinterpret_cast<uint8_t*>(buf[2]), 1, 0, 3));
  std::vector<uint64_t> done;
  while (done.empty()) io->reap(true, [&](const IoCompletion& x) { done.push_back(x.cookie); });
  EXPECT_EQ(done, std::vector<uint64_t>{3});
  EXPECT_EQ(buf[2][0], 'z');
  ASSERT_EQ(::write(a[1], "x", 1), 1);
  ASSERT_EQ(::write(b[1], "y", 1), 1);
  while (io->in_flight() > 0)
    io->reap(true, [&](const IoCompletion& x) { done.push_back(x.cookie); });
  EXPECT_EQ(done.size(), 3u);
  io.reset();
  for (int* p : {a, b, c}) {
    ::close(p[0]);
    ::close(p[1]);
  }
}

// kAuto never falls back where the host has io_uring (as a ring of the test's own finds); where
// it has not, the fallback says so and why. One thread and a pool alike.
TEST(BlockIoEngine, AutoRunsIoUringWhereTheHostHasIt) {
  for (unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(threads);
    BlockIoOptions o;
    o.engine = IoEngine::kAuto;
    o.threads = threads;
    std::string note;
    const std::unique_ptr<BlockIo> io = make_block_io(o, &note);
    if (ddft::testing::io_uring_missing().empty()) {
      EXPECT_EQ(io->engine(), IoEngine::kUring) << io->describe();
      EXPECT_EQ(io->fallback_reason(), "");
      EXPECT_EQ(note, "");
    } else {
      EXPECT_EQ(io->engine(), IoEngine::kPwrite);
      EXPECT_NE(io->fallback_reason(), "");
      EXPECT_NE(note.find(io->fallback_reason()), std::string::npos) << note;
      EXPECT_NE(io->describe().find("io_uring unavailable: " + io->fallback_reason()),
                std::string::npos)
          << io->describe();
    }
  }
}

TEST(BlockIoEngine, NamesForTheMetrics) {
  EXPECT_STREQ(io_engine_name(IoEngine::kUring), "io_uring");
  EXPECT_STREQ(io_engine_name(IoEngine::kPwrite), "pwrite");
  EXPECT_STREQ(io_engine_name(IoEngine::kNull), "null");
  EXPECT_STREQ(io_engine_name(IoEngine::kAuto), "auto");
}

INSTANTIATE_TEST_SUITE_P(Engines, BlockIoTest,
                         ::testing::Values(EngineParam{IoEngine::kUring, 1, "uring"},
                                           EngineParam{IoEngine::kPwrite, 1, "pwrite"},
                                           EngineParam{IoEngine::kUring, 3, "uring_3_threads"},
                                           EngineParam{IoEngine::kPwrite, 4, "pwrite_4_threads"}),
                         ddft::testing::engine_name);

}  // namespace
}  // namespace ddft::common
