// FileBlocks: filling, in-order hashing and releasing, on a real file through pwrite.
#include "receiver/assembly/file_blocks.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;

class FileBlocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    common::BlockIoOptions o;
    o.engine = common::IoEngine::kPwrite;
    o.queue_depth = 8;
    io_ = common::make_block_io(o, nullptr);
    engine_ = std::make_unique<WriteEngine>(*io_, mem_, 4096);
    f_.size = 3 * 4096;
    f_.verify = common::VerifyType::kB2B;
    f_.hasher = common::make_hasher(f_.verify);
    f_.tmp.fd.reset(::open(path_.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600));
    f_.tmp_ready = true;
  }
  // Completes every write, as the file table's pump() would.
  void drain(FileBlocks& fb) {
    while (engine_->pending()) engine_->reap(true);
    engine_->handle_completions([&](const common::IoCompletion& c) { fb.on_write_done(c); });
  }
  testing::ScratchDir scratch_{"fb"};
  fs::path path_ = scratch_.path() / "file";
  std::unique_ptr<common::BlockIo> io_;
  common::AlignedBuffer mem_{4 * 4096};
  std::unique_ptr<WriteEngine> engine_;
  File f_;
};

TEST_F(FileBlocksTest, FillMergesRangesAndSaysWhenFull) {
  std::vector<uint8_t> half(2048, 7);
  Block* b = engine_->take(&f_, 0, f_.size);
  EXPECT_FALSE(FileBlocks::fill(*b, 2048, half));
  EXPECT_TRUE(FileBlocks::fill(*b, 0, half));
  ASSERT_EQ(b->ranges.size(), 1u);
  EXPECT_EQ(b->ranges[0], std::make_pair(uint32_t{0}, uint32_t{4096}));
}

TEST_F(FileBlocksTest, BlocksAreHashedInFileOrderWrittenAndGivenBack) {
  FileBlocks fb(*engine_);
  std::vector<uint8_t> data(f_.size);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  // Block 1 first: it waits (resident) for block 0 before it is hashed.
  for (uint64_t idx : {1, 0, 2}) {
    Block* b = fb.find_or_take(f_, idx);
    ASSERT_TRUE(FileBlocks::fill(*b, 0, {data.data() + idx * 4096, 4096}));
    fb.on_filled(f_, *b);
  }
  EXPECT_EQ(f_.hash_next, 3u);
  EXPECT_EQ(f_.ops_pending, 3);
  drain(fb);
  EXPECT_EQ(f_.ops_pending, 0);
  EXPECT_TRUE(f_.blocks.empty()) << "written and hashed blocks go back";
  EXPECT_TRUE(engine_->has_free());
  const auto want = common::hash_buffer(f_.verify, data);
  EXPECT_EQ(f_.hasher->finish().hex(), want.hex());
}

TEST_F(FileBlocksTest, EvictionWritesPartialBlocksAndDropsTheHash) {
  FileBlocks fb(*engine_);
  std::vector<uint8_t> piece(100, 1);
  Block* b = fb.find_or_take(f_, 1);
  FileBlocks::fill(*b, 0, piece);
  fb.evict(f_);
  EXPECT_FALSE(f_.hash_stream);
  EXPECT_EQ(f_.evicted.count(1), 1u);
  EXPECT_TRUE(f_.blocks.empty());
  drain(fb);
  EXPECT_EQ(fs::file_size(path_), 4096u + 100u);
}

}  // namespace
}  // namespace ddft::receiver
