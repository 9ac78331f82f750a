// The self-test's command line and dialogue: the programs' switches, run_if_requested() leaving
// a normal command line alone, bad input ending in status 2, and the seed's dialogue.
#include "iotest/cli.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <string>
#include <vector>

namespace ddft::iotest {
namespace {

// argv for the functions that take one (they do not write to it).
struct Argv {
  explicit Argv(std::vector<std::string> a) : args(std::move(a)) {
    for (std::string& s : args) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(args.size()); }
  char** argv() { return ptrs.data(); }
  std::vector<std::string> args;
  std::vector<char*> ptrs;
};

TEST(IotestCli, EachProgramHasItsSwitch) {
  EXPECT_STREQ(switch_flag(Kind::kWrite), "--test-io");
  EXPECT_STREQ(switch_flag(Kind::kRead), "--test-read-io");
}

TEST(IotestCli, WithoutTheSwitchNothingRuns) {
  Argv a({"dd_file_receive", "--listen", "127.0.0.1:1", "--output", "/tmp"});
  EXPECT_EQ(run_if_requested(a.argc(), a.argv(), Kind::kWrite), std::nullopt);
  Argv b({"dd_file_send", "--test-io"});  // the receiver's switch, not the sender's
  EXPECT_EQ(run_if_requested(b.argc(), b.argv(), Kind::kRead), std::nullopt);
}

TEST(IotestCli, BadInputIsStatusTwoBeforeAnythingIsWritten) {
  Argv a({"dd_iotest", "--test", "write", "--path", "/no/such/folder", "--size-mb", "1", "--runs",
          "1", "--block-kb", "64", "--threads", "1"});
  EXPECT_EQ(iotest_main(a.argc(), a.argv(), "dd_iotest", std::nullopt), 2);
  spdlog::drop("iotest");  // each run sets up its own logger, as a program does once
  Argv b({"dd_iotest", "--test", "sideways"});
  EXPECT_EQ(iotest_main(b.argc(), b.argv(), "dd_iotest", std::nullopt), 2);
}

TEST(IotestCli, TheSwitchIsListedInHelp) {
  CLI::App app;
  add_switch_help(app, Kind::kWrite);
  EXPECT_NE(app.help().find("--test-io"), std::string::npos) << app.help();
}

TEST(Dialogue, DefaultsAreShownAndTakenAndBadAnswersAskedAgain) {
  Params p;
  // path: a non-folder first, then /tmp; size: "abc" then 8; timeout: default; runs: 2;
  // buffers: default; threads "1,2"; files: default; direct: "maybe" then false; mode: rwd.
  std::istringstream in("/no/such/folder\n/tmp\nabc\n8\n\n2\n\n1,2\n\nmaybe\nfalse\nrwd\n");
  std::ostringstream out;
  prompt_params(in, out, p);
  const std::string o = out.str();
  EXPECT_EQ(p.path, "/tmp");
  EXPECT_EQ(p.size_mb, 8u);
  EXPECT_EQ(p.timeout_s, 60);
  EXPECT_EQ(p.runs, 2u);
  EXPECT_EQ(p.block_kb, (std::vector<unsigned>{64, 128, 256, 512, 1024, 2048, 4096}));
  EXPECT_EQ(p.threads, (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(p.files, 1u);
  EXPECT_FALSE(p.direct);
  EXPECT_EQ(p.mode, common::WriteMode::kDataSync);
  EXPECT_NE(o.find("Please enter the size of file you wish to write (in MB, default 500)"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("(default:  '64,128,256,512,1024,2048,4096')"), std::string::npos) << o;
  EXPECT_NE(o.find("'/no/such/folder' is not a folder"), std::string::npos) << o;
  EXPECT_NE(o.find("file size: 'abc' is not a number"), std::string::npos) << o;
  EXPECT_NE(o.find("direct IO: 'maybe' is not true or false"), std::string::npos) << o;
  EXPECT_NE(o.find("Mode used = rwd."), std::string::npos) << o;
}

TEST(Dialogue, ReadTestAsksNoWriteQuestionsAndEndOfInputIsAnError) {
  Params p;
  p.kind = Kind::kRead;
  std::istringstream in("/tmp\n\n\n\n\n\n");
  std::ostringstream out;
  prompt_params(in, out, p);
  EXPECT_EQ(out.str().find("files would you like"), std::string::npos);
  EXPECT_NE(out.str().find("reader thread array"), std::string::npos);
  Params q;
  std::istringstream short_in("/tmp\n");
  EXPECT_THROW(prompt_params(short_in, out, q), std::runtime_error);
}

}  // namespace
}  // namespace ddft::iotest
