// What dd_file_send shows and records, with the real binaries over loopback: the progress
// display on a pseudo-terminal (redrawn in place, every log line whole, gone at the end), plain
// lines when stdout is a pipe, and the send manifest of a run checked against the receive log.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/terminal_screen.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

struct Output {
  int status = -1;  // as Process::wait gives it
  std::string text;
};

// Reads `fd` until its writer is gone (EOF, or EIO for a pty) or `deadline`.
std::string drain(int fd, steady_clock::time_point deadline) {
  std::string out;
  char buf[4096];
  while (steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Waits for `pid` until `deadline`, then kills it. Returns the exit code, 128 + signal, or -1.
int reap(pid_t pid, steady_clock::time_point deadline) {
  int st = 0;
  while (::waitpid(pid, &st, WNOHANG) == 0) {
    if (steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return -1;
    }
    ::usleep(20'000);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

[[noreturn]] void exec_child(const std::vector<std::string>& argv) {
  ::setenv("TERM", "xterm", 1);  // whatever the test runner had: a terminal that takes escapes
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  ::_exit(127);
}

// Runs argv with stdin, stdout and stderr on a pseudo-terminal `cols` wide. Output processing is
// off (no '\n' -> "\r\n"), so what is read is exactly what the program wrote.
Output run_on_pty(const std::vector<std::string>& argv, unsigned short cols,
                  seconds timeout = seconds(60)) {
  termios t{};
  ::cfmakeraw(&t);
  winsize ws{};
  ws.ws_row = 40;
  ws.ws_col = cols;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, &t, &ws);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) exec_child(argv);
  const auto deadline = steady_clock::now() + timeout;
  Output out;
  out.text = drain(master, deadline);
  out.status = reap(pid, deadline);
  ::close(master);
  return out;
}

// Runs argv with stdout and stderr into a pipe.
Output run_on_pipe(const std::vector<std::string>& argv, seconds timeout = seconds(60)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    exec_child(argv);
  }
  ::close(fds[1]);
  const auto deadline = steady_clock::now() + timeout;
  Output out;
  out.text = drain(fds[0], deadline);
  out.status = reap(pid, deadline);
  ::close(fds[0]);
  return out;
}

// The frames the display drew: what lies between each "autowrap off" and "autowrap on".
std::vector<std::string> frames(const std::string& out) {
  std::vector<std::string> f;
  for (size_t p = out.find("\x1b[?7l"); p != std::string::npos; p = out.find("\x1b[?7l", p + 1)) {
    const size_t end = out.find("\x1b[?7h", p);
    if (end == std::string::npos) break;
    f.push_back(out.substr(p + 5, end - p - 5));
  }
  return f;
}

bool has(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

const std::regex kLogLine(R"(\d\d/\d\d-\d\d:\d\d:\d\d (Info|Sent|Warn|Error): [^\r\x1b]*)");

class SendOutput : public ReceiverFixture {
 protected:
  SendOutput() : ReceiverFixture("output") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
    start_receiver_process(small_receiver_argv(port_, out_), rx_log_path());
  }
  void TearDown() override {
    if (receiver_) {
      receiver_->signal(SIGTERM);
      receiver_->wait(seconds(30));
    }
    ReceiverFixture::TearDown();
  }
  std::vector<std::string> send_argv(std::vector<std::string> args) const {
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest", "127.0.0.1:" + std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  // Waits until the receiver has logged `n` delivered files in all.
  bool delivered(int n) {
    return eventually(
        [&] {
          const std::string log = read_file(base_ / "receive.log");
          int c = 0;
          for (size_t p = log.find("File: "); p != std::string::npos;
               p = log.find("File: ", p + 1)) {
            ++c;
          }
          return c >= n;
        },
        seconds(20));
  }

  fs::path src_, out_;
};

TEST_F(SendOutput, OnATerminalTheDisplayIsRedrawnInPlaceAndLogLinesStayWhole) {
  // 40 MB at 20 MB/s: about two seconds, so about twenty frames.
  write_pattern(src_ / "big.bin", 40 << 20, 1);
  const Output r = run_on_pty(send_argv({(src_ / "big.bin").string(), "--rate", "20"}), 100);
  ASSERT_EQ(r.status, 0) << r.text;
  ASSERT_TRUE(delivered(1)) << read_file(base_ / "receive.log");
  EXPECT_TRUE(same_content(src_ / "big.bin", out_ / "big.bin"));

  // Redrawn in place: frames start again at the start of the row, with the figures.
  const auto f = frames(r.text);
  ASSERT_GE(f.size(), 5u) << r.text;
  std::set<std::string> percents;
  const std::regex percent(
      R"(big\.bin +\[[#-]+\] +(\d+\.\d)%  +[\d.]+/40\.0 MB  +[\d.]+ MB/s  ETA \d\d:\d\d:\d\d\r\n)"
      R"(total 0/1 files \[[#-]+\] +\d+\.\d%  +[\d.]+/40\.0 MB  +[\d.]+ MB/s  ETA \d\d:\d\d:\d\d)");
  for (const auto& frame : f) {
    std::smatch m;
    if (std::regex_match(frame, m, percent)) percents.insert(m[1]);
    // 100 columns: no row of a frame reaches the last column.
    std::istringstream rows(frame);
    for (std::string row; std::getline(rows, row);) {
      if (row.ends_with('\r')) row.pop_back();
      EXPECT_LE(row.size(), 99u) << row;
    }
  }
  EXPECT_GE(percents.size(), 3u) << "the percent should move between frames:\n" << r.text;
  EXPECT_GE(std::count(r.text.begin(), r.text.end(), '\r'), 5) << r.text;

  // What stays on the screen: the log lines, whole, and nothing of the display.
  const auto screen = replay_terminal(r.text);
  ASSERT_GE(screen.size(), 3u) << r.text;
  for (const auto& row : screen) {
    EXPECT_TRUE(std::regex_match(row, kLogLine)) << "not a whole log line: " << row;
    // ... and each was written in one piece, never with the display inside it.
    EXPECT_TRUE(has(r.text, row + "\n")) << row;
  }
  EXPECT_TRUE(has(screen.front(), "Info: session ")) << screen.front();
  EXPECT_TRUE(std::any_of(screen.begin(), screen.end(), [](const std::string& l) {
    return has(l, "Sent: big.bin, Size: 41,943,040 (bytes)");
  }));
  EXPECT_TRUE(has(screen.back(), "done: 1 file(s) sent, 0 failed")) << screen.back();
}

TEST_F(SendOutput, OnAPipeTheLinesArePlain) {
  write_pattern(src_ / "big.bin", 40 << 20, 1);
  const Output r = run_on_pipe(send_argv({(src_ / "big.bin").string(), "--rate", "20"}));
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_EQ(r.text.find('\r'), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find('\x1b'), std::string::npos) << r.text;
  std::istringstream in(r.text);
  int lines = 0;
  for (std::string l; std::getline(in, l); ++lines) {
    EXPECT_TRUE(std::regex_match(l, kLogLine)) << l;
  }
  EXPECT_EQ(lines, 3) << r.text;  // the session, Sent:, done
  EXPECT_TRUE(has(r.text, "Sent: big.bin, Size: 41,943,040 (bytes)")) << r.text;
  ASSERT_TRUE(delivered(1));
}

TEST_F(SendOutput, ProgressOnAndOffOverrideTheTerminalTest) {
  write_pattern(src_ / "small.bin", 1 << 20, 2);
  Output r = run_on_pty(send_argv({(src_ / "small.bin").string(), "--progress", "off"}), 100);
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_EQ(r.text.find('\r'), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find('\x1b'), std::string::npos) << r.text;
  r = run_on_pipe(send_argv({(src_ / "small.bin").string(), "--progress", "on"}));
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_FALSE(frames(r.text).empty()) << r.text;
  // --quiet on a terminal: no log lines, and auto draws nothing either.
  r = run_on_pty(send_argv({(src_ / "small.bin").string(), "--quiet"}), 100);
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_EQ(r.text, "");
  ASSERT_TRUE(delivered(3));
}

TEST_F(SendOutput, TheManifestHasALineForEveryFileWithTheKeyTheReceiverLogs) {
  write_pattern(src_ / "dir" / "a.bin", 300000, 3);
  write_pattern(src_ / "dir" / "b.bin", 1000, 4);
  write_pattern(src_ / "dir" / "c.bin", 5000, 5);
  // b.bin is held under a writer's lock: with FILE_LOCK=Y and no wait it is never opened.
  const int held = ::open((src_ / "dir" / "b.bin").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  const fs::path manifest = base_ / "sent.jsonl";
  const int rc = run(send_argv({(src_ / "dir").string(), "--manifest", manifest.string(),
                                "--file-lock", "Y", "--lock-timeout", "0"}),
                     base_ / "send.log");
  ::close(held);
  EXPECT_EQ(rc, 1) << read_file(base_ / "send.log");  // one file could not be read
  ASSERT_TRUE(delivered(2)) << read_file(base_ / "receive.log");

  const std::string m = read_file(manifest);
  std::vector<std::string> lines;
  std::istringstream in(m);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << m;
  const auto first = json_members(lines[0]);
  ASSERT_TRUE(first && first->count("session")) << lines[0];
  const std::string id = first->at("session").text;
  ASSERT_THAT(id, MatchesRegex("[0-9a-f]{16}"));
  EXPECT_TRUE(has(read_file(base_ / "receive.log"), "sender session " + id)) << id;
  const std::string log = read_file(base_ / "receive.log");
  for (const auto& [line, name, size] :
       {std::tuple{lines[0], "a.bin", 300000}, std::tuple{lines[2], "c.bin", 5000}}) {
    EXPECT_THAT(line,
                AllOf(JsonHas("session", id), JsonHas("path", std::string("dir/") + name),
                      JsonHas("size", size), JsonHas("verify", "B2B"), JsonHas("status", "sent")));
    // The key is the one the receiver logs for that file.
    const auto members = json_members(line);
    ASSERT_TRUE(members && members->count("key")) << line;
    const std::string key = members->at("key").text;
    ASSERT_THAT(key, MatchesRegex("0x[0-9A-F]{8}"));
    EXPECT_TRUE(has(log, std::string("File: dir/") + name + ", Trans: ")) << log;
    EXPECT_TRUE(std::regex_search(log, std::regex(std::string("File: dir/") + name +
                                                  R"(, Trans: .*Key: )" + key + ", B2B Passed")))
        << key << "\n"
        << log;
  }
  EXPECT_THAT(
      lines[1],
      AllOf(JsonHas("file_id", 0), JsonHas("path", "dir/b.bin"), JsonHas("size", 0),
            JsonHas("key", nullptr), JsonHas("status", "failed"),
            JsonHas("reason", AllOf(StartsWith("cannot read "), HasSubstr("FILE_LOCK=Y")))));
  EXPECT_TRUE(std::regex_search(
      lines[0],
      std::regex(R"re(^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d",)re")))
      << lines[0];
}

TEST_F(SendOutput, AManifestThatCannotBeOpenedStopsTheSenderBeforeItSends) {
  write_pattern(src_ / "a.bin", 1000, 6);
  const Output r = run_on_pipe(send_argv(
      {(src_ / "a.bin").string(), "--manifest", (base_ / "missing" / "m.jsonl").string()}));
  EXPECT_EQ(r.status, 2) << r.text;
  EXPECT_TRUE(std::regex_match(
      r.text, std::regex(R"(\d\d/\d\d-\d\d:\d\d:\d\d Error: cannot open the manifest '.*/missing/)"
                         R"(m\.jsonl': No such file or directory\n)")))
      << r.text;
  // Nothing went out: the receiver never heard of a session.
  ::usleep(300'000);
  EXPECT_FALSE(has(read_file(base_ / "receive.log"), "sender session"))
      << read_file(base_ / "receive.log");
}

}  // namespace
}  // namespace ddft::testing
