#include "receiver/block_writer.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "common/aligned_buffer.hpp"
#include "common/fd.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;

class BlockWriterTest : public ::testing::TestWithParam<IoEngine> {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("ddft_bw_" + std::to_string(::getpid()));
    mem_ = common::AlignedBuffer(1 << 20);
    std::string note;
    try {
      writer_ = make_block_writer(GetParam(), 8, mem_.span(), &note);
    } catch (const std::exception& e) {
      GTEST_SKIP() << "io_uring unavailable here: " << e.what();
    }
  }
  void TearDown() override { fs::remove(path_); }
  fs::path path_;
  common::AlignedBuffer mem_;
  std::unique_ptr<BlockWriter> writer_;
};

TEST_P(BlockWriterTest, WritesEveryBlockAndReportsEachOnce) {
  common::UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600));
  ASSERT_TRUE(fd);
  constexpr size_t kBlock = 64 * 1024;
  for (size_t i = 0; i < 16; ++i) std::memset(mem_.data() + i * kBlock, int('a' + i), kBlock);
  std::map<uint64_t, int> seen;
  size_t next = 0;
  // Submit more than the queue depth: submit reports "full" and the caller reaps.
  while (next < 16 || writer_->in_flight() > 0) {
    while (next < 16 &&
           writer_->submit_write(fd.get(), mem_.data() + next * kBlock, kBlock, next * kBlock,
                                 100 + next)) {
      ++next;
    }
    writer_->reap(true, [&](const WriteCompletion& c) {
      EXPECT_EQ(c.error, 0);
      ++seen[c.cookie];
    });
  }
  ASSERT_EQ(seen.size(), 16u);
  for (auto& [cookie, count] : seen) EXPECT_EQ(count, 1) << cookie;
  ASSERT_TRUE(writer_->submit_sync(fd.get(), true, 999));
  bool synced = false;
  while (!synced) {
    writer_->reap(true, [&](const WriteCompletion& c) {
      EXPECT_EQ(c.cookie, 999u);
      EXPECT_EQ(c.error, 0);
      synced = true;
    });
  }
  EXPECT_EQ(fs::file_size(path_), 16 * kBlock);
  std::vector<char> back(kBlock);
  ASSERT_EQ(::pread(fd.get(), back.data(), kBlock, 5 * kBlock), ssize_t(kBlock));
  EXPECT_EQ(back[0], 'f');
  EXPECT_EQ(back[kBlock - 1], 'f');
}

TEST_P(BlockWriterTest, ErrorsAreReportedNotThrown) {
  common::UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CREAT, 0600));  // not writable
  ASSERT_TRUE(fd);
  ASSERT_TRUE(writer_->submit_write(fd.get(), mem_.data(), 4096, 0, 7));
  int error = 0;
  while (writer_->in_flight() > 0) {
    writer_->reap(true, [&](const WriteCompletion& c) { error = c.error; });
  }
  EXPECT_EQ(error, EBADF);
}

INSTANTIATE_TEST_SUITE_P(Engines, BlockWriterTest,
                         ::testing::Values(IoEngine::kUring, IoEngine::kPwrite),
                         [](const auto& param_info) {
                           return param_info.param == IoEngine::kUring ? "uring" : "pwrite";
                         });

}  // namespace
}  // namespace ddft::receiver
