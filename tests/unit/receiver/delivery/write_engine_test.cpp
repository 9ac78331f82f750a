// The write engine on the pwrite BlockIo and a real temporary file.
#include "receiver/delivery/write_engine.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "common/fd.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;

class WriteEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_.reset(::open(path_.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600));
    ASSERT_TRUE(fd_.valid());
    common::BlockIoOptions o;
    o.engine = common::IoEngine::kPwrite;
    o.queue_depth = 2;
    io_ = common::make_block_io(o, nullptr);
  }
  testing::ScratchDir scratch_{"we"};
  fs::path path_ = scratch_.path() / "file";
  common::UniqueFd fd_;
  std::unique_ptr<common::BlockIo> io_;
  common::AlignedBuffer mem_{2 * 8192};
};

TEST_F(WriteEngineTest, HandsOutEachBlockOnceAndTakesThemBack) {
  WriteEngine e(*io_, mem_, 8192);
  Block* a = e.take(nullptr, 0, 10000);
  Block* b = e.take(nullptr, 1, 10000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->mem, b->mem);
  EXPECT_EQ(a->size, 8192u);
  EXPECT_EQ(b->size, 10000u - 8192u);  // the file's tail
  EXPECT_FALSE(e.has_free());
  EXPECT_EQ(e.take(nullptr, 2, 10000), nullptr);
  e.give_back(*a);
  EXPECT_EQ(e.take(nullptr, 2, 100000), a);
}

TEST_F(WriteEngineTest, WritesEachRangeAndOnlyCollectsCompletions) {
  WriteEngine e(*io_, mem_, 8192);
  Block* b = e.take(nullptr, 1, 20000);
  std::memset(b->mem, 'x', 8192);
  b->ranges = {{0, 100}, {200, 300}};
  EXPECT_EQ(e.submit_block(*b, -1, fd_.get()), 2);
  EXPECT_TRUE(b->submitted);
  EXPECT_EQ(b->writes_pending, 2);
  while (e.pending()) e.reap(true);
  std::vector<common::IoCompletion> got;
  e.handle_completions([&](const common::IoCompletion& c) { got.push_back(c); });
  ASSERT_EQ(got.size(), 2u);
  for (const auto& c : got) {
    EXPECT_EQ(c.cookie, reinterpret_cast<uint64_t>(b));
    EXPECT_EQ(c.error, 0);
  }
  EXPECT_EQ(b->writes_pending, 2) << "the engine leaves the counts to the file table";
  char buf[301] = {};
  ASSERT_EQ(::pread(fd_.get(), buf, 300, 8192), 300);
  EXPECT_EQ(buf[0], 'x');
  EXPECT_EQ(buf[150], '\0');  // the hole between the ranges
  EXPECT_EQ(buf[299], 'x');
}

TEST_F(WriteEngineTest, SyncsCarryTheirCookie) {
  WriteEngine e(*io_, mem_, 8192);
  e.submit_sync(fd_.get(), 42);
  while (e.pending()) e.reap(true);
  std::vector<common::IoCompletion> got;
  e.handle_completions([&](const common::IoCompletion& c) { got.push_back(c); });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].cookie, 42u);
}

TEST_F(WriteEngineTest, ACompletionIsHandledOnceEvenWhenItsHandlingThrows) {
  WriteEngine e(*io_, mem_, 8192);
  for (uint64_t cookie : {1, 2, 3}) e.submit_sync(fd_.get(), cookie);
  while (e.pending()) {
    e.flush_backlog();  // the third waits there: the BlockIo takes two at a time
    e.reap(true);
  }
  std::vector<uint64_t> seen;
  EXPECT_THROW(e.handle_completions([&](const common::IoCompletion& c) {
    seen.push_back(c.cookie);
    if (c.cookie == 2) throw std::runtime_error("handling failed");
  }),
               std::runtime_error);
  e.submit_sync(fd_.get(), 4);  // reaped after the throw: comes after the one left over
  while (e.pending()) e.reap(true);
  e.handle_completions([&](const common::IoCompletion& c) { seen.push_back(c.cookie); });
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace ddft::receiver
