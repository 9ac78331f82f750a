// FailureRecords on a real output folder and FsPool, with a FakeClock.
#include "receiver/assembly/failure_records.hpp"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;

class FailureRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = std::make_unique<OutputDir>(base_.string(), (base_ / ".failed").string(),
                                       CollisionPolicy::kRename);
  }
  void settle() {
    while (pool_.pending() > 0) {
      pool_.wait(std::chrono::milliseconds(50));
      pool_.reap();
    }
  }
  size_t record_count() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(base_ / ".failed")) n += e.is_regular_file();
    return n;
  }
  static FailureRecord rec(uint32_t id) {
    FailureRecord r;
    r.file.path = "f" + std::to_string(id) + ".bin";
    r.file.session = 1;
    r.file.file_id = id;
    r.reason = "test";
    r.file.verify = common::VerifyType::kB2B;
    return r;
  }
  testing::ScratchDir scratch_{"fr"};
  fs::path base_ = scratch_.path();
  std::unique_ptr<OutputDir> out_;
  FsPool pool_{1, "tfr"};
  common::FakeClock clock_;
  AssemblerCounters counters_;
};

TEST_F(FailureRecordsTest, WritesARecordAndTellsWhere) {
  FailureRecords r(*out_, pool_, clock_, false, counters_);
  std::string where = "unset";
  r.write(rec(1), nullptr, [&](const std::string& w) { where = w; });
  settle();
  EXPECT_NE(where.find(".failed"), std::string::npos) << where;
  EXPECT_EQ(record_count(), 1u);
}

TEST_F(FailureRecordsTest, TheBudgetIsPerMinuteAndVouchedFilesHaveTheirOwn) {
  FailureRecords r(*out_, pool_, clock_, false, counters_);
  for (uint64_t i = 0; i < kRecordsPerMinute; ++i) EXPECT_TRUE(r.take_slot());
  EXPECT_FALSE(r.take_slot());
  EXPECT_TRUE(r.take_slot(/*vouched=*/true));
  EXPECT_EQ(counters_.records_suppressed, 1u);
  clock_.advance(std::chrono::minutes(1));
  EXPECT_TRUE(r.take_slot());
  FailureRecords keyed(*out_, pool_, clock_, true, counters_);
  for (uint64_t i = 0; i < kRecordsPerMinute + 5; ++i) ASSERT_TRUE(keyed.take_slot());
}

TEST_F(FailureRecordsTest, UnnamedFailuresAreKeptUntilAListNamesThem) {
  FailureRecords r(*out_, pool_, clock_, false, counters_);
  r.keep_unnamed(1, 9, rec(9));
  EXPECT_FALSE(r.take_unnamed(1, 8).has_value());
  EXPECT_FALSE(r.take_unnamed(2, 9).has_value()) << "file 9 of another session";
  auto got = r.take_unnamed(1, 9);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->file.path, "f9.bin");
  EXPECT_FALSE(r.take_unnamed(1, 9).has_value());
  r.keep_unnamed(1, 10, rec(10));
  r.keep_unnamed(2, 10, rec(10));
  r.forget_unnamed(1);
  EXPECT_FALSE(r.take_unnamed(1, 10).has_value());
  EXPECT_TRUE(r.take_unnamed(2, 10).has_value()) << "another session's stays";
  r.write_named(*got, true);
  settle();
  EXPECT_EQ(record_count(), 1u);
}

// A record the file system refuses (the output a tmpfs remounted read-only) stays on its way: it
// is kept, written by the retry once the file system takes writes again, and only then reported.
TEST_F(FailureRecordsTest, ARecordTheFileSystemRefusedIsOnItsWayUntilARetryWritesIt) {
  const fs::path root = base_ / "tmpfs";
  fs::create_directories(root);
  testing::ScopedMount mount(root, "tmpfs");
  if (!mount.mounted()) GTEST_SKIP() << mount.skip_reason();
  const fs::path failed = root / ".failed";
  OutputDir out(root.string(), failed.string(), CollisionPolicy::kRename);
  FailureRecords r(out, pool_, clock_, false, counters_);
  std::vector<std::string> recorded;
  r.set_on_recorded([&](const common::FileIdentity& f, const std::string& where) {
    EXPECT_EQ(f.file_id, 4u);
    recorded.push_back(where);
  });
  ASSERT_EQ(::mount(nullptr, root.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  std::string where = "unset";
  r.write(rec(4), nullptr, [&](const std::string& w) { where = w; });
  EXPECT_TRUE(r.writing(1, 4));
  settle();
  EXPECT_EQ(where, "") << "a read-only folder took the record";
  EXPECT_TRUE(r.writing(1, 4)) << "kept for the retry";
  EXPECT_TRUE(recorded.empty());

  ASSERT_EQ(::mount(nullptr, root.c_str(), nullptr, MS_REMOUNT, nullptr), 0)
      << std::strerror(errno);
  clock_.advance(std::chrono::seconds(5));
  r.retry(clock_.now());
  settle();
  EXPECT_FALSE(r.writing(1, 4));
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_TRUE(recorded[0].starts_with(failed.string() + "/")) << recorded[0];
  EXPECT_TRUE(fs::exists(recorded[0]));
  EXPECT_FALSE(r.writing(1, 5)) << "a file never recorded";
}

TEST_F(FailureRecordsTest, FormatsTheFirstMissingRanges) {
  EXPECT_EQ(format_missing({{0, 10}, {20, 30}}), "0-10, 20-30");
  std::vector<std::pair<uint64_t, uint64_t>> many(9, {1, 2});
  EXPECT_EQ(format_missing(many), "1-2, 1-2, 1-2, 1-2, 1-2");
}

}  // namespace
}  // namespace ddft::receiver
