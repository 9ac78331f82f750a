// The hot folder's journal: records survive a reopen, damage is found and skipped (never glued
// to the next record), another file given by mistake is never overwritten, and it is compacted.
#include "sender/source/watch_journal.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;

using ddft::testing::read_file;

class WatchJournalTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = (dir_ / ".ddft-watch-journal").string(); }
  testing::ScratchDir scratch_{"journal"};
  fs::path dir_ = scratch_.path();
  std::string path_;
};

const JournalRecord kA{"a.txt", {1, 100, 10, 1'700'000'000'123'456'789}};
const JournalRecord kB{"sub dir/b%c\n\xff.bin", {1, 101, 0, -5}};

TEST(JournalLine, RoundTripsAnyName) {
  for (const auto& r : {kA, kB}) {
    for (char kind : {'S', 'D'}) {
      const std::string line = format_journal_line(kind, r);
      ASSERT_EQ(line.back(), '\n');
      EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line, whatever the name";
      bool done = false;
      std::string why;
      auto back =
          parse_journal_line(std::string_view(line).substr(0, line.size() - 1), &done, &why);
      ASSERT_TRUE(back) << why << ": " << line;
      EXPECT_EQ(*back, r);
      EXPECT_EQ(done, kind == 'D');
    }
  }
}

TEST(JournalLine, EveryAlteredByteIsCaught) {
  const std::string line = format_journal_line('S', kA);
  const std::string body = line.substr(0, line.size() - 1);
  for (size_t i = 0; i < body.size(); ++i) {
    std::string bad = body;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    bool done = false;
    std::string why;
    EXPECT_FALSE(parse_journal_line(bad, &done, &why)) << "byte " << i << ": " << bad;
  }
  bool done = false;
  std::string why;
  EXPECT_FALSE(parse_journal_line(body.substr(0, body.size() / 2), &done, &why));
  EXPECT_FALSE(parse_journal_line("", &done, &why));
}

TEST_F(WatchJournalTest, NewJournalHasItsHeaderOnDisk) {
  WatchJournal j(path_);
  EXPECT_EQ(read_file(path_), std::string(WatchJournal::kHeader) + "\n");
  EXPECT_TRUE(j.unfinished().empty());
  EXPECT_TRUE(j.damaged().empty());
}

TEST_F(WatchJournalTest, SentWithoutDoneSurvivesAReopen) {
  {
    WatchJournal j(path_);
    std::string why;
    ASSERT_TRUE(j.record_sent(kA, &why)) << why;
    ASSERT_TRUE(j.record_sent(kB, &why)) << why;
    ASSERT_TRUE(j.record_done(kA, &why)) << why;
  }
  WatchJournal j(path_);
  EXPECT_EQ(j.unfinished(), std::vector<JournalRecord>{kB});
  EXPECT_TRUE(j.damaged().empty());
}

TEST_F(WatchJournalTest, ADoneForAnotherVersionLeavesTheSentRecord) {
  JournalRecord newer = kA;
  newer.id.mtime_ns += 1;
  {
    WatchJournal j(path_);
    std::string why;
    ASSERT_TRUE(j.record_sent(kA, &why)) << why;
    ASSERT_TRUE(j.record_sent(newer, &why))
        << why;  // sent again after a change: the newer one counts
    ASSERT_TRUE(j.record_done(kA, &why)) << why;
  }
  WatchJournal j(path_);
  EXPECT_EQ(j.unfinished(), std::vector<JournalRecord>{newer});
}

TEST_F(WatchJournalTest, ATornLastLineIsSkippedKeptAsideAndNotGluedToTheNext) {
  {
    WatchJournal j(path_);
    std::string why;
    ASSERT_TRUE(j.record_sent(kA, &why)) << why;
  }
  const std::string torn = format_journal_line('S', kB);
  {
    std::ofstream(path_, std::ios::app) << torn.substr(0, torn.size() / 2);  // a crash mid-write
  }
  const std::string as_found = read_file(path_);
  {
    WatchJournal j(path_);
    std::string why;
    ASSERT_EQ(j.damaged().size(), 1u);
    EXPECT_EQ(j.damaged()[0], "line 3: cut short (no end of line)");
    EXPECT_EQ(j.unfinished(), std::vector<JournalRecord>{kA}) << "the good record is kept";
    EXPECT_EQ(read_file(path_ + ".damaged"), as_found);
    ASSERT_TRUE(j.record_sent(kB, &why)) << why;
  }
  WatchJournal j(path_);
  EXPECT_TRUE(j.damaged().empty()) << read_file(path_);
  EXPECT_EQ(j.unfinished(), (std::vector<JournalRecord>{kA, kB}));
}

TEST_F(WatchJournalTest, AnAlteredLineInTheMiddleIsNamedAndTheRestRead) {
  {
    WatchJournal j(path_);
    std::string why;
    ASSERT_TRUE(j.record_sent(kA, &why)) << why;
    ASSERT_TRUE(j.record_sent(kB, &why)) << why;
  }
  std::string text = read_file(path_);
  const size_t second = text.find('\n') + 1;  // line 2: kA's record
  text[second + 4] = text[second + 4] == '9' ? '8' : '9';
  std::ofstream(path_, std::ios::trunc) << text;
  WatchJournal j(path_);
  ASSERT_EQ(j.damaged().size(), 1u);
  EXPECT_EQ(j.damaged()[0], "line 2: check mismatch");
  EXPECT_EQ(j.unfinished(), std::vector<JournalRecord>{kB});
}

TEST_F(WatchJournalTest, AnotherFileGivenByMistakeIsRefusedAndLeftAlone) {
  const std::string other = (dir_ / "notes.txt").string();
  std::ofstream(other) << "my notes\nline 2\n";
  EXPECT_THROW(
      {
        try {
          WatchJournal j(other);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("is not a ddft watch journal"), std::string::npos)
              << e.what();
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(read_file(other), "my notes\nline 2\n");
  EXPECT_THROW(WatchJournal j(dir_.string()), std::runtime_error);  // a folder
  EXPECT_THROW(WatchJournal j((dir_ / "missing/j").string()), std::runtime_error);
}

TEST_F(WatchJournalTest, AnEmptyFileIsAdopted) {
  std::ofstream(path_).close();
  WatchJournal j(path_);
  EXPECT_EQ(read_file(path_), std::string(WatchJournal::kHeader) + "\n");
}

TEST_F(WatchJournalTest, CompactedWhenItGrows) {
  WatchJournal j(path_, /*compact_lines=*/64);
  std::string why;
  JournalRecord r = kA;
  for (size_t i = 0; i < 1000; ++i) {
    r.id.ino = 1000 + i;
    ASSERT_TRUE(j.record_sent(r, &why)) << why;
    ASSERT_TRUE(j.record_done(r, &why)) << why;
  }
  ASSERT_TRUE(j.record_sent(kB, &why)) << why;
  EXPECT_LE(j.lines(), 64u);
  EXPECT_LT(fs::file_size(path_), 64 * 80u);
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  WatchJournal again(path_);
  EXPECT_EQ(again.unfinished(), std::vector<JournalRecord>{kB});
}

TEST_F(WatchJournalTest, ForgottenRecordsLeaveAtTheNextCompaction) {
  {
    WatchJournal j(path_);
    std::string why;
    ASSERT_TRUE(j.record_sent(kA, &why)) << why;
    ASSERT_TRUE(j.record_sent(kB, &why)) << why;
    j.forget(kA.rel_path);
    ASSERT_TRUE(j.compact(&why)) << why;
  }
  WatchJournal j(path_);
  EXPECT_EQ(j.unfinished(), std::vector<JournalRecord>{kB});
}

}  // namespace
}  // namespace ddft::sender
