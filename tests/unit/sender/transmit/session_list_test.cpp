// The session's file list shared by the lanes: one cursor per lane, so that every lane sends
// every entry once; the complete list at the end (or only the rest: a hot folder, or past
// kCompleteListMax files); the end barrier the lanes wait at; and a lane gone down, which holds
// no entries back.
#include "sender/transmit/session_list.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ddft::sender {
namespace {

ListedFile entry_of(uint32_t id, int lane = 0) {
  ListedFile f;
  f.file_id = id;
  f.path = "f" + std::to_string(id);
  f.lane = lane;
  return f;
}

std::vector<uint32_t> ids_of(const std::vector<ListedFile>& files) {
  std::vector<uint32_t> out;
  for (const ListedFile& f : files) out.push_back(f.file_id);
  return out;
}

TEST(SessionList, EveryLaneTakesEveryEntryOnceAtItsOwnPace) {
  SessionList list(2, true);
  list.add(entry_of(1));
  list.add(entry_of(2, common::kLaneAll));
  EXPECT_EQ(list.waiting(0), 2u);
  EXPECT_EQ(list.waiting(1), 2u);
  EXPECT_EQ(ids_of(list.take(0)), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(list.waiting(0), 0u);
  EXPECT_TRUE(list.take(0).empty());
  list.add(entry_of(3, 1));
  EXPECT_EQ(ids_of(list.take(0)), std::vector<uint32_t>{3});
  const std::vector<ListedFile> late = list.take(1);  // lane 1 had taken nothing yet
  EXPECT_EQ(ids_of(late), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(late[1].lane, common::kLaneAll);
  EXPECT_EQ(late[2].lane, 1);
  EXPECT_EQ(list.files(), 3u);
}

TEST(SessionList, TheLastListIsCompleteWhileItMayBe) {
  SessionList list(2, true);
  for (uint32_t id = 1; id <= 4; ++id) list.add(entry_of(id));
  list.take(0);
  list.take(1);
  bool complete = false;
  EXPECT_EQ(ids_of(list.take_last(0, &complete)), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_TRUE(complete);
  EXPECT_EQ(ids_of(list.take_last(1, &complete)), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_TRUE(complete);
}

TEST(SessionList, AHotFolderEndsWithWhatEachLaneHasNotSent) {
  SessionList list(2, false);
  for (uint32_t id = 1; id <= 3; ++id) list.add(entry_of(id));
  EXPECT_EQ(ids_of(list.take(0)), (std::vector<uint32_t>{1, 2, 3}));
  list.add(entry_of(4));
  bool complete = true;
  EXPECT_EQ(ids_of(list.take_last(0, &complete)), std::vector<uint32_t>{4});
  EXPECT_FALSE(complete);
  // Lane 1 never took a list: every entry is still there for it.
  EXPECT_EQ(ids_of(list.take_last(1, &complete)), (std::vector<uint32_t>{1, 2, 3, 4}));
}

TEST(SessionList, PastKCompleteListMaxOnlyTheRest) {
  SessionList list(2, true);
  for (uint32_t id = 1; id <= kCompleteListMax; ++id) {
    list.add(entry_of(id));
    if (id % kListBatch == 0) list.take(0);
  }
  list.take(1);
  list.add(entry_of(static_cast<uint32_t>(kCompleteListMax + 1)));
  bool complete = true;
  const auto rest0 = list.take_last(0, &complete);
  EXPECT_FALSE(complete);
  EXPECT_EQ(rest0.front().file_id, kCompleteListMax / kListBatch * kListBatch + 1);
  EXPECT_EQ(rest0.back().file_id, kCompleteListMax + 1);
  EXPECT_EQ(ids_of(list.take_last(1, &complete)),
            std::vector<uint32_t>{static_cast<uint32_t>(kCompleteListMax + 1)});
}

TEST(SessionList, TheEndBarrierWaitsForEveryLane) {
  SessionList list(3, true);
  list.lane_done(0);
  list.lane_done(0);  // once per lane, however often it says so
  list.lane_done(2);
  EXPECT_FALSE(list.all_done());
  EXPECT_FALSE(list.wait_all_done(std::chrono::milliseconds(20)));
  std::thread last([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    list.lane_done(1);
  });
  EXPECT_TRUE(list.wait_all_done(std::chrono::seconds(10)));
  last.join();
  EXPECT_TRUE(list.all_done());
}

TEST(SessionList, ALaneDownHoldsNoEntriesBack) {
  // A hot folder keeps only what some lane has not sent: a lane that takes nothing more must not
  // make it keep everything for months.
  SessionList list(2, false);
  list.add(entry_of(1));
  list.add(entry_of(2));
  EXPECT_EQ(ids_of(list.take(0)), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(list.waiting(1), 2u);
  list.lane_down(1);
  EXPECT_EQ(list.waiting(1), 0u) << "dropped: every lane still up has taken them";
  list.add(entry_of(3));
  EXPECT_EQ(ids_of(list.take(0)), std::vector<uint32_t>{3});
  EXPECT_EQ(list.waiting(1), 0u);
  // It still counts at the end barrier.
  list.lane_done(0);
  EXPECT_FALSE(list.all_done());
  list.lane_done(1);
  EXPECT_TRUE(list.all_done());
}

}  // namespace
}  // namespace ddft::sender
