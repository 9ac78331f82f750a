// The reader stage: blocks, digests, and FILE_LOCK against a writer's lock (fake clock).
#include "sender/read/reader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "common/fd.hpp"
#include "sender/source/file_list.hpp"
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

// What a reader made of a list: its items, and the bytes it read of each file by relative path.
struct ReadOutcome {
  std::vector<WorkItem> items;
  std::map<std::string, std::string> bytes;
};

// A folder listed under --symlinks skip or error, then one of its files, or a folder on the way,
// replaced by a symbolic link to a file of other contents before the reader opens it (the window
// between listing and reading). The link is not followed: the file is a read failure, logged and
// handed on as a skip with the reason, and the linked-to bytes are never read.
class ReaderLinkSwapTest : public ReaderTest {
 protected:
  void SetUp() override {
    write(dir_ / "src/sub/swapped.txt", "the bytes listed");
    write(dir_ / "src/sub/kept.txt", "kept");
    write(dir_ / "secret/swapped.txt", "SECRET: never to be sent");
    write(dir_ / "secret/kept.txt", "SECRET too");
  }
  static void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  ReadOutcome read_list(const std::vector<SourceFile>& list, uint64_t* failures) {
    BufferPool pool(2, 10000);
    common::BoundedQueue<WorkItem> q(4);
    Reader r(list, cfg_, clock_, pool, q);
    ReadOutcome out;
    std::thread t([&] { r.run(std::stop_token{}); });
    while (auto item = q.pop()) {
      if (item->kind == WorkItem::Kind::kBlock) {
        out.bytes[item->meta->rel_path].append(
            reinterpret_cast<const char*>(pool.data(item->buffer)), item->len);
        pool.release(item->buffer);
      }
      out.items.push_back(std::move(*item));
    }
    t.join();
    *failures = r.open_failures();
    return out;
  }
  // The reason of the skip item for `rel`, or "" when there is none.
  static std::string skip_reason(const ReadOutcome& o, const std::string& rel) {
    for (const WorkItem& item : o.items) {
      if (item.kind == WorkItem::Kind::kSkip && item.meta->rel_path == rel) return item.reason;
    }
    return "";
  }
  static bool read_secret(const ReadOutcome& o) {
    for (const auto& [rel, bytes] : o.bytes) {
      if (bytes.find("SECRET") != std::string::npos) return true;
    }
    return false;
  }
};

TEST_F(ReaderLinkSwapTest, AFileReplacedByALinkAfterListingIsNotReadThroughIt) {
  for (const SymlinkMode mode : {SymlinkMode::kSkip, SymlinkMode::kError}) {
    const std::string name(symlink_mode_name(mode));
    SCOPED_TRACE(name);
    fs::remove(dir_ / "src/sub/swapped.txt");  // the link of the mode before
    write(dir_ / "src/sub/swapped.txt", "the bytes listed");
    const FileList list = discover_files({(dir_ / "src").string()}, {}, {}, mode);
    ASSERT_EQ(list.files.size(), 2u);
    fs::remove(dir_ / "src/sub/swapped.txt");
    fs::create_symlink(dir_ / "secret/swapped.txt", dir_ / "src/sub/swapped.txt");
    cfg_.symlinks = mode;
    uint64_t failures = 0;
    ReadOutcome o = read_list(list.files, &failures);
    EXPECT_FALSE(read_secret(o));
    EXPECT_FALSE(o.bytes.contains("src/sub/swapped.txt"));
    EXPECT_EQ(o.bytes["src/sub/kept.txt"], "kept");
    EXPECT_EQ(skip_reason(o, "src/sub/swapped.txt"),
              "cannot read '" + (dir_ / "src/sub/swapped.txt").string() + "': '" +
                  (dir_ / "src/sub/swapped.txt").string() +
                  "' is a symbolic link now, not what was listed (--symlinks " + name +
                  ": not followed)");
    EXPECT_EQ(failures, 1u);
  }
}

TEST_F(ReaderLinkSwapTest, AFolderReplacedByALinkAfterListingIsNotReadThroughIt) {
  cfg_.symlinks = SymlinkMode::kSkip;
  const FileList list = discover_files({(dir_ / "src").string() + "/"}, {}, {}, cfg_.symlinks);
  ASSERT_EQ(list.files.size(), 2u);
  fs::rename(dir_ / "src/sub", dir_ / "sub.moved");
  fs::create_directory_symlink(dir_ / "secret", dir_ / "src/sub");
  uint64_t failures = 0;
  ReadOutcome o = read_list(list.files, &failures);
  EXPECT_FALSE(read_secret(o));
  EXPECT_TRUE(o.bytes.empty());
  for (const char* rel : {"sub/kept.txt", "sub/swapped.txt"}) {
    EXPECT_EQ(skip_reason(o, rel), "cannot read '" + (dir_ / "src" / rel).string() + "': '" +
                                       (dir_ / "src/sub").string() +
                                       "' is a symbolic link now, not what was listed "
                                       "(--symlinks skip: not followed)");
  }
  EXPECT_EQ(failures, 2u);
}

// Where links are followed, they still are: under --symlinks follow, and for a file named on the
// command line (the operator named it, whatever --symlinks says).
TEST_F(ReaderLinkSwapTest, LinksAreFollowedWhereTheModeOrTheOperatorFollowsThem) {
  const FileList followed = discover_files({(dir_ / "src").string()}, {}, {}, SymlinkMode::kFollow);
  const FileList named = discover_files({(dir_ / "src/sub/swapped.txt").string()});
  fs::remove(dir_ / "src/sub/swapped.txt");
  fs::create_symlink(dir_ / "secret/swapped.txt", dir_ / "src/sub/swapped.txt");
  for (const FileList* list : {&followed, &named}) {
    cfg_.symlinks = list == &followed ? SymlinkMode::kFollow : SymlinkMode::kSkip;
    uint64_t failures = 0;
    ReadOutcome o = read_list(list->files, &failures);
    const std::string rel = list == &followed ? "src/sub/swapped.txt" : "swapped.txt";
    EXPECT_EQ(o.bytes[rel], "SECRET: never to be sent");
    EXPECT_EQ(failures, 0u);
  }
}

}  // namespace
}  // namespace ddft::sender
