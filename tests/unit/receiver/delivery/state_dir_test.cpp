// The receiver's state folder (state_dir.hpp): its names, how the output folder opens it, that no
// path from the wire and no start-up sweep reaches into it, and the one-time move of what earlier
// versions kept in the output folder. On real folders.
#include "receiver/delivery/state_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "receiver/delivery/outcome_log.hpp"
#include "receiver/delivery/output_dir.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using ddft::testing::write_file;
using ::testing::HasSubstr;

TEST(StateNames, AreTheOnesTheDocumentsName) {
  EXPECT_EQ(default_state_dir("/srv/in"), "/srv/in/.ddft");
  EXPECT_EQ(default_state_dir("/srv/in/"), "/srv/in/.ddft");
  EXPECT_EQ(default_state_dir("/"), "/.ddft");
  EXPECT_EQ(default_failed_dir("/srv/in/.ddft"), "/srv/in/.ddft/failed");
  EXPECT_EQ(session_state_name(0), "session-state");
  EXPECT_EQ(session_state_name(2), "session-state.lane2");
  EXPECT_STREQ(kJournalName, "outcomes");
  EXPECT_STREQ(kRecordReserveName, "record-reserve");
}

TEST(StateNames, NoPathFromTheWireNamesTheDefaultStateFolder) {
  for (const char* own : {".ddft", ".ddft/outcomes", "a/.ddft/x", ".ddft/failed/r.json"}) {
    const auto why = check_wire_path(own);
    ASSERT_TRUE(why.has_value()) << own;
    EXPECT_THAT(*why, HasSubstr("a name the receiver keeps for its own files")) << own;
  }
  for (const char* ok : {".ddftx", ".ddft.txt", "ddft", "a/.ddfts/b"}) {
    EXPECT_EQ(check_wire_path(ok), std::nullopt) << ok;
  }
}

class StateDirTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(out_); }

  // The output folder as a receiver opens it: the default state and failed folders unless given.
  std::unique_ptr<OutputDir> open(const std::string& failed = "", const std::string& state = "") {
    const std::string st = state.empty() ? default_state_dir(out_.string()) : state;
    return std::make_unique<OutputDir>(out_.string(),
                                       failed.empty() ? default_failed_dir(st) : failed,
                                       CollisionPolicy::kRename, false, state);
  }
  // What the output folder holds at its top, sorted.
  std::vector<std::string> top() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(out_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  testing::ScratchDir scratch_{"state"};
  fs::path out_ = scratch_.path() / "out";
  fs::path state_ = out_ / ".ddft";
};

TEST_F(StateDirTest, TheDefaultFolderIsMadeInTheOutputFolderWithItsMode) {
  const auto od = open();
  struct stat st {};
  ASSERT_EQ(::stat(state_.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 07777, kStateDirMode & ~mask);
  EXPECT_EQ(od->state_dir(), state_.string());
  EXPECT_TRUE(fs::is_directory(state_ / "failed"));
  EXPECT_TRUE(fs::is_regular_file(state_ / kRecordReserveName));
  // The journal and the replay state go there, and nothing else of the receiver's is in OUTPUT.
  OutcomeLog journal(od->state_fd());
  std::string why;
  ASSERT_TRUE(od->write_state(session_state_name(1), "mark\n", &why)) << why;
  EXPECT_TRUE(fs::is_regular_file(state_ / kJournalName));
  EXPECT_EQ(read_file(state_ / "session-state.lane1"), "mark\n");
  std::optional<std::string> text;
  ASSERT_TRUE(od->read_state(session_state_name(1), &text, &why)) << why;
  EXPECT_EQ(text, "mark\n");
  EXPECT_EQ(top(), std::vector<std::string>{".ddft"});
  // The start-up sweep does not enter it.
  const std::string tmp = temp_name(7, 3);
  write_file(state_ / tmp, "not a leftover");
  EXPECT_TRUE(od->recover_leftovers().empty());
  EXPECT_EQ(read_file(state_ / tmp), "not a leftover");
}

TEST_F(StateDirTest, AFolderElsewhereMustBeOnTheOutputsFileSystemAndNotTheOutputItself) {
  try {
    OutputDir od(out_.string(), (out_ / "f").string(), CollisionPolicy::kRename, false,
                 out_.string());
    FAIL() << "the output folder itself was taken as the state folder";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("is the output folder itself"));
  }
  fs::create_directories(scratch_.path() / "other");
  const testing::ScopedMount other(scratch_.path() / "other", "tmpfs");
  if (!other.mounted()) GTEST_SKIP() << other.skip_reason();
  const std::string there = (scratch_.path() / "other/state").string();
  try {
    OutputDir od(out_.string(), (out_ / "f").string(), CollisionPolicy::kRename, false, there);
    FAIL() << "a state folder on another file system was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "state folder '" + there +
                                         "' is not on the file system of the output folder '" +
                                         out_.string() + "'");
  }
}

// With --state-dir inside the output folder, no path from the wire leads into it (nor into its
// failed folder), and the start-up sweep leaves what it holds alone, temporary names and all.
TEST_F(StateDirTest, NothingFromTheWireOrTheSweepEntersTheStateFolder) {
  const std::string state = (out_ / "state").string();
  const auto od = open("", state);
  TempFile f;
  std::string why;
  EXPECT_FALSE(od->create_temp("state/planted.txt", temp_name(1, 1), &f, &why));
  EXPECT_EQ(why, "path leads into the receiver's state folder");
  EXPECT_FALSE(od->create_temp("state/failed/x.json", temp_name(1, 2), &f, &why));
  EXPECT_FALSE(fs::exists(out_ / "state/planted.txt"));
  // A name the sweep would take for a leftover, in the state folder and its failed folder.
  const std::string tmp = temp_name(7, 3);
  write_file(out_ / "state" / tmp, "kept");
  write_file(out_ / "state/failed" / tmp, "kept too");
  write_file(out_ / "sub" / tmp, "left by a crash");
  const std::vector<Leftover> found = od->recover_leftovers();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].temp_path, "sub/" + tmp);
  EXPECT_EQ(read_file(out_ / "state" / tmp), "kept");
  EXPECT_EQ(read_file(out_ / "state/failed" / tmp), "kept too");
}

// An output folder as an earlier version left it: journal, replay state of two lanes, the record
// reserve, a replace cut short, and a failed folder with two records and the data of one.
class OldStateTest : public StateDirTest {
 protected:
  void plant_old_state() {
    write_file(out_ / ".ddft-outcomes", "old journal\n");
    write_file(out_ / ".ddft-outcomes.new", "half a compaction");
    write_file(out_ / ".ddft-session-state", "lane 0\n");
    write_file(out_ / ".ddft-session-state.lane3", "lane 3\n");
    write_file(out_ / ".ddft-record-reserve", std::string(4096, '\0'));
    write_file(out_ / ".failed/20250101-000000-0000000000000001-1-a.bin.json", "{}\n");
    write_file(out_ / ".failed/20250101-000000-0000000000000001-1-a.bin", "data");
    write_file(out_ / ".failed/20250101-000000-0000000000000001-2-b.bin.json", "{}\n");
    write_file(out_ / "delivered.txt", "a delivered file stays");
  }
};

TEST_F(OldStateTest, IsMovedIntoTheStateFolderOnceWithOneLine) {
  plant_old_state();
  const auto od = open();
  od->lock_exclusive();
  const MovedState moved = od->move_old_state();
  EXPECT_TRUE(moved.warnings.empty()) << moved.warnings.front();
  EXPECT_EQ(moved.describe(out_.string(), od->state_dir()),
            "moved the receiver's state (journal, session state of 2 lanes, 2 failed records, "
            "record reserve) from " +
                out_.string() + " to " + state_.string());
  EXPECT_EQ(top(), (std::vector<std::string>{".ddft", "delivered.txt"}));
  EXPECT_EQ(read_file(state_ / "outcomes"), "old journal\n");
  EXPECT_EQ(read_file(state_ / "session-state"), "lane 0\n");
  EXPECT_EQ(read_file(state_ / "session-state.lane3"), "lane 3\n");
  EXPECT_EQ(fs::file_size(state_ / "record-reserve"), size_t{kRecordReserveBytes});
  EXPECT_FALSE(fs::exists(out_ / ".ddft-outcomes.new"));
  EXPECT_EQ(read_file(state_ / "failed/20250101-000000-0000000000000001-1-a.bin"), "data");
  EXPECT_TRUE(fs::exists(state_ / "failed/20250101-000000-0000000000000001-2-b.bin.json"));
  EXPECT_EQ(testing::failed_records(out_).size(), 2u);
  // The journal is read in its new place; a second start finds nothing to move.
  OutcomeLog journal(od->state_fd());
  EXPECT_EQ(read_file(state_ / "outcomes"), "old journal\n");
  const MovedState again = od->move_old_state();
  EXPECT_FALSE(again.any());
  EXPECT_TRUE(again.warnings.empty());
}

// Both places hold state (an older version ran again after this one): what the state folder holds
// stays in use, the old entries move beside it under a free name, and nothing is lost.
TEST_F(OldStateTest, BesideNewStateTheOldIsKeptUnderAFreeName) {
  {
    const auto first = open();
    std::string why;
    ASSERT_TRUE(first->write_state("session-state", "new lane 0\n", &why)) << why;
    write_file(state_ / "outcomes", "new journal\n");
    write_file(state_ / "outcomes.1", "an earlier one set aside\n");
    write_file(state_ / "failed/20250101-000000-0000000000000001-2-b.bin.json", "{\"new\":1}\n");
  }
  plant_old_state();
  const auto od = open();
  const MovedState moved = od->move_old_state();
  EXPECT_EQ(read_file(state_ / "outcomes"), "new journal\n");
  EXPECT_EQ(read_file(state_ / "outcomes.1"), "an earlier one set aside\n");
  EXPECT_EQ(read_file(state_ / "outcomes.2"), "old journal\n");
  EXPECT_EQ(read_file(state_ / "session-state"), "new lane 0\n");
  EXPECT_EQ(read_file(state_ / "session-state.1"), "lane 0\n");
  EXPECT_EQ(read_file(state_ / "session-state.lane3"), "lane 3\n");
  EXPECT_EQ(read_file(state_ / "failed/20250101-000000-0000000000000001-2-b.bin.json"),
            "{\"new\":1}\n");
  EXPECT_EQ(read_file(state_ / "failed/20250101-000000-0000000000000001-2-b.bin.1.json"), "{}\n");
  EXPECT_EQ(fs::file_size(state_ / "record-reserve"), size_t{kRecordReserveBytes})
      << "the state folder's own reserve stays; the old one is removed";
  EXPECT_EQ(top(), (std::vector<std::string>{".ddft", "delivered.txt"}));
  ASSERT_EQ(moved.warnings.size(), 3u);
  EXPECT_EQ(moved.warnings[0], "'" + (out_ / ".ddft-outcomes").string() + "' and '" +
                                   (state_ / "outcomes").string() +
                                   "' both exist: the second stays in use, the first was moved "
                                   "to '" +
                                   (state_ / "outcomes.2").string() + "'");
  EXPECT_THAT(moved.warnings[2], HasSubstr("moved there as '20250101-000000-0000000000000001-2-b"
                                           ".bin.1.json'"));
}

// --failed-dir elsewhere: the failed folder in use keeps what it names, and the old one stays
// where it is (the rest moves all the same).
TEST_F(OldStateTest, AnOldFailedFolderStaysWhenTheFailedFolderIsGiven) {
  plant_old_state();
  const auto od = open((scratch_.path() / "failed-elsewhere").string());
  const MovedState moved = od->move_old_state();
  EXPECT_EQ(moved.describe(out_.string(), od->state_dir()),
            "moved the receiver's state (journal, session state of 2 lanes, record reserve) "
            "from " +
                out_.string() + " to " + state_.string());
  EXPECT_TRUE(fs::exists(out_ / ".failed/20250101-000000-0000000000000001-1-a.bin"));
  EXPECT_TRUE(fs::is_empty(scratch_.path() / "failed-elsewhere"));
  // And --failed-dir naming the old folder itself keeps it in use.
  const auto same = open((out_ / ".failed").string());
  EXPECT_FALSE(same->move_old_state().any());
  EXPECT_EQ(testing::failed_records(out_).size(), 0u);
  EXPECT_TRUE(fs::exists(out_ / ".failed/20250101-000000-0000000000000001-2-b.bin.json"));
}

}  // namespace
}  // namespace ddft::receiver
