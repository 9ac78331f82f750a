// The self-test's sweep, recommendation, table, JSON and dialogue, with a scripted runner: no
// disk, no timing.
#include "iotest/sweep.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "iotest/cli.hpp"
#include "support/json_matchers.hpp"

namespace ddft::iotest {
namespace {
using ddft::testing::JsonHas;
using ddft::testing::JsonText;
using ddft::testing::JsonValue;
using ddft::testing::JsonValueIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Params small() {
  Params p;
  p.path = "/data";
  p.size_mb = 10;
  p.runs = 3;
  p.block_kb = {64, 1024};
  p.threads = {1, 2, 4};
  p.files = 2;
  return p;
}

// A runner whose figure is a function of the setting: MB/s = block/64 + 10 x threads + run.
struct Scripted {
  std::vector<std::tuple<unsigned, unsigned, unsigned>> calls;
  std::map<std::pair<unsigned, unsigned>, unsigned> runs_of;
  RunOutcome operator()(unsigned b, unsigned t, unsigned f) {
    calls.emplace_back(b, t, f);
    const unsigned run = runs_of[{b, t}]++;
    const double mbps = b / 64.0 + 10.0 * t + run;
    return RunOutcome{static_cast<uint64_t>(mbps * 1024 * 1024), 1.0, false};
  }
};

TEST(Sweep, RunsEverySettingRunsTimesAndAveragesThem) {
  Scripted s;
  const Sweep sw = run_sweep(small(), std::ref(s), [] { return false; });
  ASSERT_EQ(s.calls.size(), 2u * 3u * 3u);
  ASSERT_EQ(sw.cells.size(), 6u);
  EXPECT_FALSE(sw.interrupted);
  // Row-major: rows are block sizes, columns thread counts.
  const Cell& c = sw.at(1, 2);
  EXPECT_EQ(c.block_kb, 1024u);
  EXPECT_EQ(c.threads, 4u);
  ASSERT_EQ(c.runs_mbps.size(), 3u);
  EXPECT_NEAR(c.mean, 1024 / 64.0 + 40 + 1, 1e-9);  // runs 0, 1, 2 average to +1
  // Files at once never exceed the threads.
  EXPECT_EQ(sw.at(0, 0).files, 1u);
  EXPECT_EQ(sw.at(0, 1).files, 2u);
  EXPECT_EQ(sw.at(0, 2).files, 2u);
  for (const auto& [b, t, f] : s.calls) EXPECT_LE(f, t);
}

TEST(Sweep, StopEndsTheSweepAndDropsTheCutRun) {
  Scripted s;
  int asked = 0;
  // Asked before and after each run; yes from the 10th question on: the three runs of cell 1
  // and the first of cell 2 count, the second of cell 2 (cut short by the stop) does not.
  const Sweep sw = run_sweep(small(), std::ref(s), [&] { return ++asked >= 10; });
  EXPECT_TRUE(sw.interrupted);
  EXPECT_EQ(sw.cells[0].runs_mbps.size(), 3u);
  EXPECT_EQ(sw.cells[1].runs_mbps.size(), 1u);
  EXPECT_TRUE(sw.cells[2].runs_mbps.empty());
  const std::string table = format_table(sw);
  EXPECT_NE(table.find("- not measured"), std::string::npos) << table;
}

TEST(Sweep, TimedOutRunsAreMarkedAndCounted) {
  Params p = small();
  p.runs = 2;
  const Sweep sw = run_sweep(
      p,
      [](unsigned b, unsigned, unsigned) {
        return RunOutcome{50ull << 20, 1.0, b == 64};
      },
      [] { return false; });
  EXPECT_EQ(sw.at(0, 0).timeouts, 2u);
  EXPECT_EQ(sw.at(1, 0).timeouts, 0u);
  const std::string table = format_table(sw);
  EXPECT_NE(table.find("|50.0*"), std::string::npos) << table;
  EXPECT_NE(table.find("* a run hit its timeout"), std::string::npos) << table;
}

Sweep with_means(const std::vector<unsigned>& blocks, const std::vector<unsigned>& threads,
                 const std::vector<double>& means, const std::vector<unsigned>& timeouts = {}) {
  Sweep s;
  s.params = small();
  s.params.block_kb = blocks;
  s.params.threads = threads;
  for (size_t r = 0; r < blocks.size(); ++r) {
    for (size_t c = 0; c < threads.size(); ++c) {
      Cell cell;
      cell.block_kb = blocks[r];
      cell.threads = threads[c];
      cell.mean = means[r * threads.size() + c];
      cell.runs_mbps = {cell.mean};
      cell.timeouts = timeouts.empty() ? 0 : timeouts[r * threads.size() + c];
      s.cells.push_back(cell);
    }
  }
  return s;
}

TEST(Recommend, PicksTheFastestCell) {
  const Recommendation r = recommend(with_means({64, 1024}, {1, 2}, {100, 150, 300, 200}));
  ASSERT_TRUE(r.valid);
  EXPECT_EQ(r.block_kb, 1024u);
  EXPECT_EQ(r.threads, 1u);
  EXPECT_EQ(r.best_block_kb, 1024u);
  EXPECT_DOUBLE_EQ(r.mbps, 300);
}

TEST(Recommend, PrefersFewerThreadsWithinTheTolerance) {
  // 2 threads at 1000 is fastest; 1 thread at 980 is within 3%: one thread is recommended.
  // 1 thread at 960 (4% down) would not be.
  Recommendation r = recommend(with_means({64, 1024}, {1, 2}, {900, 950, 980, 1000}));
  EXPECT_EQ(r.threads, 1u);
  EXPECT_EQ(r.block_kb, 1024u);
  EXPECT_EQ(r.best_threads, 2u);
  EXPECT_DOUBLE_EQ(r.best_mbps, 1000);
  r = recommend(with_means({64, 1024}, {1, 2}, {900, 950, 960, 1000}));
  EXPECT_EQ(r.threads, 2u);
}

TEST(Recommend, AvoidsCellsThatTimedOutUnlessAllDid) {
  Recommendation r = recommend(with_means({64, 1024}, {1}, {500, 100}, /*timeouts=*/{1, 0}));
  EXPECT_EQ(r.block_kb, 1024u);
  r = recommend(with_means({64, 1024}, {1}, {500, 100}, {1, 1}));
  EXPECT_EQ(r.block_kb, 64u);
  Sweep none = with_means({64}, {1}, {0});
  none.cells[0].runs_mbps.clear();
  EXPECT_FALSE(recommend(none).valid);
}

TEST(SweepReport, TableHasTheSeedsShape) {
  const Sweep s = with_means({64, 128, 4096}, {1, 2, 8}, {1, 2, 3, 4, 5, 6, 7.25, 8, 1234.56});
  const std::string t = format_table(s);
  std::istringstream in(t);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u + 3u + 1u) << t;
  EXPECT_EQ(lines[0], "  # of THREADS  |1      |2      |8");
  EXPECT_EQ(lines[1], "Buffer size KB  +=======+=======+=======+");
  EXPECT_EQ(lines[2], "64              |1.0    |2.0    |3.0");
  EXPECT_EQ(lines[4], "4096            |7.2    |8.0    |1234.6");
  EXPECT_EQ(lines[5], "(MB/s, MB = 2^20 bytes, average of the runs)");
}

TEST(SweepReport, ParametersAndRecommendationNameTheFlagsAndConfigLines) {
  Sweep s = with_means({64, 1024}, {1, 2}, {100, 150, 300, 200});
  s.params.mode = common::WriteMode::kDataSync;
  s.params.direct = false;
  const std::string params = format_params(s.params);
  EXPECT_NE(params.find("file mode:  rwd"), std::string::npos) << params;
  EXPECT_NE(params.find("directIO:  false"), std::string::npos) << params;
  EXPECT_NE(params.find("queue depth:  32 per thread"), std::string::npos) << params;
  const std::string rec = format_recommendation(s, recommend(s));
  EXPECT_NE(rec.find("--writers 1 --write-block-kb 1024 --write-mode rwd --direct-io off"),
            std::string::npos)
      << rec;
  EXPECT_NE(rec.find("    writers = 1\n    write-block-kb = 1024\n    write-mode = \"rwd\"\n"),
            std::string::npos)
      << rec;
  s.params.kind = Kind::kRead;
  const std::string read = format_recommendation(s, recommend(s));
  EXPECT_NE(read.find("dd_file_send flags:  --readers 1 --read-block-kb 1024"), std::string::npos)
      << read;
  EXPECT_NE(format_params(s.params).find("queue depth:  4 per thread"), std::string::npos);
}

// What the test had to set differently from the programs' defaults is part of the advice, so
// that the recommended flags reproduce the measured setting and the receiver starts with them.
TEST(SweepReport, RecommendationCarriesWhatTheTestChangedFromTheDefaults) {
  EXPECT_EQ(write_buffers_for(1024), 64u);
  EXPECT_EQ(write_buffers_for(16384), 64u);
  EXPECT_EQ(write_buffers_for(32768), 32u);
  EXPECT_EQ(write_buffers_for(65536), 16u);
  Sweep s = with_means({16384, 65536}, {1}, {100, 200});
  s.params.queue_depth = 8;
  EXPECT_EQ(recommended_flags(s.params, recommend(s)),
            "--writers 1 --write-block-kb 65536 --write-mode rw --direct-io on --write-buffers 16 "
            "--buffer-mb 2048 --queue-depth 8");
  s = with_means({16384, 65536}, {1}, {200, 100});
  EXPECT_EQ(recommended_flags(s.params, recommend(s)),
            "--writers 1 --write-block-kb 16384 --write-mode rw --direct-io on --buffer-mb 2048");
  s = with_means({1024}, {2}, {100});
  s.params.kind = Kind::kRead;
  s.params.queue_depth = 16;
  EXPECT_EQ(recommended_flags(s.params, recommend(s)),
            "--readers 2 --read-block-kb 1024 --read-queue-depth 16");
  s.params.files = 1;
  s.params.queue_depth = 2048;  // more than dd_file_send takes
  EXPECT_THROW(validate(s.params), std::invalid_argument);
}

TEST(SweepReport, JsonCarriesEveryRunAndTheRecommendation) {
  Scripted s;
  const Sweep sw = run_sweep(small(), std::ref(s), [] { return false; });
  const std::string j = to_json(sw, recommend(sw), {"a \"quoted\" warning"});
  EXPECT_THAT(j, JsonHas("test", "write"));
  EXPECT_THAT(j, JsonHas("parameters", JsonHas("block_kb", JsonText("[64,1024]"))));
  EXPECT_THAT(j, JsonHas("parameters", JsonHas("threads", JsonText("[1,2,4]"))));
  // Each cell an object of the "cells" array (compact text: no spaces).
  EXPECT_THAT(j,
              JsonHas("cells", JsonValueIs(JsonValue::Kind::kArray,
                                           HasSubstr("{\"block_kb\":1024,\"threads\":4,\"files\":2,"
                                                     "\"runs_mbps\":[56.000,57.000,58.000],"
                                                     "\"mean_mbps\":57.000,\"timeouts\":0}"))));
  EXPECT_THAT(j, JsonHas("recommendation",
                         JsonHas("flags", StartsWith("--writers 4 --write-block-kb 1024"))));
  EXPECT_THAT(j, JsonHas("warnings", JsonText(R"(["a \"quoted\" warning"])")));
}

TEST(Input, ListsAreParsedSortedAndCheckedInOneLine) {
  EXPECT_EQ(parse_list(" 1024,64 ,128,64", "sizes", 64, 65536),
            (std::vector<unsigned>{64, 128, 1024}));
  const auto error = [](std::string_view text) {
    try {
      parse_list(text, "buffer sizes", 64, 65536);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("64,abc"),
            "buffer sizes: 'abc' is not a number (give a comma-separated list such as 64,128)");
  EXPECT_EQ(error("64,,128"),
            "buffer sizes: '' is not a number (give a comma-separated list such as 64,128)");
  EXPECT_EQ(error("4,64"), "buffer sizes: 4 is outside 64..65536");
  EXPECT_EQ(error("64k"),
            "buffer sizes: '64k' is not a number (give a comma-separated list such as 64,128)");
  EXPECT_EQ(error("-64"),
            "buffer sizes: '-64' is not a number (give a comma-separated list such as 64,128)");
}

TEST(Input, AFileModeIsOneOfTheWriteModes) {
  EXPECT_EQ(parse_mode("rw"), common::WriteMode::kBuffered);
  EXPECT_EQ(parse_mode("rwd"), common::WriteMode::kDataSync);
  EXPECT_EQ(parse_mode("rws"), common::WriteMode::kFullSync);
  try {
    parse_mode("rwx");
    ADD_FAILURE() << "rwx was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "file mode 'rwx' is not rw, rwd or rws");
  }
}

TEST(Input, ValidateRefusesWhatTheProgramsWouldNotTake) {
  const auto error = [](Params p) {
    try {
      validate(p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("ok");
  };
  EXPECT_EQ(error(small()), "ok");
  Params p = small();
  p.path.clear();
  EXPECT_EQ(error(p), "no path to test given (--path)");
  p = small();
  p.block_kb = {66};
  EXPECT_EQ(error(p), "buffer size 66 KB: the programs take 64..65536 KB in whole 4 KB pages");
  p = small();
  p.kind = Kind::kRead;
  EXPECT_EQ(error(p),
            "files at once applies to the write test only: the sender reads one file at a time");
  p = small();
  p = small();
  p.size_mb = 0;
  EXPECT_EQ(error(p), "file size 0 MB is outside 1..16777216");
}

}  // namespace
}  // namespace ddft::iotest
