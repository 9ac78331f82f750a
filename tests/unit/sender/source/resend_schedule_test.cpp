// --resend-after on a fake clock, with real files: each file sent goes again after each delay,
// from where the hot folder moved it, only while unchanged; a resend is not resent; a one-shot
// source ends once every file is reported and nothing is left to resend.
#include "sender/source/resend_schedule.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sender/work_item.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using std::chrono::seconds;

class ResendScheduleTest : public ::testing::Test {
 protected:
  // A file written at `rel` and its meta as the reader would announce it.
  FileMeta sent_file(const std::string& rel, uint32_t id, uint64_t tag) {
    const fs::path p = dir_.path() / rel;
    std::ofstream(p) << "content of " << rel;
    FileMeta m;
    m.file_id = id;
    m.rel_path = rel;
    m.src_path = p.string();
    m.size = fs::file_size(p);
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0);
    m.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    m.tag = tag;
    return m;
  }
  common::Digest digest() const {
    common::Digest d;
    d.type = common::VerifyType::kB2B;
    d.size = 16;
    return d;
  }
  testing::ScratchDir dir_{"resend_schedule"};
  common::FakeClock clock_;
};

TEST_F(ResendScheduleTest, EachFileGoesAgainAfterEachDelayAndACopyIsNotResent) {
  ResendSchedule s({seconds(30), seconds(90)}, common::VerifyType::kB2B, clock_);
  s.session_started(0x5e55);
  const FileMeta a = sent_file("a.bin", 1, 0);
  s.file_sent_via(a, digest(), common::kLaneUnsaid);
  clock_.advance(seconds(29));
  EXPECT_FALSE(s.due());
  clock_.advance(seconds(1));
  std::optional<SourceFile> r = s.due();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->rel_path, "a.bin");
  ASSERT_TRUE(r->resend_of);
  EXPECT_EQ(r->resend_of->session, 0x5e55u);
  EXPECT_EQ(r->resend_of->file_id, 1u);
  EXPECT_EQ(r->resend_of->digest, digest().hex());
  EXPECT_FALSE(s.due());
  // The copy, reported sent, is not scheduled again.
  FileMeta copy = a;
  copy.file_id = 2;
  copy.resend_of = r->resend_of;
  s.file_sent_via(copy, digest(), common::kLaneUnsaid);
  clock_.advance(seconds(60));
  ASSERT_TRUE(s.due()) << "the second delay";
  clock_.advance(seconds(1000));
  EXPECT_FALSE(s.due());
  EXPECT_TRUE(s.done());
}

TEST_F(ResendScheduleTest, AMovedFileGoesFromWhereItIsAChangedOneNotAtAll) {
  ResendSchedule s({seconds(10)}, common::VerifyType::kB2B, clock_);
  s.file_sent_via(sent_file("moved.bin", 1, 7), digest(), common::kLaneUnsaid);
  s.file_sent_via(sent_file("changed.bin", 2, 8), digest(), common::kLaneUnsaid);
  fs::create_directories(dir_.path() / "sent");
  fs::rename(dir_.path() / "moved.bin", dir_.path() / "sent" / "moved.bin");
  s.moved(7, (dir_.path() / "sent" / "moved.bin").string());
  std::ofstream(dir_.path() / "changed.bin", std::ios::app) << " and more";
  clock_.advance(seconds(10));
  std::optional<SourceFile> r = s.due();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->path, (dir_.path() / "sent" / "moved.bin").string());
  EXPECT_FALSE(s.due()) << "changed.bin changed since it was sent";
}

TEST_F(ResendScheduleTest, AOneShotSourceEndsOnceEveryFileIsReportedAndNothingIsDue) {
  ResendSchedule s({seconds(5)}, common::VerifyType::kB2B, clock_);
  std::vector<SourceFile> files(1);
  files[0].path = (dir_.path() / "one.bin").string();
  files[0].rel_path = "one.bin";
  ListSource list(files);
  ResendingSource source(list, s);
  std::stop_source stop;
  ASSERT_TRUE(source.next(stop.get_token()));
  EXPECT_FALSE(s.done()) << "handed out, not reported";
  s.file_sent_via(sent_file("one.bin", 1, 0), digest(), common::kLaneUnsaid);
  EXPECT_FALSE(s.done()) << "its resend is to come";
  clock_.advance(seconds(5));
  std::optional<SourceFile> r = source.next(stop.get_token());
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->resend_of);
  EXPECT_TRUE(s.done());
  EXPECT_FALSE(source.next(stop.get_token()));
}

}  // namespace
}  // namespace ddft::sender
