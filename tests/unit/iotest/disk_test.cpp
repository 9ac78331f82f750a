// The self-test's disk side on a real temp folder: the preflight's one-line refusals, a small
// write run and a small read run through the programs' own IO code (sizes in MiB, a few runs;
// the figures themselves are not asserted), and that every test file is gone afterwards.
// The read self-test reads in the sender's block size, without knowing the sender.
#include "iotest/disk.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <stop_token>
#include <string>

#include "sender/pipeline.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::iotest {
namespace {
namespace fs = std::filesystem;

Params small(const fs::path& dir, Kind kind) {
  Params p;
  p.kind = kind;
  p.path = dir.string();
  p.size_mb = 4;
  p.timeout_s = 60;
  p.runs = 1;
  p.block_kb = {64};
  p.threads = {1};
  p.files = 1;
  p.direct = false;  // whatever the file system (tmpfs refuses O_DIRECT)
  return p;
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

std::string refusal(const Params& p) {
  try {
    preflight(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Preflight, RefusesWhatItCannotTestInOneLine) {
  testing::ScratchDir dir("iotest_disk");
  Params p = small(dir.path() / "missing", Kind::kWrite);
  std::string err = refusal(p);
  EXPECT_NE(err.find("cannot test '" + p.path + "'"), std::string::npos) << err;
  { std::ofstream(dir.path() / "file") << "x"; }
  p.path = (dir.path() / "file").string();
  err = refusal(p);
  EXPECT_NE(err.find("not a folder"), std::string::npos) << err;
  p = small(dir.path(), Kind::kWrite);
  p.size_mb = uint64_t{1} << 40;  // far more than any disk here
  err = refusal(p);
  EXPECT_NE(err.find("not enough free space"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(Preflight, AcceptsAWritableFolderAndReportsItsSpace) {
  testing::ScratchDir dir("iotest_disk");
  // MemAvailable moves while other programs run: the preflight's reading must lie between one
  // taken just before it and one just after, in one of a few tries.
  bool bracketed = false;
  uint64_t before = 0, got = 0, after = 0;
  for (int i = 0; i < 20 && !bracketed; ++i) {
    before = page_cache_ram();
    const Preflight pre = preflight(small(dir.path(), Kind::kWrite));
    after = page_cache_ram();
    EXPECT_GT(pre.free_bytes, 0u);
    got = pre.page_cache_bytes;
    bracketed = std::min(before, after) <= got && got <= std::max(before, after);
  }
  EXPECT_TRUE(bracketed) << "MemAvailable " << before << ", then the preflight's " << got
                         << ", then " << after;
  EXPECT_GT(got, 0u) << "MemAvailable is in /proc/meminfo";
  EXPECT_EQ(entries(dir.path()), 0u) << "the preflight leaves nothing behind";
}

TEST(DiskRunner, AWriteRunMovesTheBytesAndLeavesNothing) {
  testing::ScratchDir dir("iotest_disk");
  std::stop_source stop;
  {
    DiskRunner runner(small(dir.path(), Kind::kWrite), stop.get_token());
    const RunOutcome o = runner.run(64, 1, 1);
    EXPECT_EQ(o.bytes, 4u << 20);
    EXPECT_FALSE(o.timed_out);
    runner.remove_files();
    EXPECT_EQ(entries(dir.path()), 0u);
    const RunOutcome two = runner.run(128, 2, 2);  // two files at once
    EXPECT_EQ(two.bytes, 4u << 20);
  }
  EXPECT_EQ(entries(dir.path()), 0u) << "the destructor removes what the runs made";
}

TEST(DiskRunner, AReadRunReadsTheWholeFileAndRemovesIt) {
  testing::ScratchDir dir("iotest_disk");
  std::stop_source stop;
  {
    DiskRunner runner(small(dir.path(), Kind::kRead), stop.get_token());
    const RunOutcome o = runner.run(64, 1, 1);
    EXPECT_EQ(o.bytes, 4u << 20);
    EXPECT_FALSE(o.timed_out);
  }
  EXPECT_EQ(entries(dir.path()), 0u);
}

TEST(ReadBlockBytes, IsTheSendersReaderBlockAtItsDefaults) {
  for (unsigned kb : {4u, 64u, 1024u, 4096u, 65536u}) {
    sender::SenderConfig cfg;
    cfg.read_block_kb = kb;
    EXPECT_EQ(read_block_bytes(kb), sender::reader_block_size(cfg)) << kb << " KB";
  }
}

}  // namespace
}  // namespace ddft::iotest
