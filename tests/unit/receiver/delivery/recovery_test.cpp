// What the receiver does at start-up with what an earlier run left: a file renamed into place
// but never logged is delivered now, each temporary file is named as failed, and every file the
// earlier run dealt with is known. On the temporary folder (origins in xattrs) and on a ramfs
// (origins in sidecars).
#include "receiver/delivery/recovery.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::JsonHas;

constexpr uint64_t kRecoverySession = 0x00c0ffee00c0ffeeULL;
constexpr const char* kKey = "0123456789abcdef0123456789abcdef";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class RecoveryTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    fs::path top = scratch_.path();
    if (GetParam()) {
      top /= "mnt";
      fs::create_directory(top);
      mount_ = std::make_unique<testing::ScopedMount>(top, "ramfs");
      if (!mount_->mounted()) GTEST_SKIP() << mount_->skip_reason();
    }
    root_ = top / "out";
    fs::create_directory(root_);
    start();
  }
  void TearDown() override {
    journal_.reset();
    out_.reset();
  }

  // A run of the receiver on the folder: the output folder and the journal, opened anew.
  void start() {
    journal_.reset();
    out_ = std::make_unique<OutputDir>(root_.string(), (root_ / ".failed").string(),
                                       CollisionPolicy::kRename);
    journal_ = std::make_unique<OutcomeLog>(out_->state_fd());
  }

  static Origin origin(const std::string& rel, uint64_t session, uint32_t id, uint64_t size) {
    Origin o;
    o.file.path = rel;
    o.file.size = size;
    o.file.session = session;
    o.file.file_id = id;
    o.file.verify = common::VerifyType::kB2B;
    o.chunk_size = 8192;
    o.sender = "127.0.0.1:40000";
    return o;
  }
  static Outcome outcome(Outcome::Kind kind, uint64_t session, uint32_t id, uint64_t size,
                         const std::string& rel) {
    Outcome o;
    o.kind = kind;
    o.file.session = session;
    o.file.file_id = id;
    o.file.size = size;
    o.file.verify = common::VerifyType::kB2B;
    o.file.digest = kKey;
    o.file.path = rel;
    return o;
  }
  // A temporary file with its origin and `content` at offset 0, as a crash leaves it.
  void leave_temp(const std::string& rel, uint64_t session, uint32_t id, uint64_t size,
                  const std::string& content) {
    TempFile f;
    std::string reason;
    const Origin o = origin(rel, session, id, size);
    ASSERT_TRUE(out_->create_temp(rel, temp_name(session, id), &f, &reason, &o)) << reason;
    ASSERT_EQ(::pwrite(f.fd.get(), content.data(), content.size(), 0), ssize_t(content.size()));
  }
  // What the committer did for a verified file before the stop: its "C" line, then the rename.
  void leave_renamed(const std::string& rel, uint32_t id, const std::string& content) {
    TempFile f;
    std::string reason, moved;
    const Origin o = origin(rel, kRecoverySession, id, content.size());
    ASSERT_TRUE(out_->create_temp(rel, temp_name(kRecoverySession, id), &f, &reason, &o)) << reason;
    ASSERT_EQ(::write(f.fd.get(), content.data(), content.size()), ssize_t(content.size()));
    out_->set_times(f, 0644, 1'600'000'000'000'000'000);
    ASSERT_TRUE(journal_->append(
        outcome(Outcome::Kind::kCommitting, kRecoverySession, id, content.size(), rel)));
    ASSERT_TRUE(out_->rename_into_place(f, &moved, &reason)) << reason;
  }
  // True while the file at `rel` (renamed) or its temporary name still has an origin beside it.
  bool has_origin(const std::string& rel, uint32_t id) const {
    const fs::path dir = (root_ / rel).parent_path();
    int err = 0;
    testing::get_xattr(root_ / rel, kOriginXattr, &err);
    const std::string t = temp_name(kRecoverySession, id);
    return err == 0 || fs::exists(dir / (t.substr(0, t.size() - 5) + ".meta"));
  }
  std::vector<fs::path> records() const {
    std::vector<fs::path> out;
    if (!fs::exists(root_ / ".failed")) return out;
    for (const auto& e : fs::directory_iterator(root_ / ".failed")) {
      if (e.path().extension() == ".json") out.push_back(e.path());
    }
    return out;
  }
  static std::set<std::pair<uint64_t, uint32_t>> as_set(const StartRecovery& r) {
    return {r.known.begin(), r.known.end()};
  }

  testing::ScratchDir scratch_{"recovery"};
  std::unique_ptr<testing::ScopedMount> mount_;
  fs::path root_;
  std::unique_ptr<OutputDir> out_;
  std::unique_ptr<OutcomeLog> journal_;
};

TEST_P(RecoveryTest, DeliversAFileRenamedIntoPlaceButNeverLogged) {
  const std::string content(1234, 'd');
  leave_renamed("d/delivered.bin", 7, content);
  ASSERT_TRUE(has_origin("d/delivered.bin", 7));
  start();  // the receiver starts again
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, /*keep_partial=*/false);
  EXPECT_EQ(r.delivered, 1u);
  EXPECT_EQ(r.leftovers, 0u);
  EXPECT_EQ(as_set(r), (std::set<std::pair<uint64_t, uint32_t>>{{kRecoverySession, 7}}));
  EXPECT_EQ(lines_of(log.text()),
            (std::vector<std::string>{
                "Info: d/delivered.bin: delivered by an earlier run of the receiver (session "
                "00c0ffee00c0ffee, file 7), which stopped before logging it; synced now",
                "File: d/delivered.bin, Trans: 1,234 (bytes), Time: 00:00:00.000, Rate: 0.000 "
                "(MB/s), Key: 0x01234567, B2B Passed"}));
  // The journal now says it passed; the origin is gone; the file is untouched.
  const auto lines = journal_->read_all();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].kind, Outcome::Kind::kCommitting);
  const Outcome passed =
      outcome(Outcome::Kind::kPassed, kRecoverySession, 7, 1234, "d/delivered.bin");
  EXPECT_EQ(format_outcome(lines[1]), format_outcome(passed));
  EXPECT_FALSE(has_origin("d/delivered.bin", 7));
  EXPECT_EQ(testing::read_file(root_ / "d/delivered.bin"), content);
  EXPECT_TRUE(records().empty());

  // The next start has nothing more to do for it, and still knows it.
  start();
  testing::LogCapture again;
  const StartRecovery r2 = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r2.delivered, 0u);
  EXPECT_EQ(again.text(), "");
  EXPECT_EQ(as_set(r2), (std::set<std::pair<uint64_t, uint32_t>>{{kRecoverySession, 7}}));
  EXPECT_EQ(journal_->read_all().size(), 2u);
}

TEST_P(RecoveryTest, ACommittingLineWhoseFileIsMissingDeliversNothing) {
  ASSERT_TRUE(
      journal_->append(outcome(Outcome::Kind::kCommitting, kRecoverySession, 8, 10, "gone.bin")));
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r.delivered, 0u);
  EXPECT_EQ(r.leftovers, 0u);
  EXPECT_EQ(log.text(), "");
  EXPECT_EQ(journal_->read_all().size(), 1u);  // no "P" line
  EXPECT_EQ(as_set(r), (std::set<std::pair<uint64_t, uint32_t>>{{kRecoverySession, 8}}));
}

TEST_P(RecoveryTest, AFileOfThatNameWithoutItsOriginIsNotTakenForIt) {
  // Someone else's file under the name the journal gives, of the very size.
  { std::ofstream(root_ / "theirs.bin") << "0123456789"; }
  ASSERT_TRUE(
      journal_->append(outcome(Outcome::Kind::kCommitting, kRecoverySession, 8, 10, "theirs.bin")));
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r.delivered, 0u);
  EXPECT_EQ(log.text(), "");
  EXPECT_EQ(testing::read_file(root_ / "theirs.bin"), "0123456789");
}

TEST_P(RecoveryTest, ALeftoverIsNamedWithWhatItHeld) {
  leave_temp("x/left.bin", kRecoverySession, 9, 100000, std::string(4096, 'A'));
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, /*keep_partial=*/false);
  EXPECT_EQ(r.delivered, 0u);
  EXPECT_EQ(r.leftovers, 1u);
  EXPECT_EQ(as_set(r), (std::set<std::pair<uint64_t, uint32_t>>{{kRecoverySession, 9}}));
  const auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(lines_of(log.text()),
            std::vector<std::string>{
                "Error: x/left.bin FAILED: the receiver stopped (crash, kill or power cut) while "
                "the file was being received; found at start-up (session 00c0ffee00c0ffee, file "
                "9); received 4,096 of 100,000 bytes; missing bytes 4096-100000 (as far as "
                "known); partial data removed; record: " +
                recs[0].string()});
  const std::string json = testing::read_file(recs[0]);
  EXPECT_THAT(json, JsonHas("missing_ranges_exact", false));
  EXPECT_FALSE(fs::exists(root_ / "x" / temp_name(kRecoverySession, 9)));
  // The journal names it as failed (with its record), then as logged, so that neither a later
  // file list nor the next start records it again.
  const auto lines = journal_->read_all();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].kind, Outcome::Kind::kFailed);
  EXPECT_EQ(lines[0].file.session, kRecoverySession);
  EXPECT_EQ(lines[0].file.file_id, 9u);
  EXPECT_EQ(lines[0].file.size, 100000u);
  EXPECT_EQ(lines[0].file.path, "x/left.bin");
  EXPECT_EQ(lines[0].record, recs[0].string());
  EXPECT_EQ(lines[1].kind, Outcome::Kind::kLogged);
}

// A start stopped in the middle of its own recovery. Its F line for a leftover came first, naming
// the record to be; stopped there (the temporary file still in place), the next start writes that
// same record, not a second one; stopped after the record (the data gone, no Error line yet), the
// next start logs it once, from the journal. Either way one record names the file, and the
// journal knows it, so that no file list names it again.
TEST_P(RecoveryTest, AStartStoppedInItsOwnRecoveryNamesTheLeftoverOnce) {
  leave_temp("x/left.bin", kRecoverySession, 9, 100000, std::string(4096, 'A'));
  start();
  std::string claimed;
  // The first start, stopped right after its F line: a claim that journals and then throws.
  struct Stopped {};
  OutcomeLog& journal = *journal_;
  try {
    out_->recover_leftovers(false, [&](const Leftover& l, const FailureRecord& rec) {
      claimed = out_->record_name(rec);
      Outcome o = outcome(Outcome::Kind::kFailed, kRecoverySession, 9, l.file.size, l.file.path);
      o.record = out_->record_path(claimed);
      EXPECT_TRUE(journal.append(o));
      throw Stopped{};
      return claimed;
    });
    FAIL() << "the claim was not asked for";
  } catch (const Stopped&) {
  }
  ASSERT_TRUE(fs::exists(root_ / "x" / temp_name(kRecoverySession, 9)));
  EXPECT_TRUE(records().empty());
  // The next start finds the temporary file still there and the journal naming its record:
  // it writes that record (one, of that name) and logs the file once.
  start();
  {
    testing::LogCapture log;
    const StartRecovery r = recover_at_start(*out_, *journal_, false);
    EXPECT_EQ(r.leftovers, 1u);
    const auto recs = records();
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0], fs::path(out_->record_path(claimed))) << "a record of another name";
    const std::string text = log.text();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  }
  start();
  testing::LogCapture again;
  const StartRecovery r = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r.leftovers, 0u);
  EXPECT_EQ(records().size(), 1u);
  EXPECT_EQ(again.text(), "");
  EXPECT_EQ(as_set(r), (std::set<std::pair<uint64_t, uint32_t>>{{kRecoverySession, 9}}));
}

// Stopped after a leftover's F line, its record and the removal of its data, before its Error
// line: the next start logs it once, under that record, and writes no second one.
TEST_P(RecoveryTest, AStartStoppedBeforeALeftoversLineLogsItOnceFromTheJournal) {
  leave_temp("x/left.bin", kRecoverySession, 9, 100000, std::string(4096, 'A'));
  start();
  std::string claimed;
  OutcomeLog& journal = *journal_;
  const auto done =
      out_->recover_leftovers(false, [&](const Leftover& l, const FailureRecord& rec) {
        claimed = out_->record_name(rec);
        Outcome o = outcome(Outcome::Kind::kFailed, kRecoverySession, 9, l.file.size, l.file.path);
        o.record = out_->record_path(claimed);
        o.reason = "the receiver stopped while the file was being received";
        EXPECT_TRUE(journal.append(o));
        return claimed;
      });
  ASSERT_EQ(done.size(), 1u);
  ASSERT_EQ(records().size(), 1u);
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r.leftovers, 0u);
  EXPECT_EQ(records().size(), 1u);
  EXPECT_NE(log.text().find("Error: x/left.bin FAILED: the receiver stopped while the file was "
                            "being received (an earlier run of the receiver recorded it and "
                            "stopped before logging it)"),
            std::string::npos)
      << log.text();
  EXPECT_NE(log.text().find("record: " + out_->record_path(claimed)), std::string::npos)
      << log.text();
}

// Stopped after a failure's F line and the move of its data to the failed folder, before its
// record: the next start writes the record under the name the F line gave, naming that data.
TEST_P(RecoveryTest, AFailureStoppedBeforeItsRecordGetsItUnderItsNameWithItsData) {
  Outcome f = outcome(Outcome::Kind::kFailed, kRecoverySession, 14, 5000, "kept/part.bin");
  const std::string name = "20260101-000000-00c0ffee00c0ffee-14-part.bin";
  f.record = out_->record_path(name);
  f.reason = "the receiver stopped while the file was being received";
  f.received = 3;
  ASSERT_TRUE(journal_->append(f));
  fs::create_directories(root_ / ".failed");
  std::ofstream(root_ / ".failed" / name) << "abc";
  start();
  recover_at_start(*out_, *journal_, false);
  const auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0], fs::path(f.record));
  const std::string json = testing::read_file(recs[0]);
  EXPECT_THAT(json, JsonHas("data_file", name));
}

// A failure an earlier run stopped in the middle of: the F line came (naming the record to be),
// but neither the record nor the Error line did. The start writes the record and logs the line,
// once: a second start does neither again.
TEST_P(RecoveryTest, AFailureCutShortByACrashIsRecordedAndLoggedOnce) {
  Outcome f;
  f.kind = Outcome::Kind::kFailed;
  f.file.session = kRecoverySession;
  f.file.file_id = 12;
  f.file.size = 5000;
  f.file.verify = common::VerifyType::kB2B;
  f.file.path = "gone/never.bin";
  f.record = (root_ / ".failed/20260101-000000-00c0ffee00c0ffee-12-never.bin.json").string();
  f.reason = "never announced: all its packets were lost";
  ASSERT_TRUE(journal_->append(f));
  {
    testing::LogCapture log;
    recover_at_start(*out_, *journal_, false);
    EXPECT_NE(log.text().find("Error: gone/never.bin FAILED: never announced: all its packets "
                              "were lost (an earlier run of the receiver recorded it and stopped "
                              "before logging it); found at start-up (session 00c0ffee00c0ffee, "
                              "file 12); received 0 of 5,000 bytes; record: "),
              std::string::npos)
        << log.text();
  }
  size_t records = 0;
  for (const auto& e : fs::directory_iterator(root_ / ".failed")) {
    records += e.path().extension() == ".json";
  }
  EXPECT_EQ(records, 1u);
  testing::LogCapture again;
  recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(again.text().find("never.bin"), std::string::npos) << again.text();
}

TEST_P(RecoveryTest, KeepPartialSaysTheDataWasKept) {
  leave_temp("x/left.bin", kRecoverySession, 9, 100000, std::string(4096, 'A'));
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, /*keep_partial=*/true);
  EXPECT_EQ(r.leftovers, 1u);
  EXPECT_NE(log.text().find("; partial data kept; record: "), std::string::npos) << log.text();
}

TEST_P(RecoveryTest, ALeftoverWithoutOriginKeepsTheOldWarning) {
  {
    TempFile f;
    std::string reason;
    ASSERT_TRUE(out_->create_temp("u/old.bin", temp_name(0xaa, 3), &f, &reason)) << reason;
    ASSERT_EQ(::write(f.fd.get(), "xyz", 3), 3);
  }
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r.leftovers, 1u);
  const auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(lines_of(log.text()),
            std::vector<std::string>{"Warn: u/.ddft-00000000000000aa-3.part: left incomplete by an "
                                     "earlier run of the receiver; moved to the failed folder "
                                     "(record: " +
                                     recs[0].string() + ")"});
  // Known from its temporary name, so that the session's file list does not name it again.
  EXPECT_EQ(as_set(r), (std::set<std::pair<uint64_t, uint32_t>>{{0xaa, 3}}));
}

TEST_P(RecoveryTest, KnownHoldsEveryJournalEntryAndEveryLeftover) {
  constexpr uint64_t kOther = 0x1111222233334444ULL;
  ASSERT_TRUE(journal_->append(outcome(Outcome::Kind::kPassed, kRecoverySession, 1, 1, "p1")));
  ASSERT_TRUE(journal_->append(outcome(Outcome::Kind::kFailed, kRecoverySession, 2, 1, "f2")));
  ASSERT_TRUE(
      journal_->append(outcome(Outcome::Kind::kCommitting, kRecoverySession, 3, 1, "gone3")));
  ASSERT_TRUE(journal_->append(outcome(Outcome::Kind::kPassed, kOther, 1, 1, "other1")));
  leave_renamed("c4", 4, "four");
  // Stopped between the "C" line and the rename: the temporary file is whole but unrenamed.
  leave_temp("c5", kRecoverySession, 5, 4, "five");
  ASSERT_TRUE(journal_->append(outcome(Outcome::Kind::kCommitting, kRecoverySession, 5, 4, "c5")));
  leave_temp("l9", kRecoverySession, 9, 1000, "nine");
  {
    TempFile f;
    std::string reason;
    ASSERT_TRUE(out_->create_temp("u/old", temp_name(0xaa, 3), &f, &reason)) << reason;
  }
  start();
  testing::LogCapture log;
  const StartRecovery r = recover_at_start(*out_, *journal_, false);
  EXPECT_EQ(r.delivered, 1u);  // c4
  EXPECT_EQ(r.leftovers, 3u);  // c5, l9, u/old
  EXPECT_EQ(as_set(r), (std::set<std::pair<uint64_t, uint32_t>>{{kRecoverySession, 1},
                                                                {kRecoverySession, 2},
                                                                {kRecoverySession, 3},
                                                                {kOther, 1},
                                                                {kRecoverySession, 4},
                                                                {kRecoverySession, 5},
                                                                {kRecoverySession, 9},
                                                                {0xaa, 3}}));
  EXPECT_NE(log.text().find("Error: c5 FAILED: "), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("Info: c4: delivered by an earlier run"), std::string::npos);
  EXPECT_TRUE(fs::exists(root_ / "c4"));
  EXPECT_FALSE(fs::exists(root_ / "c5"));
}

INSTANTIATE_TEST_SUITE_P(OriginIn, RecoveryTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Ramfs") : std::string("TempFolder");
                         });

}  // namespace
}  // namespace ddft::receiver
