// The hot folder's readiness rules on a FakeClock and a fake file system: no real time, no disk.
#include "sender/source/readiness.hpp"

#include <gtest/gtest.h>

#include <map>

namespace ddft::sender {
namespace {
using namespace std::chrono_literals;

class ReadinessTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::milliseconds kSettle = 5s;
  ReadinessTracker t_{kSettle};
  common::FakeClock clock_;
  std::map<std::string, FileProbe> files_;  // the fake folder
  int probes_ = 0;

  void put(const std::string& rel, uint64_t size, FileProbe::Writer w = FileProbe::Writer::kUnknown,
           uint64_t ino = 1) {
    files_[rel] = FileProbe{{1, ino, size, 1000}, w};
  }
  std::optional<std::string> take() {
    auto r =
        t_.take_ready(clock_.now(), [this](const std::string& rel) -> std::optional<FileProbe> {
          ++probes_;
          auto it = files_.find(rel);
          if (it == files_.end()) return std::nullopt;
          return it->second;
        });
    if (!r) return std::nullopt;
    return r->rel;
  }
  auto now() { return clock_.now(); }
};

TEST_F(ReadinessTest, ClosedFileIsReadyOnceUnchangedForTheSettleTime) {
  put("a.txt", 10);
  t_.closed("a.txt", now());
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(kSettle - 1ms);
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(1ms);
  EXPECT_EQ(take(), "a.txt");
  EXPECT_EQ(take(), std::nullopt) << "handed out once: it is in flight now";
  clock_.advance(100s);
  EXPECT_EQ(take(), std::nullopt);
}

TEST_F(ReadinessTest, SlowWriterThatKeepsTheFileOpenIsNeverReadyUntilItsClose) {
  put("slow.bin", 0);
  t_.created("slow.bin", now());
  for (int i = 1; i <= 10; ++i) {
    // A part, then a pause far longer than the settle time, the file still open.
    put("slow.bin", static_cast<uint64_t>(i) * 100);
    t_.modified("slow.bin", now());
    clock_.advance(3 * kSettle);
    EXPECT_EQ(take(), std::nullopt) << "after part " << i;
  }
  t_.closed("slow.bin", now());
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "slow.bin");
}

TEST_F(ReadinessTest, AWriteAfterTheCloseWaitsForTheNextClose) {
  put("a", 1);
  t_.closed("a", now());
  take();
  clock_.advance(kSettle / 2);
  put("a", 2);
  t_.modified("a", now());  // reopened and written before the settle time ran out
  clock_.advance(10 * kSettle);
  EXPECT_EQ(take(), std::nullopt);
  t_.closed("a", now());
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "a");
}

TEST_F(ReadinessTest, AWriterTheProbeSeesKeepsAFoundFileBack) {
  // Found by the start scan: no event will come for its writer's earlier writes.
  put("held-open", 50, FileProbe::Writer::kOpen);
  t_.found("held-open", now());
  for (int i = 0; i < 10; ++i) {
    clock_.advance(kSettle);
    EXPECT_EQ(take(), std::nullopt);
  }
  files_["held-open"].writer = FileProbe::Writer::kNone;  // closed, unchanged
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "held-open");
}

TEST_F(ReadinessTest, AChangeNoEventToldOfRestartsTheSettleTime) {
  put("a", 1);
  t_.found("a", now());
  take();
  clock_.advance(kSettle);
  put("a", 2);  // e.g. events lost, or a network filesystem
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(kSettle - 1ms);
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(1ms);
  EXPECT_EQ(take(), "a");
}

TEST_F(ReadinessTest, ReplacedFileIsANewVersion) {
  put("a", 1, FileProbe::Writer::kUnknown, /*ino=*/1);
  t_.found("a", now());
  take();
  clock_.advance(kSettle);
  put("a", 1, FileProbe::Writer::kUnknown, /*ino=*/2);  // same size, another inode
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "a");
}

TEST_F(ReadinessTest, HardLinkWithoutACloseIsReadyOnlyWhenNoWriterIsKnown) {
  put("linked", 5, FileProbe::Writer::kUnknown);
  t_.created("linked", now());  // ln into the folder: IN_CREATE, no close
  clock_.advance(10 * kSettle);
  EXPECT_EQ(take(), std::nullopt) << "without lease support the close decides";
  put("linked2", 5, FileProbe::Writer::kNone);
  t_.created("linked2", now());
  take();
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "linked2");
}

TEST_F(ReadinessTest, FilesFoundTogetherComeInPathOrder) {
  for (const char* n : {"c", "a/z", "b", "a/b"}) {
    put(n, 1);
    t_.found(n, now());
  }
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "a/b");
  EXPECT_EQ(take(), "a/z");
  EXPECT_EQ(take(), "b");
  EXPECT_EQ(take(), "c");
  EXPECT_EQ(take(), std::nullopt);
}

TEST_F(ReadinessTest, AFileThatVanishesIsForgotten) {
  put("a", 1);
  t_.closed("a", now());
  files_.erase("a");
  clock_.advance(kSettle);
  EXPECT_EQ(take(), std::nullopt);
  EXPECT_FALSE(t_.is_tracked("a"));
  put("b", 1);
  t_.closed("b", now());
  t_.gone("b");
  EXPECT_FALSE(t_.is_tracked("b"));
}

TEST_F(ReadinessTest, AFailedFileIsHeldUntilItChangesNotRetriedInALoop) {
  put("locked", 1);
  t_.closed("locked", now());
  clock_.advance(kSettle);
  ASSERT_EQ(take(), "locked");
  t_.hold("locked", files_["locked"].id, now(), /*rearm_on_attrib=*/true);
  const int probes = probes_;
  for (int i = 0; i < 100; ++i) {
    clock_.advance(kSettle);
    EXPECT_EQ(take(), std::nullopt);
  }
  EXPECT_EQ(probes_, probes) << "a held file is not even probed";
  t_.attrib("locked", now());  // chmod: may fix a permission
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "locked");
}

TEST_F(ReadinessTest, ASentFileKeptInPlaceIsNotSentAgainUnlessWrittenTo) {
  put("kept", 1);
  t_.closed("kept", now());
  clock_.advance(kSettle);
  ASSERT_EQ(take(), "kept");
  t_.hold("kept", files_["kept"].id, now(), /*rearm_on_attrib=*/false);
  t_.attrib("kept", now());
  t_.found("kept", now());  // a rescan: unchanged, stays held
  clock_.advance(10 * kSettle);
  EXPECT_EQ(take(), std::nullopt);
  put("kept", 2);
  t_.modified("kept", now());
  t_.closed("kept", now());
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "kept");
}

TEST_F(ReadinessTest, AHeldFileChangedBehindOurBackIsFoundByARescan) {
  put("h", 1);
  t_.closed("h", now());
  clock_.advance(kSettle);
  ASSERT_EQ(take(), "h");
  t_.hold("h", files_["h"].id, now(), true);
  put("h", 7);  // events lost in an overflow
  t_.rescan_begin();
  t_.found("h", now());
  t_.rescan_end();
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "h");
}

TEST_F(ReadinessTest, AnEventWhileInFlightTakesItBackToWaitingAfterwards) {
  put("a", 1);
  t_.closed("a", now());
  clock_.advance(kSettle);
  ASSERT_EQ(take(), "a");
  EXPECT_FALSE(t_.changed_in_flight("a"));
  put("a", 2);
  t_.modified("a", now());
  t_.closed("a", now());
  EXPECT_TRUE(t_.changed_in_flight("a"));
  EXPECT_EQ(take(), std::nullopt) << "never handed out twice at once";
  t_.hold("a", {1, 1, 1, 1000}, now(), true);  // the old version failed: the new one is judged
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "a");
}

TEST_F(ReadinessTest, RequeueAfterAChangedSendWaitsTheSettleTimeAgain) {
  put("a", 1);
  t_.closed("a", now());
  clock_.advance(kSettle);
  ASSERT_EQ(take(), "a");
  put("a", 3);
  t_.requeue("a", now());
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "a");
  t_.finished("a");
  EXPECT_FALSE(t_.is_tracked("a"));
}

TEST_F(ReadinessTest, RescanForgetsVanishedFilesButNotOnesInFlight) {
  for (const char* n : {"a", "b", "c"}) {
    put(n, 1);
    t_.found(n, now());
  }
  clock_.advance(kSettle);
  ASSERT_EQ(take(), "a");
  files_.erase("a");
  files_.erase("c");
  t_.rescan_begin();
  t_.found("b", now());
  t_.rescan_end();
  EXPECT_TRUE(t_.is_tracked("a")) << "in flight: its callback still comes";
  EXPECT_TRUE(t_.is_tracked("b"));
  EXPECT_FALSE(t_.is_tracked("c"));
}

TEST_F(ReadinessTest, OverflowRescanMakesAnOpenFileWhoseCloseWasLostComplete) {
  put("a", 1);
  t_.created("a", now());
  t_.modified("a", now());
  // Its close was among the events lost; the rescan finds it.
  t_.rescan_begin();
  t_.found("a", now());
  t_.rescan_end();
  clock_.advance(kSettle);
  EXPECT_EQ(take(), "a");
}

TEST_F(ReadinessTest, RescansMoreFrequentThanTheSettleTimeDoNotHoldAFileBack) {
  put("a", 1);
  t_.found("a", now());
  EXPECT_EQ(take(), std::nullopt);
  for (int i = 0; i < 4; ++i) {  // a rescan every second, as on a network filesystem
    clock_.advance(kSettle / 5);
    t_.rescan_begin();
    t_.found("a", now());
    t_.rescan_end();
    EXPECT_EQ(take(), std::nullopt);
  }
  clock_.advance(kSettle / 5);
  EXPECT_EQ(take(), "a");
  // A change between two scans still restarts it.
  put("b", 1);
  t_.found("b", now());
  take();
  clock_.advance(kSettle / 2);
  put("b", 2);
  t_.found("b", now());
  EXPECT_EQ(take(), std::nullopt);
  clock_.advance(kSettle / 2 + kSettle / 4);
  EXPECT_EQ(take(), std::nullopt) << "settling from the change, not from the first scan";
  clock_.advance(kSettle / 4);
  EXPECT_EQ(take(), "b");
}

TEST_F(ReadinessTest, GoneUnderAFolderForgetsItsFilesOnly) {
  for (const char* n : {"d/a", "d/e/b", "dd/c", "d"}) {
    put(n, 1);
    t_.closed(n, now());
  }
  t_.gone_under("d");
  EXPECT_FALSE(t_.is_tracked("d/a"));
  EXPECT_FALSE(t_.is_tracked("d/e/b"));
  EXPECT_TRUE(t_.is_tracked("dd/c"));
  EXPECT_TRUE(t_.is_tracked("d"));
}

TEST_F(ReadinessTest, EmptiedFoldersAreDueAfterTheSettleTimeDeepestFirst) {
  t_.folder_emptied("a", now());
  t_.folder_emptied("a/b/c", now());
  clock_.advance(kSettle / 2);
  t_.folder_activity("a", now());  // something landed in it: wait again
  EXPECT_TRUE(t_.take_due_folders(now()).empty());
  clock_.advance(kSettle / 2);
  EXPECT_EQ(t_.take_due_folders(now()), std::vector<std::string>{"a/b/c"});
  clock_.advance(kSettle / 2);
  EXPECT_EQ(t_.take_due_folders(now()), std::vector<std::string>{"a"});
  EXPECT_TRUE(t_.take_due_folders(now() + 100s).empty());
}

TEST_F(ReadinessTest, NextDeadlineIsTheEarliestWork) {
  EXPECT_EQ(t_.next_deadline(), std::nullopt);
  put("a", 1);
  t_.closed("a", now());
  EXPECT_EQ(t_.next_deadline(), now());  // probed at once
  take();
  EXPECT_EQ(t_.next_deadline(), now() + kSettle);
  t_.folder_emptied("f", now() - 1s);
  EXPECT_EQ(t_.next_deadline(), now() + kSettle - 1s);
}

}  // namespace
}  // namespace ddft::sender
