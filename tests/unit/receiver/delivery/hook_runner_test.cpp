// The --on-complete runner with a real /bin/sh: what the command gets, how each outcome is logged,
// timeouts (on a FakeClock: the test decides when time has passed), the queue bound and shutdown.
#include "receiver/delivery/hook_runner.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using namespace std::chrono;

// The log lines written while it lives; readable while other threads log.
class LogCapture {
 public:
  LogCapture()
      : old_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(10000)) {
    sink_->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  ~LogCapture() { spdlog::set_default_logger(old_); }
  std::string text() const {
    std::string out;
    for (const auto& l : sink_->last_formatted()) out += l;
    return out;
  }
  bool has(const std::string& s) const { return text().find(s) != std::string::npos; }

 private:
  std::shared_ptr<spdlog::logger> old_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

// Polls `pred` until it holds, for at most 30 s of real time (a bound, not a measurement).
template <typename Pred>
bool eventually(Pred pred) {
  const auto end = steady_clock::now() + seconds(30);
  while (steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return pred();
}

class HookRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {}
  void TearDown() override {
    runner_.reset();  // stops it: nothing outlives the test
  }
  // Writes an executable shell script and returns a command that runs it. In `body`, $D is the
  // test's folder.
  std::string script(const std::string& name, const std::string& body) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\nD='" << dir_.string() << "'\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  }
  void start(HookOptions o) { runner_ = std::make_unique<HookRunner>(std::move(o), clock_); }
  DeliveredFile file(const std::string& rel) {
    DeliveredFile f;
    f.file.path = rel;
    f.final_path = (dir_ / "out" / rel).string();
    f.file.size = 1234;
    f.key = "0x6999CF78";
    f.file.session = 0x0f3c9a7d12e45b60;
    return f;
  }
  uint64_t finished() const {
    const auto& c = runner_->counters();
    return c.ok + c.failed + c.timed_out + c.not_run;
  }

  testing::ScratchDir scratch_{"hook"};
  fs::path dir_ = scratch_.path();
  common::FakeClock clock_;
  LogCapture log_;
  std::unique_ptr<HookRunner> runner_;
};

TEST_F(HookRunnerTest, PathArrivesVerbatimAsAnArgumentAndInTheEnvironment) {
  // Spaces, quotes, a command substitution, backticks, a glob and a newline: all of it data.
  const std::string rel = "a dir/it's \"q\" $(touch " + (dir_ / "PWNED").string() + ") `touch " +
                          (dir_ / "PWNED2").string() + "` *;x\nline2.txt";
  const std::string cmd = script("hook.sh",
                                 "printf '%s' \"$#\" > \"$D/argc\"\n"
                                 "printf '%s' \"$1\" > \"$D/arg\"\n"
                                 "printf '%s' \"$DDFT_PATH\" > \"$D/path\"\n"
                                 "printf '%s' \"$DDFT_REL_PATH\" > \"$D/rel\"\n"
                                 "printf '%s' \"$DDFT_SIZE\" > \"$D/size\"\n"
                                 "printf '%s' \"$DDFT_KEY\" > \"$D/key\"\n"
                                 "printf '%s' \"$DDFT_SESSION\" > \"$D/session\"\n"
                                 "printf '%s' \"$DDFT_SENDER\" > \"$D/sender\"\n"
                                 "printf '%s %s' \"$DDFT_FEC_REBUILT\" \"$DDFT_REPEAT_FILLED\" > "
                                 "\"$D/repairs\"\n"
                                 "ls -l /proc/self/fd/ > \"$D/fds\"\n"
                                 "cat > \"$D/stdin\"\n");
  HookOptions o;
  o.command = cmd;
  start(o);
  DeliveredFile f = file(rel);
  f.sender = "00000000000a11ce";
  f.repairs.fec_rebuilt = 7;
  f.repairs.repeat_filled = 3;
  runner_->enqueue(f);
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().ok, 1u) << log_.text();
  EXPECT_EQ(read_file(dir_ / "argc"), "1");
  EXPECT_EQ(read_file(dir_ / "arg"), f.final_path);
  EXPECT_EQ(read_file(dir_ / "path"), f.final_path);
  EXPECT_EQ(read_file(dir_ / "rel"), rel);
  EXPECT_EQ(read_file(dir_ / "size"), "1234");
  EXPECT_EQ(read_file(dir_ / "key"), "0x6999CF78");
  EXPECT_EQ(read_file(dir_ / "session"), "0f3c9a7d12e45b60");
  EXPECT_EQ(read_file(dir_ / "sender"), "00000000000a11ce");
  EXPECT_EQ(read_file(dir_ / "repairs"), "7 3");
  EXPECT_EQ(read_file(dir_ / "stdin"), "");  // /dev/null
  EXPECT_FALSE(fs::exists(dir_ / "PWNED"));
  EXPECT_FALSE(fs::exists(dir_ / "PWNED2"));
  // Only stdin, stdout, stderr (and ls's own directory handle) are open in the hook: none of the
  // test's descriptors leaked.
  const std::string fds = read_file(dir_ / "fds");
  size_t open = 0;
  for (size_t pos = 0; (pos = fds.find(" -> ", pos)) != std::string::npos; ++pos) ++open;
  EXPECT_LE(open, 4u) << fds;
  // The log line names the file by its relative path, quoted so that the newline stays one line.
  EXPECT_TRUE(log_.has("Info: on-complete \"a dir/it's \\\"q\\\" $(touch ")) << log_.text();
  EXPECT_TRUE(log_.has("line2.txt\": exit 0 (0.000 s)")) << log_.text();
}

TEST_F(HookRunnerTest, CommandMayBeAShellSnippetWithThePathAppended) {
  HookOptions o;
  o.command = "printf '%s|' first >> '" + (dir_ / "out.txt").string() + "'; printf '%s'";
  start(o);
  runner_->enqueue(file("x y.bin"));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().ok, 1u) << log_.text();
  EXPECT_EQ(read_file(dir_ / "out.txt"), "first|");
}

TEST_F(HookRunnerTest, ExitStatusIsLoggedWithTheTailOfTheOutput) {
  HookOptions o;
  o.command = script("fail.sh",
                     "i=0; while [ $i -lt 500 ]; do echo \"noise $i\"; i=$((i+1)); done\n"
                     "echo first\necho second >&2\n"
                     "printf '%0300d\\n' 7\n"
                     "exit 3");
  start(o);
  runner_->enqueue(file("a.txt"));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().failed, 1u);
  const std::string text = log_.text();
  // The last three lines, the 300-byte one cut to 200 bytes, stdout and stderr as they came.
  EXPECT_NE(text.find("Warn: on-complete \"a.txt\": exit 3 (0.000 s; output: \"first\\nsecond\\n" +
                      std::string(200, '0') + "...\")"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("noise"), std::string::npos) << text;
}

TEST_F(HookRunnerTest, KilledBySignalIsAFailure) {
  HookOptions o;
  // The shell itself killed (by the OOM killer, an operator's kill): the signal is named.
  o.command = "kill -KILL $$;";
  start(o);
  runner_->enqueue(file("a.txt"));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().failed, 1u);
  EXPECT_TRUE(log_.has("Warn: on-complete \"a.txt\": killed by signal 9 (SIGKILL, 0.000 s)\n"))
      << log_.text();
}

TEST_F(HookRunnerTest, CommandKilledUnderTheShellIsItsExitStatus) {
  HookOptions o;
  // A command the shell ran was killed: the shell says so with 128 + the signal, and "Killed".
  o.command = script("die.sh", "kill -KILL $$");
  start(o);
  runner_->enqueue(file("a.txt"));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().failed, 1u);
  EXPECT_TRUE(log_.has("Warn: on-complete \"a.txt\": exit 137 (0.000 s; output: \"Killed\")"))
      << log_.text();
}

TEST_F(HookRunnerTest, MissingCommandIsLoggedAndTheNextOneStillRuns) {
  HookOptions o;
  o.command = (dir_ / "no-such-hook").string();
  start(o);
  runner_->enqueue(file("a.txt"));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().failed, 1u);
  EXPECT_TRUE(log_.has("Warn: on-complete \"a.txt\": exit 127 (")) << log_.text();
  EXPECT_TRUE(log_.has("not found")) << log_.text();
}

TEST_F(HookRunnerTest, MissingShellIsNotRun) {
  HookOptions o;
  o.command = "true";
  o.shell = (dir_ / "no-such-shell").string();
  start(o);
  runner_->enqueue(file("a.txt"));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().not_run, 1u);
  EXPECT_TRUE(log_.has("Warn: on-complete \"a.txt\": not run (cannot start " + o.shell +
                       ": No such file or directory; file: \""))
      << log_.text();
}

TEST_F(HookRunnerTest, HangingHookAndWhatItStartedAreKilledAtTheTimeout) {
  HookOptions o;
  o.timeout = seconds(10);
  // A background child in the same group, and a foreground wait.
  o.command = script("hang.sh",
                     "sleep 1000 & echo $! > \"$D/child\"\n"
                     "echo started > \"$D/started\"\nwait");
  start(o);
  runner_->enqueue(file("slow.bin"));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  const pid_t child = std::stoi(read_file(dir_ / "child"));
  clock_.advance(seconds(9));
  // Not yet: it is within its timeout (the runner checks often; give it a few rounds).
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(finished(), 0u);
  clock_.advance(seconds(2));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().timed_out, 1u);
  EXPECT_TRUE(
      log_.has("Warn: on-complete \"slow.bin\": timed out after 10 s (process group "
               "killed)"))
      << log_.text();
  // The background child went with it (gone, or a zombie waiting for its new parent).
  EXPECT_TRUE(eventually([&] {
    const std::string stat = read_file("/proc/" + std::to_string(child) + "/stat");
    return stat.empty() || stat.find(") Z ") != std::string::npos;
  }));
}

TEST_F(HookRunnerTest, HookIgnoringTermIsKilledAfterTheGrace) {
  const std::string d = dir_.string();
  HookOptions o;
  o.timeout = seconds(10);
  o.kill_grace = seconds(5);
  // The shell that runs the command catches SIGTERM (its children, the sleeps, do not).
  o.command = "trap 'echo term >> \"" + d + "/term\"' TERM; echo started > '" + d +
              "/started'; while :; do sleep 0.05; done; :";
  start(o);
  runner_->enqueue(file("s.bin"));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  clock_.advance(seconds(11));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "term"); })) << log_.text();
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(finished(), 0u) << "SIGTERM was caught: it runs on until the grace is over";
  clock_.advance(seconds(6));
  ASSERT_TRUE(eventually([&] { return finished() == 1; })) << log_.text();
  EXPECT_EQ(runner_->counters().timed_out, 1u);
}

TEST_F(HookRunnerTest, QueueIsBoundedAndEnqueueNeverWaits) {
  const std::string d = dir_.string();
  HookOptions o;
  o.max_pending = 2;
  o.command = script("gate.sh",
                     "echo \"$1\" >> \"$D/started\"\n"
                     "while [ ! -e \"$D/release\" ]; do sleep 0.02; done");
  start(o);
  runner_->enqueue(file("1"));  // runs, and waits for the release
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  runner_->enqueue(file("2"));
  runner_->enqueue(file("3"));
  EXPECT_EQ(runner_->pending(), 2u);
  runner_->enqueue(file("4"));  // beyond the bound: returns at once, logged, counted
  EXPECT_EQ(runner_->counters().not_run, 1u);
  EXPECT_TRUE(log_.has("Warn: on-complete \"4\": not run (queue full: 2 waiting; file: \"" + d +
                       "/out/4\")"))
      << log_.text();
  std::ofstream(dir_ / "release").put('x');
  ASSERT_TRUE(eventually([&] { return finished() == 4; })) << log_.text();
  EXPECT_EQ(runner_->counters().ok, 3u);
  EXPECT_EQ(read_file(dir_ / "started"), d + "/out/1\n" + d + "/out/2\n" + d + "/out/3\n");
}

TEST_F(HookRunnerTest, ShutdownWaitsForTheRunningHookAndNamesEveryFileNotRun) {
  const std::string d = dir_.string();
  HookOptions o;
  o.command = script("gate.sh",
                     "echo \"$1\" >> \"$D/started\"\n"
                     "while [ ! -e \"$D/release\" ]; do sleep 0.02; done");
  start(o);
  runner_->enqueue(file("running"));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  runner_->enqueue(file("queued 1"));
  runner_->enqueue(file("queued 2"));
  std::thread stopper([&] { runner_->stop(); });
  ASSERT_TRUE(eventually([&] { return runner_->stopping(); }));
  runner_->enqueue(file("late"));  // delivered while stopping
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(runner_->counters().ok, 0u) << "stop() waits for the running hook";
  std::ofstream(dir_ / "release").put('x');
  stopper.join();
  EXPECT_EQ(runner_->counters().ok, 1u);
  EXPECT_EQ(runner_->counters().not_run, 3u);
  for (const char* name : {"queued 1", "queued 2", "late"}) {
    EXPECT_TRUE(log_.has(std::string("Warn: on-complete \"") + name +
                         "\": not run (receiver stopping; file: \"" + d + "/out/" + name + "\")"))
        << log_.text();
  }
  EXPECT_TRUE(log_.has("Info: on-complete: 1 ok, 0 failed, 0 timed out, 3 not run")) << log_.text();
  EXPECT_EQ(read_file(dir_ / "started"), d + "/out/running\n");  // the queued ones never started
}

TEST_F(HookRunnerTest, QueuedHookFollowsItsFileWhenANewerOneTakesItsName) {
  const std::string d = dir_.string();
  HookOptions o;
  o.command = script("gate.sh",
                     "echo \"$1\" >> \"$D/started\"\n"
                     "while [ ! -e \"$D/release\" ]; do sleep 0.02; done");
  start(o);
  runner_->enqueue(file("first"));
  ASSERT_TRUE(eventually([&] { return fs::exists(dir_ / "started"); }));
  runner_->enqueue(file("x.txt"));
  runner_->file_moved(d + "/out/x.txt", d + "/out/x.1.txt");
  runner_->enqueue(file("x.txt"));  // the newer file, now under the name
  std::ofstream(dir_ / "release").put('x');
  ASSERT_TRUE(eventually([&] { return finished() == 3; })) << log_.text();
  EXPECT_EQ(read_file(dir_ / "started"),
            d + "/out/first\n" + d + "/out/x.1.txt\n" + d + "/out/x.txt\n");
}

TEST_F(HookRunnerTest, SeveralJobsRunAtOnce) {
  HookOptions o;
  o.jobs = 3;
  // Each waits until all three have started: with fewer at once this would never finish.
  o.command = script("meet.sh",
                     "echo x >> \"$D/started\"\n"
                     "while [ \"$(wc -l < \"$D/started\")\" -lt 3 ]; do sleep 0.02; done");
  start(o);
  for (const char* n : {"a", "b", "c"}) runner_->enqueue(file(n));
  ASSERT_TRUE(eventually([&] { return finished() == 3; })) << log_.text();
  EXPECT_EQ(runner_->counters().ok, 3u);
}

TEST_F(HookRunnerTest, WaitIdleReturnsWhenEveryHookRanOrOnStop) {
  HookOptions o;
  o.command = "true";
  start(o);
  for (int i = 0; i < 5; ++i) runner_->enqueue(file("f" + std::to_string(i)));
  std::stop_source never;
  EXPECT_TRUE(runner_->wait_idle(never.get_token()));
  EXPECT_EQ(runner_->counters().ok, 5u);

  runner_.reset();
  o.command = script("block.sh", "while [ ! -e \"$D/release\" ]; do sleep 0.02; done");
  start(o);
  runner_->enqueue(file("blocked"));
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(runner_->wait_idle(stop.get_token()));
  std::ofstream(dir_ / "release").put('x');
}

}  // namespace
}  // namespace ddft::receiver
