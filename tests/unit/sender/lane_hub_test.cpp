// What the lanes of a session share: the observers hear the session start and end once, a file
// start once (from the first lane that announces it), its progress summed over lanes, and its
// end once, from the last lane that carried it, failed when any lane aborted it; only then does
// the file's entry go into the list.
#include "sender/lane_hub.hpp"

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
  for (int lane = 0; lane < 3; ++lane) hub.file_begun(big, 3, {});
  hub.file_begun(small, 1, {});
  hub.file_progress(big, 100);
  hub.file_progress(big, 50);
  EXPECT_FALSE(hub.lane_finished(big, false, digest, "").has_value());
  EXPECT_FALSE(hub.lane_finished(big, false, digest, "").has_value());
  EXPECT_EQ(hub.list().files(), 0u) << "listed only once every lane is through with it";
  const auto out = hub.lane_finished(big, false, digest, "");
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->aborted);
  hub.file_done(big, *out, common::kLaneAll);
  const auto small_out = hub.lane_finished(small, false, digest, "");
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
  hub.file_begun(f, 2, {});
  hub.file_begun(f, 2, {});
  EXPECT_FALSE(hub.lane_finished(f, true, {}, "read error").has_value());
  common::Digest digest;
  digest.size = 16;
  const auto out = hub.lane_finished(f, false, digest, "");  // the other lane ended its part
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

}  // namespace
}  // namespace ddft::sender
