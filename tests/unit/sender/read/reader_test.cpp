// The reader stage: blocks, digests, and FILE_LOCK against a writer's lock (fake clock).
#include "sender/read/reader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/fd.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;

class ReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "a.txt") << std::string(25000, 'a');
    files_ = {{(dir_ / "a.txt").string(), "a.txt"}};
  }
  std::vector<WorkItem> read_all(Reader& r, BufferPool& pool, common::BoundedQueue<WorkItem>& q) {
    std::vector<WorkItem> items;
    std::thread t([&] { r.run(std::stop_token{}); });
    while (auto item = q.pop()) {
      if (item->kind == WorkItem::Kind::kBlock) pool.release(item->buffer);
      items.push_back(std::move(*item));
    }
    t.join();
    return items;
  }
  testing::ScratchDir scratch_{"rd"};
  fs::path dir_ = scratch_.path();
  std::vector<SourceFile> files_;
  SenderConfig cfg_;
  common::FakeClock clock_;
};

TEST_F(ReaderTest, ReadsBlocksAndDigest) {
  BufferPool pool(2, 10000);
  common::BoundedQueue<WorkItem> q(4);
  Reader r(files_, cfg_, clock_, pool, q);
  const auto items = read_all(r, pool, q);
  ASSERT_EQ(items.size(), 5u);  // begin, 3 blocks, end
  EXPECT_EQ(items[0].kind, WorkItem::Kind::kBegin);
  EXPECT_EQ(items[3].len, 5000u);
  EXPECT_EQ(items[4].kind, WorkItem::Kind::kEnd);
  const std::string content(25000, 'a');
  EXPECT_EQ(items[4].digest,
            common::hash_buffer(common::VerifyType::kB2B,
                                {reinterpret_cast<const uint8_t*>(content.data()), 25000}));
}

// A session's ids go on past 2^32 - 1 at 1: never at 0, which names no file.
TEST_F(ReaderTest, FileIdsWrapPastTheLastToOneNeverToZero) {
  std::ofstream(dir_ / "b.txt") << "b";
  std::ofstream(dir_ / "c.txt") << "c";
  files_.push_back({(dir_ / "b.txt").string(), "b.txt"});
  files_.push_back({(dir_ / "c.txt").string(), "c.txt"});
  cfg_.first_file_id = UINT32_MAX - 1;
  BufferPool pool(2, 10000);
  common::BoundedQueue<WorkItem> q(4);
  Reader r(files_, cfg_, clock_, pool, q);
  std::vector<uint32_t> ids;
  for (const WorkItem& item : read_all(r, pool, q)) {
    if (item.kind == WorkItem::Kind::kBegin) ids.push_back(item.meta->file_id);
  }
  EXPECT_EQ(ids, (std::vector<uint32_t>{UINT32_MAX - 1, UINT32_MAX, 1}));
}

// --readers 3: reads complete out of order on three IO threads; blocks must still go on in file
// order with the right data, with more reads wanted than the pool has buffers.
TEST_F(ReaderTest, ParallelReadersHandBlocksOnInFileOrder) {
  std::string content(3'000'000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>((i * 131) >> 7);
  std::ofstream(dir_ / "big.bin", std::ios::binary) << content;
  files_ = {{(dir_ / "big.bin").string(), "big.bin"}};
  cfg_.readers = 3;
  cfg_.read_queue_depth = 4;
  BufferPool pool(6, 64 * 1024);
  common::BoundedQueue<WorkItem> q(3);
  Reader r(files_, cfg_, clock_, pool, q);
  std::vector<WorkItem> items;
  std::string got;
  std::thread t([&] { r.run(std::stop_token{}); });
  while (auto item = q.pop()) {
    if (item->kind == WorkItem::Kind::kBlock) {
      EXPECT_EQ(item->offset, got.size());
      got.append(reinterpret_cast<const char*>(pool.data(item->buffer)), item->len);
      pool.release(item->buffer);
    }
    items.push_back(std::move(*item));
  }
  t.join();
  ASSERT_EQ(got.size(), content.size());
  EXPECT_TRUE(got == content);
  ASSERT_EQ(items.back().kind, WorkItem::Kind::kEnd);
  EXPECT_EQ(
      items.back().digest,
      common::hash_buffer(common::VerifyType::kB2B,
                          {reinterpret_cast<const uint8_t*>(content.data()), content.size()}));
}

TEST_F(ReaderTest, FileLockWaitsForTheWriterThenGivesUp) {
  common::UniqueFd writer(::open((dir_ / "a.txt").c_str(), O_RDWR));
  ASSERT_EQ(::flock(writer.get(), LOCK_EX), 0);
  cfg_.file_lock = true;
  cfg_.lock_timeout_s = 2;
  BufferPool pool(2, 10000);
  common::BoundedQueue<WorkItem> q(4);
  Reader r(files_, cfg_, clock_, pool, q);
  const auto items = read_all(r, pool, q);
  // Not sent: the writer kept its lock. Only the skip goes on, so that observers hear why.
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].kind, WorkItem::Kind::kSkip);
  EXPECT_EQ(items[0].meta->file_id, 0u);
  EXPECT_NE(items[0].reason.find("a writer held its lock for 2 s"), std::string::npos)
      << items[0].reason;
  EXPECT_EQ(r.open_failures(), 1u);
  EXPECT_GE(clock_.slept(), std::chrono::seconds(2));
  EXPECT_LE(clock_.slept(), std::chrono::milliseconds(2100));
}

// A clock whose first sleep lets the "writer" finish: it appends to the file and drops its lock,
// exactly while the reader waits for the lock.
class WriterFinishesClock final : public common::Clock {
 public:
  WriterFinishesClock(int writer_fd, std::string more) : fd_(writer_fd), more_(std::move(more)) {}
  time_point now() const override { return fake_.now(); }
  void sleep_until(time_point t) override {
    if (!done_) {
      done_ = true;
      EXPECT_EQ(::write(fd_, more_.data(), more_.size()), ssize_t(more_.size()));
      ::flock(fd_, LOCK_UN);
    }
    fake_.sleep_until(t);
  }

 private:
  common::FakeClock fake_;
  int fd_;
  std::string more_;
  bool done_ = false;
};

TEST_F(ReaderTest, FileLockSendsWhatTheWriterLeftNotAnOldSize) {
  common::UniqueFd writer(::open((dir_ / "a.txt").c_str(), O_WRONLY | O_APPEND));
  ASSERT_EQ(::flock(writer.get(), LOCK_EX), 0);
  WriterFinishesClock clock(writer.get(), std::string(5000, 'b'));
  cfg_.file_lock = true;
  BufferPool pool(2, 10000);
  common::BoundedQueue<WorkItem> q(4);
  Reader r(files_, cfg_, clock, pool, q);
  const auto items = read_all(r, pool, q);
  ASSERT_FALSE(items.empty());
  EXPECT_EQ(items[0].meta->size, 30000u);  // 25,000 + the 5,000 written under the lock
  const std::string content = std::string(25000, 'a') + std::string(5000, 'b');
  EXPECT_EQ(items.back().digest,
            common::hash_buffer(common::VerifyType::kB2B,
                                {reinterpret_cast<const uint8_t*>(content.data()), 30000}));
}

TEST_F(ReaderTest, FileLockReadsAFileNobodyHolds) {
  cfg_.file_lock = true;
  BufferPool pool(2, 10000);
  common::BoundedQueue<WorkItem> q(4);
  Reader r(files_, cfg_, clock_, pool, q);
  EXPECT_EQ(read_all(r, pool, q).size(), 5u);
  EXPECT_EQ(clock_.sleeps(), 0);
}

}  // namespace
}  // namespace ddft::sender
