// What the lanes of a session share: the observers hear the session start and end once, a file
// start once (from the first lane that announces it), its progress summed over lanes, and its
// end once, from the last lane that carried it, failed when any lane aborted it; only then does
// the file's entry go into the list. A lane that goes down dooms the files it has not finished,
// those begun and those to come, and no other.
#include "sender/transmit/lane_hub.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ddft::sender {
namespace {

// Records the callbacks as one line each.
class HubEvents final : public SendObserver {
 public:
  void session_started(uint64_t id) override { log.push_back("session " + std::to_string(id)); }
  void file_started(const FileMeta& f) override { log.push_back("start " + f.rel_path); }
  void file_progress(const FileMeta& f, uint64_t sent) override {
    log.push_back("progress " + f.rel_path + " " + std::to_string(sent));
  }
  void file_sent(const FileMeta& f, const common::Digest& d) override {
    log.push_back("sent " + f.rel_path + " " + std::to_string(d.size));
  }
  void file_failed(const FileMeta& f, const std::string& reason) override {
    log.push_back("failed " + f.rel_path + ": " + reason);
  }
  void session_finished(uint64_t id) override { log.push_back("done " + std::to_string(id)); }
  std::vector<std::string> log;
};

FileMeta hub_file(uint32_t id, const std::string& path) {
  FileMeta m;
  m.file_id = id;
  m.rel_path = path;
  m.size = 300;
  return m;
}

TEST(LaneHub, ObserversHearEachEventOnce) {
  HubEvents events;
  LaneHub hub(3, true, events);
  for (int lane = 0; lane < 3; ++lane) hub.session_started(9);
  const FileMeta big = hub_file(1, "big");  // striped: every lane carries it
  const FileMeta small = hub_file(2, "small");
  common::Digest digest;
  digest.size = 16;
  for (int lane = 0; lane < 3; ++lane) hub.file_begun(big, 0b111, {});
  hub.file_begun(small, 0b100, {});
  hub.file_progress(big, 100);
  hub.file_progress(big, 50);
  EXPECT_FALSE(hub.lane_finished(big, 0, false, digest, "").has_value());
  EXPECT_FALSE(hub.lane_finished(big, 1, false, digest, "").has_value());
  EXPECT_EQ(hub.list().files(), 0u) << "listed only once every lane is through with it";
  const auto out = hub.lane_finished(big, 2, false, digest, "");
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->aborted);
  hub.file_done(big, *out, common::kLaneAll);
  const auto small_out = hub.lane_finished(small, 2, false, digest, "");
  ASSERT_TRUE(small_out.has_value());
  hub.file_done(small, *small_out, 2);
  for (int lane = 0; lane < 3; ++lane) hub.session_finished(9);
  EXPECT_EQ(events.log, (std::vector<std::string>{"session 9", "start big", "start small",
                                                  "progress big 100", "progress big 150",
                                                  "sent big 16", "sent small 16", "done 9"}));
  const std::vector<ListedFile> listed = hub.list().take(0);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].lane, common::kLaneAll);
  EXPECT_EQ(listed[1].lane, 2);
  EXPECT_FALSE(listed[0].aborted);
}

TEST(LaneHub, AFileAbortedOnAnyLaneFailsOnceWithTheFirstReason) {
  HubEvents events;
  LaneHub hub(2, true, events);
  const FileMeta f = hub_file(4, "torn");
  hub.file_begun(f, 0b11, {});
  hub.file_begun(f, 0b11, {});
  EXPECT_FALSE(hub.lane_finished(f, 0, true, {}, "read error").has_value());
  common::Digest digest;
  digest.size = 16;
  const auto out = hub.lane_finished(f, 1, false, digest, "");  // the other lane ended its part
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->aborted);
  EXPECT_EQ(out->reason, "read error");
  hub.file_done(f, *out, common::kLaneAll);
  EXPECT_EQ(events.log, (std::vector<std::string>{"start torn", "failed torn: read error"}));
  const std::vector<ListedFile> listed = hub.list().take(1);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].aborted);
  EXPECT_EQ(listed[0].digest.size, 0u);
}

TEST(LaneHub, ALaneDownDoomsTheFilesItHasNotFinishedAndOnlyThose) {
  HubEvents events;
  LaneHub hub(3, true, events);
  common::Digest digest;
  digest.size = 16;
  const FileMeta done_there = hub_file(1, "done-there");  // striped, lane 1 through with it
  const FileMeta open = hub_file(2, "open");              // striped, lane 1 not through
  const FileMeta elsewhere = hub_file(3, "elsewhere");    // whole, on lane 0
  const FileMeta later = hub_file(4, "later");            // striped, begun after the lane went
  const FileMeta after = hub_file(5, "after");            // striped over the lanes still up
  hub.file_begun(done_there, 0b111, {});
  hub.file_begun(open, 0b111, {});
  hub.file_begun(elsewhere, 0b001, {});
  EXPECT_FALSE(hub.lane_finished(done_there, 1, false, digest, "").has_value());
  hub.lane_down(1, "lane 1 (x) is down: send failed: Broken pipe");
  EXPECT_EQ(hub.doomed(done_there), std::nullopt) << "its stripes on lane 1 all went out";
  EXPECT_EQ(hub.doomed(elsewhere), std::nullopt);
  const std::optional<std::string> doom = hub.doomed(open);
  ASSERT_TRUE(doom.has_value());
  const std::string reason = *doom;
  EXPECT_EQ(reason, "lane 1 (x) is down: send failed: Broken pipe");
  hub.file_begun(later, 0b111, {});
  EXPECT_NE(hub.doomed(later), std::nullopt) << "queued for lane 1 before it went down";
  hub.file_begun(after, 0b101, {});
  EXPECT_EQ(hub.doomed(after), std::nullopt);
  // The lanes up abort the doomed file (as the transmitters do), the lane down fails its part:
  // the outcome is failed, with the lane's reason, whoever finishes last.
  EXPECT_FALSE(hub.lane_finished(open, 0, true, {}, reason).has_value());
  EXPECT_FALSE(hub.lane_finished(open, 1, true, {}, reason).has_value());
  const auto out =
      hub.lane_finished(open, 2, true, {}, "lane 1 (x) is down: send failed: Broken pipe");
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->aborted);
  EXPECT_EQ(out->reason, "lane 1 (x) is down: send failed: Broken pipe");
  // A doomed file a lane up had already ended (its end went out before the lane went down)
  // fails all the same.
  EXPECT_FALSE(hub.lane_finished(later, 0, false, digest, "").has_value());
  EXPECT_FALSE(hub.lane_finished(later, 2, false, digest, "").has_value());
  const auto later_out = hub.lane_finished(later, 1, true, {}, "down");
  ASSERT_TRUE(later_out.has_value());
  EXPECT_TRUE(later_out->aborted);
  EXPECT_EQ(later_out->reason, "lane 1 (x) is down: send failed: Broken pipe");
}

}  // namespace
}  // namespace ddft::sender
