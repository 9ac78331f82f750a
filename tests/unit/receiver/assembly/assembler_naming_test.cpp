// Every file named: the sender's file list names the files the assembler never heard of (once,
// and only those), and a receiver that joins mid-file names the bytes that went before it.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/hash.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::FakeSender;
using ddft::testing::JsonHas;
using ddft::testing::JsonText;
using ddft::testing::LogCapture;
using ddft::testing::read_file;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The sender's file list names a file this receiver never heard of (its announce, data and end
// were all lost): one record names it, with its size, its key and all of it missing.
TEST_P(AssemblerTest, AFileListNamingAnUnknownFileWritesOneRecord) {
  LogCapture log;
  FakeSender tx(90);
  const std::string lost = pattern(5000, 90);
  feed(tx.heartbeat(false));  // opens the session (a list does not)
  feed(tx.file_list({{7, "gone/lost.bin", lost},
                     {8, "gone/aborted.bin", pattern(300, 91), common::VerifyType::kB2B, true}}));
  settle();
  EXPECT_EQ(records().size(), 2u);
  const auto recs = records_naming("gone/lost.bin");
  ASSERT_EQ(recs.size(), 1u);
  const std::string& rec = recs[0];
  EXPECT_THAT(rec, JsonHas("reason", "never announced: all its packets were lost"));
  EXPECT_THAT(rec, JsonHas("file_id", 7));
  EXPECT_THAT(rec, JsonHas("expected_size", 5000));
  EXPECT_THAT(rec, JsonHas("bytes_received", 0));
  EXPECT_THAT(rec, JsonHas("missing_ranges", JsonText("[[0, 5000]]")));
  const auto key = common::hash_buffer(
      common::VerifyType::kB2B, {reinterpret_cast<const uint8_t*>(lost.data()), lost.size()});
  EXPECT_THAT(rec, JsonHas("expected_key", key.hex()));
  EXPECT_NE(log.text().find("Error: gone/lost.bin FAILED: never announced: all its packets were "
                            "lost; received 0 of 5,000 bytes; missing bytes 0-5000; record: "),
            std::string::npos)
      << log.text();
  // A file the sender aborted: the list says so, and so does the record.
  const auto aborted = records_naming("gone/aborted.bin");
  ASSERT_EQ(aborted.size(), 1u);
  EXPECT_THAT(aborted[0], JsonHas("reason", HasSubstr("never announced: all its packets were lost "
                                                      "(and the sender aborted it)")));
  EXPECT_FALSE(fs::exists(base_ / "out/gone/lost.bin"));
  EXPECT_EQ(asm_->counters().files_unannounced, 2u);
  EXPECT_EQ(asm_->counters().files_failed, 2u);
}

// Files the receiver knows need no record from the list: delivered, still receiving, refused
// (its refusal is its record), filtered (policy), or finished by an earlier run of the receiver.
// A filtered name that only the list brings is policy as well.
TEST_P(AssemblerTest, AFileListNamingKnownFilesWritesNoRecord) {
  cfg_.max_file_size = 10'000;
  cfg_.filter = common::PathFilter({}, {"*.skip"});
  build();
  asm_->set_earlier(nullptr, {{91, 5}});
  LogCapture log;
  FakeSender tx(91);
  const std::string done = pattern(3000, 1), huge = pattern(10'001, 2), skip = pattern(100, 3),
                    open = pattern(5000, 4), before = pattern(700, 5), never = pattern(50, 6);
  feed(tx.file(1, "done.bin", done));
  feed(tx.file(2, "huge.bin", huge));
  feed(tx.file(3, "x.skip", skip));
  const auto open_data = tx.data(4, open);
  feed(tx.announce(4, "open.bin", open.size()));
  feed(std::vector<Datagram>(open_data.begin(), open_data.begin() + 2));
  settle();
  ASSERT_EQ(records().size(), 1u);  // the refusal's
  ASSERT_EQ(records_naming("huge.bin").size(), 1u);
  ASSERT_EQ(asm_->files_in_flight(), 1u);  // open.bin

  const std::vector<FakeSender::Listed> all = {{1, "done.bin", done},     {2, "huge.bin", huge},
                                               {3, "x.skip", skip},       {4, "open.bin", open},
                                               {5, "before.bin", before}, {6, "never.skip", never}};
  feed(tx.file_list(all));
  settle();
  EXPECT_EQ(records().size(), 1u);
  EXPECT_EQ(asm_->counters().files_unannounced, 0u);
  EXPECT_EQ(asm_->counters().files_failed, 0u);
  EXPECT_EQ(asm_->counters().listed_known, 1u);  // before.bin
  EXPECT_NE(log.text().find("Info: filtered \"never.skip\": matches --exclude '*.skip' (named by "
                            "the sender's file list)"),
            std::string::npos)
      << log.text();
  // The file in flight goes on to be delivered, as if no list had come.
  feed(std::vector<Datagram>(open_data.begin() + 2, open_data.end()));
  feed(tx.end(4, open));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/open.bin") == open);
  EXPECT_EQ(asm_->counters().files_passed, 2u);
  // The complete list at the end of the session names them all again: still nothing.
  feed(tx.file_list(all, common::kListComplete));
  settle();
  EXPECT_EQ(records().size(), 1u);
  EXPECT_EQ(asm_->counters().files_failed, 0u);
}

// The sender sends each list several times (--control-repeat), the complete list at the end
// names every file again, and the link may duplicate a datagram: a file is recorded once. A late
// announce of it (reordered behind the list) does not start it: it cannot be both named as
// failed and delivered.
TEST_P(AssemblerTest, ARepeatedFileListDoesNotWriteASecondRecord) {
  FakeSender tx(92);
  const std::string lost = pattern(2000, 92);
  feed(tx.heartbeat(false));
  const Datagram list = tx.file_list({{3, "lost.bin", lost}});
  feed(list);
  feed(tx.file_list({{3, "lost.bin", lost}}));  // the next copy
  feed(list);                                   // a duplicate on the link
  settle();
  ASSERT_EQ(records().size(), 1u);
  feed(tx.file_list({{3, "lost.bin", lost}}, common::kListComplete));
  feed(tx.repeat_announce(3, "lost.bin", lost.size()));
  feed(tx.data(3, lost));
  feed(tx.end(3, lost));
  settle();
  EXPECT_EQ(records().size(), 1u);
  EXPECT_EQ(records_naming("lost.bin").size(), 1u);
  EXPECT_FALSE(fs::exists(base_ / "out/lost.bin"));
  EXPECT_EQ(asm_->counters().files_unannounced, 1u);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
  EXPECT_EQ(asm_->counters().files_passed, 0u);
}

// A receiver that starts while a file is being sent: the announce the sender repeats mid-file
// starts the file there, and it fails naming the bytes that went before the receiver.
TEST_P(AssemblerTest, AReceiverThatJoinsMidFileNamesTheBytesThatWentBeforeIt) {
  LogCapture log;
  FakeSender tx(93, 1000);
  const std::string content = pattern(10'000, 93);
  // Sent before this receiver started: the first announce and the first 4,000 bytes.
  (void)tx.announce(1, "joined.bin", content.size());
  const auto before = tx.data(1, content.substr(0, 4000));
  feed(before.back());  // the last of them arrives as the receiver starts: no session yet
  feed(tx.repeat_announce(1, "joined.bin", content.size()));
  feed(tx.data(1, content, 0, 4000));
  feed(tx.end(1, content));
  settle();
  clock_.advance(std::chrono::seconds(1));  // past the grace for reordered data
  asm_->poll();
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/joined.bin"));
  const auto recs = records_naming("joined.bin");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(records().size(), 1u);
  EXPECT_THAT(recs[0], JsonHas("reason",
                               StartsWith("started before this receiver: bytes 0-4000 missing (")));
  EXPECT_THAT(recs[0], JsonHas("bytes_received", 6000));
  EXPECT_THAT(recs[0], JsonHas("missing_ranges", JsonText("[[0, 4000]]")));
  EXPECT_NE(log.text().find("Info: joined.bin, Size: 10,000 (bytes) . . . receiving (joined "
                            "mid-file: its first packets went before this receiver started)"),
            std::string::npos)
      << log.text();
  EXPECT_NE(log.text().find("Error: joined.bin FAILED: started before this receiver: bytes "
                            "0-4000 missing ("),
            std::string::npos)
      << log.text();
  EXPECT_EQ(asm_->counters().files_joined_late, 1u);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
}

// The same with --repeat 2, the receiver joining during the first copy: the second brings the
// bytes it missed, and the file is delivered, with no record.
TEST_P(AssemblerTest, AFileJoinedMidFileIsCompletedByTheNextCopy) {
  LogCapture log;
  FakeSender tx(94, 1000);
  const std::string content = pattern(10'000, 94);
  (void)tx.announce(1, "joined.bin", content.size());
  (void)tx.data(1, content.substr(0, 4000));
  feed(tx.repeat_announce(1, "joined.bin", content.size()));
  feed(tx.data(1, content, 0, 4000));
  feed(tx.end(1, content, common::VerifyType::kB2B, 0, 2));
  clock_.advance(std::chrono::seconds(1));  // past the end grace: not failed, a copy follows
  asm_->poll();
  settle();
  EXPECT_TRUE(records().empty());
  feed(tx.announce(1, "joined.bin", content.size()));
  feed(tx.data(1, content, 1));
  feed(tx.end(1, content, common::VerifyType::kB2B, 1, 2));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/joined.bin") == content);
  EXPECT_TRUE(records().empty());
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  EXPECT_NE(log.text().find("joined.bin: complete after copy 2 of 2"), std::string::npos)
      << log.text();
}

// Under a flood of announces the records of files nobody vouches for are bounded: a file that
// received nothing and whose end was lost fails without one. When the sender's list names it,
// the list vouches for it and its record is written, once.
TEST_P(AssemblerTest, AFileTheFloodBoundLeftUnnamedIsNamedWhenAListNamesIt) {
  cfg_.max_file_size = 100;
  build();
  LogCapture log;
  FakeSender tx(95, 1000);
  // Refusals use up this minute's records for files nobody vouches for.
  for (uint32_t id = 1; id <= 150; ++id) {
    feed(tx.announce(id, fmt::format("big/{}.bin", id), 1000));
  }
  settle();
  const size_t refusals = records().size();
  ASSERT_LT(refusals, 150u) << "the bound left no refusal out";
  ASSERT_GT(asm_->counters().records_suppressed, 0u);
  // quiet.bin receives nothing, its end is lost; the next file's announce fails it.
  const std::string quiet(50, 'q'), next(40, 'n');
  feed(tx.announce(200, "quiet.bin", quiet.size()));
  feed(tx.file(201, "next.bin", next));
  settle();
  clock_.advance(std::chrono::milliseconds(600));  // past the grace for a reordered end
  asm_->poll();
  settle();
  EXPECT_EQ(read_file(base_ / "out/next.bin"), next);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
  EXPECT_TRUE(records_naming("quiet.bin").empty()) << "the bound was not reached";
  EXPECT_EQ(log.text().find("quiet.bin FAILED"), std::string::npos) << log.text();

  feed(tx.file_list({{200, "quiet.bin", quiet}, {201, "next.bin", next}}));
  settle();
  const auto recs = records_naming("quiet.bin");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(records().size(), refusals + 1);
  EXPECT_THAT(recs[0], JsonHas("reason", HasSubstr("went on to the next file")));
  EXPECT_NE(log.text().find("Error: quiet.bin FAILED: "), std::string::npos) << log.text();
  // Named once: a second list finds it known; it was counted as failed once.
  feed(tx.file_list({{200, "quiet.bin", quiet}, {201, "next.bin", next}}, common::kListComplete));
  settle();
  EXPECT_EQ(records_naming("quiet.bin").size(), 1u);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
  EXPECT_EQ(asm_->counters().files_unannounced, 0u);
}

}  // namespace
}  // namespace ddft::receiver
