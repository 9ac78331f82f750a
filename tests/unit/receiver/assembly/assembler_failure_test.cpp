// The assembler fails a file that cannot be delivered, with a record that says why: data lost,
// a key that does not match, a sender gone silent or aborting, the receiver stopping, an end
// lost before the next file; what arrived is kept, and a file never pushes a folder aside.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::FakeSender;
using ddft::testing::JsonHas;
using ddft::testing::JsonText;
using ddft::testing::read_file;
using ::testing::HasSubstr;

TEST_P(AssemblerTest, LostDataPacketFailsWithTheMissingRange) {
  FakeSender tx(15);
  const std::string content = pattern(10'000, 6);
  auto data = tx.data(1, content);
  data.erase(data.begin() + 4);  // bytes 4000..5000 never arrive
  feed(tx.announce(1, "lost.bin", content.size()));
  feed(data);
  feed(tx.end(1, content));
  settle();
  clock_.advance(std::chrono::seconds(1));  // past the grace for reordered data
  asm_->poll();
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/lost.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const std::string json = read_file(recs[0]);
  EXPECT_THAT(json, JsonHas("missing_ranges", JsonText("[[4000, 5000]]")));
  EXPECT_THAT(json, JsonHas("bytes_received", 9000));
  EXPECT_THAT(json, JsonHas("reason", HasSubstr("incomplete")));
  EXPECT_EQ(asm_->lost(0), 1u);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
}

TEST_P(AssemblerTest, HashMismatchFailsAndNeverAppears) {
  FakeSender tx(17);
  const std::string content = pattern(7000, 8);
  feed(tx.announce(1, "bad.bin", content.size()));
  feed(tx.data(1, content));
  feed(tx.end(1, pattern(7000, 9)));  // key of other data
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/bad.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]), JsonHas("reason", HasSubstr("verification failed")));
}

TEST_P(AssemblerTest, SenderGoneTimesOut) {
  FakeSender tx(18);
  const std::string content = pattern(50'000, 10);
  auto data = tx.data(1, content);
  data.resize(20);  // the sender dies after 20 packets
  feed(tx.announce(1, "dead.bin", content.size()));
  feed(data);
  settle();
  clock_.advance(std::chrono::seconds(4));
  asm_->poll();
  EXPECT_TRUE(records().empty());  // not yet: the timeout is 5 s
  clock_.advance(std::chrono::seconds(2));
  asm_->poll();
  settle();
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  const std::string json = read_file(recs[0]);
  EXPECT_THAT(json, JsonHas("reason", HasSubstr("no packet for")));
  EXPECT_THAT(json, JsonHas("missing_ranges", JsonText("[[20000, 50000]]")));
  EXPECT_FALSE(fs::exists(base_ / "out/dead.bin"));
}

TEST_P(AssemblerTest, AbortFromSenderFailsTheFile) {
  FakeSender tx(19);
  feed(tx.announce(1, "gone.bin", 5000));
  feed(tx.abort(1, "file shrank while it was being read"));
  settle();
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]),
              JsonHas("reason", HasSubstr("sender aborted the file: file shrank")));
}

TEST_P(AssemblerTest, StopFailsFilesInFlight) {
  FakeSender tx(29);
  const std::string content = pattern(20'000, 13);
  auto data = tx.data(1, content);
  data.resize(5);
  feed(tx.announce(1, "inflight.bin", content.size()));
  feed(data);
  asm_->fail_all("receiver stopped");
  EXPECT_FALSE(fs::exists(base_ / "out/inflight.bin"));
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]), JsonHas("reason", HasSubstr("receiver stopped")));
}

TEST_P(AssemblerTest, FailedFileKeepsEverythingThatArrived) {
  FakeSender tx(33, 1000);
  const std::string content = pattern(200'000, 16);
  auto data = tx.data(1, content);
  data.erase(data.begin());  // bytes 0..1000 never arrive, so no block can be hashed in order
  feed(tx.announce(1, "kept.bin", content.size()));
  feed(data);
  feed(tx.end(1, content));
  settle();
  clock_.advance(std::chrono::seconds(1));
  asm_->poll();
  settle();
  fs::path kept;
  for (const auto& e : fs::directory_iterator(testing::failed_folder(base_ / "out"))) {
    if (e.path().extension() != ".json") kept = e.path();
  }
  ASSERT_FALSE(kept.empty());
  const std::string got = read_file(kept);
  ASSERT_EQ(got.size(), content.size());
  EXPECT_EQ(got.substr(0, 1000), std::string(1000, '\0'));
  EXPECT_TRUE(got.substr(1000) == content.substr(1000));  // all received bytes are in it
}

TEST_P(AssemblerTest, AFileCannotPushAFolderAside) {
  fs::create_directories(base_ / "out/tree");
  std::ofstream(base_ / "out/tree/inside.txt") << "keep";
  FakeSender tx(35, 1000);
  feed(tx.file(1, ".ddft", "x"));
  feed(tx.file(2, "tree", "y"));
  settle();
  EXPECT_TRUE(fs::is_directory(base_ / "out/.ddft"));
  EXPECT_TRUE(fs::is_directory(base_ / "out/tree"));
  EXPECT_FALSE(fs::exists(base_ / "out/.ddft.1"));
  EXPECT_FALSE(fs::exists(base_ / "out/tree.1"));
  EXPECT_EQ(read_file(base_ / "out/tree/inside.txt"), "keep");
  // The state folder's name is refused at the announce; the folder's name fails the file.
  EXPECT_EQ(asm_->counters().files_refused, 1u);
  EXPECT_EQ(asm_->counters().files_failed, 1u);
}

TEST_P(AssemblerTest, NextFileAnnouncedFailsAFileWhoseEndWasLost) {
  FakeSender tx(58, 1000);
  const std::string a = pattern(5'000, 58);
  const std::string b = pattern(5'000, 59);
  feed(tx.announce(1, "a.bin", a.size()));
  feed(tx.data(1, a));  // all of its data, but its end packets are lost
  feed(tx.file(2, "b.bin", b));
  settle();
  EXPECT_TRUE(read_file(base_ / "out/b.bin") == b);
  EXPECT_TRUE(records().empty());  // a grace for a reordered end first
  clock_.advance(std::chrono::milliseconds(600));
  asm_->poll();
  settle();
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]), JsonHas("reason", HasSubstr("went on to the next file")));
}

}  // namespace
}  // namespace ddft::receiver
