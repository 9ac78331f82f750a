// The hot folder end to end over loopback: the real dd_file_send --watch and dd_file_receive,
// restarts for real (SIGKILL through the crash hook, SIGTERM), and the receive log as the judge of
// "each file delivered exactly once, none missing". Waits are bounded; nothing asserts a time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "sender/source/shard.hpp"
#include "support/files.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

std::string escape_regex(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

int count_matches(const std::string& text, const std::string& re) {
  const std::regex r(re);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), r), std::sregex_iterator()));
}

// Regular files left in `dir`: the hot folder's journal and its kin (.ddft-*), and a receiver's
// state folder (.ddft) not counted.
std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    if (it->path().filename().string().starts_with(".ddft")) {
      it.disable_recursion_pending();
    } else if (it->is_regular_file()) {
      out.push_back(fs::relative(it->path(), dir).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class HotFolderTest : public ReceiverFixture {
 protected:
  HotFolderTest() : ReceiverFixture("hot_e2e") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    dir_ = make_dir("outbox");
    out_ = make_dir("inbox");
    expect_ = make_dir("expect");
  }
  void TearDown() override {
    if (sender_) sender_->signal(SIGKILL);
    sender_.reset();
    if (receiver_) receiver_->signal(SIGTERM);
    ReceiverFixture::TearDown();
  }
  void start_receiver() { start_receiver_process(small_receiver_argv(port_, out_), rx_log_path()); }
  std::vector<std::string> sender_argv(std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        DDFT_SEND_BIN, "--dest",         "127.0.0.1:" + std::to_string(port_),
        "--watch",     dir_.string(),    "--settle",
        "0.3",         "--heartbeat-ms", "200"};
#if defined(__SANITIZE_ADDRESS__)
    if (std::find(extra.begin(), extra.end(), "--rate") == extra.end()) {
      argv.insert(argv.end(), {"--rate", "100"});
    }
#endif
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  void start_sender(std::vector<std::string> extra = {}) {
    sender_ = std::make_unique<Process>(sender_argv(std::move(extra)), base_ / "send.log");
  }
  // SIGTERM: the hot folder's clean end, status 0.
  int stop_sender() {
    sender_->signal(SIGTERM);
    const int rc = sender_->wait(seconds(30));
    sender_.reset();
    return rc;
  }
  // A file in the hot folder, and the same bytes under expect/ to compare with what arrives.
  void drop(const std::string& rel, uint64_t size, uint64_t seed) {
    write_pattern(expect_ / rel, size, seed);
    write_pattern(dir_ / rel, size, seed);
  }
  int delivered(const std::string& rel) {
    return count_matches(rx_log(), "File: " + escape_regex(rel) + ", Trans: ");
  }
  bool all_delivered(const std::vector<std::string>& rels) {
    for (const auto& r : rels) {
      if (delivered(r) < 1) return false;
    }
    return true;
  }
  // Waits for each of `rels` to be logged Passed (the sender moves or deletes a file once it is
  // sent, which may be before the receiver has it whole), then checks each once, as sent.
  void expect_delivered_once(const std::vector<std::string>& rels) {
    EXPECT_TRUE(eventually([&] { return all_delivered(rels); }, seconds(30)));
    const std::string log = rx_log();
    for (const auto& r : rels) {
      EXPECT_EQ(delivered(r), 1) << r << "\n" << log;
      EXPECT_TRUE(same_content(expect_ / r, out_ / r)) << r;
    }
  }
  fs::path dir_, out_, expect_;
  std::unique_ptr<Process> sender_;
};

TEST_F(HotFolderTest, SendsWhatIsThereAndWhatComesInNewSubfoldersThenTidiesUp) {
  drop("a.bin", 1 << 20, 1);
  drop("sub/b.bin", 12345, 2);
  drop("empty", 0, 3);
  start_receiver();
  start_sender();
  ASSERT_TRUE(eventually(
      [&] {
        return all_delivered({"a.bin", "sub/b.bin", "empty"});
      },
      seconds(30)))
      << tx_log() << rx_log();
  // A new tree, made while the sender runs.
  drop("new/deep/c.bin", 300'000, 4);
  ASSERT_TRUE(eventually([&] { return all_delivered({"new/deep/c.bin"}); }, seconds(30)))
      << tx_log() << rx_log();
  ASSERT_TRUE(eventually([&] { return files_in(dir_).empty(); }, seconds(10))) << tx_log();
  // Emptied subfolders go after the settle time; the watched folder stays.
  ASSERT_TRUE(eventually([&] { return !fs::exists(dir_ / "sub") && !fs::exists(dir_ / "new"); },
                         seconds(10)))
      << tx_log();
  EXPECT_TRUE(fs::is_directory(dir_));
  EXPECT_EQ(stop_sender(), 0) << tx_log();
  expect_delivered_once({"a.bin", "sub/b.bin", "empty", "new/deep/c.bin"});
  EXPECT_NE(tx_log().find("4 file(s) sent, 0 failed"), std::string::npos) << tx_log();
}

TEST_F(HotFolderTest, ASlowWriterKeepingTheFileOpenIsSentOnlyWhenCompleteAndOnce) {
  start_receiver();
  start_sender();
  ASSERT_TRUE(
      eventually([&] { return tx_log().find("watching") != std::string::npos; }, seconds(10)))
      << tx_log();
  const fs::path p = dir_ / "slow.bin";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  std::string all;
  for (int part = 0; part < 4; ++part) {
    std::string chunk(200'000, static_cast<char>('a' + part));
    ASSERT_EQ(::write(fd, chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
    all += chunk;
    // A pause over three times the settle time, the file still open: nothing may go out.
    std::this_thread::sleep_for(milliseconds(1000));
    EXPECT_EQ(rx_log().find("slow.bin"), std::string::npos) << "after part " << part << "\n"
                                                            << rx_log();
  }
  ::close(fd);
  std::ofstream(expect_ / "slow.bin", std::ios::binary) << all;
  ASSERT_TRUE(eventually([&] { return all_delivered({"slow.bin"}); }, seconds(30))) << rx_log();
  ASSERT_TRUE(eventually([&] { return !fs::exists(p); }, seconds(10)));
  EXPECT_EQ(stop_sender(), 0);
  expect_delivered_once({"slow.bin"});
  EXPECT_EQ(rx_log().find("FAILED"), std::string::npos) << rx_log();
}

// Two host pairs on one hot folder (--shard 0/2 and 1/2), each sender with its own receiver:
// every file arrives once, at the receiver of its shard, and one dd_reconcile over both manifests
// and both receivers finds every file delivered.
TEST_F(HotFolderTest, TwoHostPairsShareOneFolderAndSendEveryFileOnce) {
  std::vector<std::string> names;
  for (int i = 1; i <= 12; ++i) {
    names.push_back((i % 4 == 0 ? "sub/s" : "f") + std::to_string(i) + ".bin");
    drop(names.back(), 50'000 + 1000 * i, 40 + i);
  }
  start_receiver();  // host pair 0's
  const uint16_t port1 = free_udp_port();
  const fs::path out1 = make_dir("inbox1");
  const fs::path rx1_log = base_ / "receive1.log";
  Process rx1(small_receiver_argv(port1, out1), rx1_log);
  ASSERT_TRUE(log_shows(rx1_log, kReceivingLine, seconds(10))) << read_file(rx1_log);
  start_sender({"--shard", "0/2", "--manifest", (base_ / "send0.jsonl").string()});
  std::vector<std::string> argv1 =
      sender_argv({"--shard", "1/2", "--manifest", (base_ / "send1.jsonl").string()});
  argv1[2] = loopback(port1);  // after "--dest": host pair 1's own link
  const fs::path tx1_log = base_ / "send1.log";
  auto tx1 = std::make_unique<Process>(argv1, tx1_log);

  ASSERT_TRUE(eventually([&] { return files_in(dir_).empty(); }, seconds(30)))
      << tx_log() << read_file(tx1_log);
  // Sent is not yet logged at the receiver: the reconciliation below needs both logs complete.
  ASSERT_TRUE(eventually(
      [&] {
        const std::string logs = rx_log() + read_file(rx1_log);
        return count_matches(logs, "File: .*, Trans: ") == static_cast<int>(names.size());
      },
      seconds(30)))
      << rx_log() << read_file(rx1_log);
  tx1->signal(SIGTERM);
  EXPECT_EQ(tx1->wait(seconds(30)), 0) << read_file(tx1_log);
  EXPECT_EQ(stop_sender(), 0) << tx_log();
  // Each file at its shard's receiver only, whole.
  const std::vector<fs::path> outs = {out_, out1};
  std::vector<int> per_shard(2, 0);
  for (const std::string& n : names) {
    const uint32_t k = sender::shard_of(n, 2);
    ++per_shard[k];
    EXPECT_TRUE(same_content(expect_ / n, outs[k] / n)) << n << " at shard " << k;
    EXPECT_FALSE(fs::exists(outs[1 - k] / n)) << n << " also at the other shard's receiver";
  }
  EXPECT_GT(per_shard[0], 0);
  EXPECT_GT(per_shard[1], 0);
  EXPECT_EQ(files_in(out_).size() + files_in(out1).size(), names.size());
  // The session's first line names the shard.
  EXPECT_TRUE(std::regex_search(tx_log(), std::regex("Info: session [0-9a-f]{16}: the hot folder "
                                                     ".* verify B2B, --shard 0/2\n")))
      << tx_log();
  EXPECT_NE(read_file(tx1_log).find(", --shard 1/2\n"), std::string::npos) << read_file(tx1_log);
  // One reconciliation of both host pairs.
  const fs::path report = base_ / "reconcile.txt";
  EXPECT_EQ(run({DDFT_RECONCILE, "--manifest", (base_ / "send0.jsonl").string(), "--manifest",
                 (base_ / "send1.jsonl").string(), "--receiver", rx_log_path().string(),
                 "--receiver", rx1_log.string()},
                report, seconds(60)),
            0)
      << read_file(report);
  EXPECT_TRUE(std::regex_search(read_file(report), std::regex("\n  delivered +12\n")))
      << read_file(report);
}

TEST_F(HotFolderTest, ACrashAfterTheSentRecordResendsNothingAndMissesNothing) {
  std::vector<std::string> names;
  for (int i = 1; i <= 6; ++i) {
    names.push_back("f" + std::to_string(i) + ".bin");
    drop(names.back(), 200'000, 10 + i);
  }
  start_receiver();
  // Dies by SIGKILL right after recording the second file as sent, before deleting it.
  start_sender({"--test-crash-after-sent", "2"});
  EXPECT_EQ(sender_->wait(seconds(30)), 128 + SIGKILL) << tx_log();
  sender_.reset();
  EXPECT_NE(tx_log().find("test hook: the sender dies after recording 'f2.bin' as sent"),
            std::string::npos)
      << tx_log();
  EXPECT_TRUE(fs::exists(dir_ / "f2.bin")) << "recorded, not yet deleted";
  EXPECT_FALSE(fs::exists(dir_ / "f1.bin"));
  ASSERT_TRUE(eventually(
      [&] {
        return all_delivered({"f1.bin", "f2.bin"});
      },
      seconds(10)))
      << rx_log();

  fs::remove(base_ / "send.log");
  start_sender();
  ASSERT_TRUE(eventually([&] { return files_in(dir_).empty(); }, seconds(30))) << tx_log();
  ASSERT_TRUE(eventually([&] { return all_delivered(names); }, seconds(30))) << rx_log();
  EXPECT_EQ(stop_sender(), 0);
  const std::string tx = tx_log();
  EXPECT_NE(tx.find("'f2.bin' was sent before the restart: deleted without sending it again"),
            std::string::npos)
      << tx;
  EXPECT_EQ(tx.find("Sent: f2.bin"), std::string::npos) << tx;
  expect_delivered_once(names);
}

TEST_F(HotFolderTest, ASigtermMidFileAndARestartResendNothingAndMissNothing) {
  drop("1.bin", 100'000, 21);
  drop("2-big.bin", 24 << 20, 22);
  drop("3.bin", 100'000, 23);
  start_receiver();
  start_sender({"--rate", "4"});  // the big file takes seconds: stopped in the middle of it
  ASSERT_TRUE(eventually([&] { return rx_log().find("Info: 2-big.bin") != std::string::npos; },
                         seconds(30)))
      << rx_log();
  EXPECT_EQ(stop_sender(), 0) << tx_log();
  EXPECT_NE(tx_log().find("'2-big.bin' stays in the folder; it is sent after a restart"),
            std::string::npos)
      << tx_log();
  EXPECT_TRUE(fs::exists(dir_ / "2-big.bin"));
  EXPECT_TRUE(fs::exists(dir_ / "3.bin"));
  ASSERT_TRUE(eventually([&] { return rx_log().find("2-big.bin FAILED") != std::string::npos; },
                         seconds(15)))
      << rx_log();

  start_sender();
  ASSERT_TRUE(eventually([&] { return files_in(dir_).empty(); }, seconds(60))) << tx_log();
  ASSERT_TRUE(eventually(
      [&] {
        return all_delivered({"1.bin", "2-big.bin", "3.bin"});
      },
      seconds(30)))
      << rx_log();
  EXPECT_EQ(stop_sender(), 0);
  expect_delivered_once({"1.bin", "2-big.bin", "3.bin"});
}

TEST_F(HotFolderTest, SentDirKeepsTheTreeAndNumbersACollision) {
  const fs::path sent = base_ / "sent";
  write_pattern(sent / "sub/a.txt", 10, 31);  // an earlier a.txt, already there
  drop("sub/a.txt", 5000, 32);
  start_receiver();
  start_sender({"--sent-dir", sent.string()});
  ASSERT_TRUE(eventually([&] { return fs::exists(sent / "sub/a.1.txt"); }, seconds(30)))
      << tx_log();
  EXPECT_EQ(stop_sender(), 0);
  EXPECT_TRUE(same_content(expect_ / "sub/a.txt", sent / "sub/a.1.txt"));
  EXPECT_EQ(fs::file_size(sent / "sub/a.txt"), 10u) << "the earlier one is kept";
  EXPECT_FALSE(fs::exists(dir_ / "sub/a.txt"));
  expect_delivered_once({"sub/a.txt"});
  EXPECT_NE(tx_log().find("moved to '" + (fs::canonical(sent) / "sub/a.1.txt").string()),
            std::string::npos)
      << tx_log();
}

TEST_F(HotFolderTest, FiltersLeaveFilesInPlaceInTheHotFolderAndOutOfAOneShotSend) {
  drop("x.txt", 1000, 41);
  drop("y.dat", 1000, 42);
  start_receiver();
  start_sender({"--include", "*.txt"});
  ASSERT_TRUE(eventually([&] { return all_delivered({"x.txt"}); }, seconds(30))) << rx_log();
  std::this_thread::sleep_for(milliseconds(1000));  // several settle times
  EXPECT_EQ(stop_sender(), 0);
  EXPECT_TRUE(fs::exists(dir_ / "y.dat")) << "not sent, not deleted";
  EXPECT_EQ(rx_log().find("y.dat"), std::string::npos) << rx_log();
  EXPECT_EQ(count_matches(tx_log(), "leaving 'y\\.dat' in place, not sent: matches no --include"),
            1)
      << tx_log();

  // One-shot: the same globs on a folder's relative paths.
  const fs::path src = base_ / "src";
  write_pattern(src / "a.txt", 100, 43);
  write_pattern(src / "b.tmp", 100, 44);
  write_pattern(src / "logs/c.txt", 100, 45);
  fs::remove(base_ / "send.log");
  ASSERT_EQ(run({DDFT_SEND_BIN, "--dest", "127.0.0.1:" + std::to_string(port_), src.string() + "/",
                 "--exclude", "*.tmp", "--exclude", "logs/*"},
                base_ / "send.log"),
            0)
      << tx_log();
  EXPECT_NE(tx_log().find("Info: --include/--exclude left out 2 file(s)"), std::string::npos)
      << tx_log();
  ASSERT_TRUE(eventually([&] { return all_delivered({"a.txt"}); }, seconds(30))) << rx_log();
  EXPECT_EQ(rx_log().find("b.tmp"), std::string::npos);
  EXPECT_EQ(rx_log().find("logs/c.txt"), std::string::npos);
}

TEST_F(HotFolderTest, BadInputsAreOneLineAndLoseNothing) {
  write_pattern(dir_ / "keep.bin", 1000, 51);
  std::ofstream(base_ / "plain") << "p";
  fs::create_directories(dir_ / "sent");
  struct Case {
    std::vector<std::string> args;
    std::string expect;
    bool one_line;  // the program's own check (CLI11 adds a hint line to its own)
  };
  const std::string dest = "127.0.0.1:" + std::to_string(port_);
  const std::vector<Case> cases = {
      {{"--watch", (base_ / "missing").string()}, "No such file or directory", true},
      {{"--watch", (base_ / "plain").string()}, "not a folder", true},
      {{"--watch", dir_.string(), "--sent-dir", (dir_ / "sent").string()},
       "is inside the watched folder",
       true},
      {{"--watch", dir_.string(), "--sent-dir", (base_ / "nosuch").string()},
       "--sent-dir '" + (base_ / "nosuch").string() + "': No such file or directory",
       true},
      {{"--watch", dir_.string(), (base_ / "plain").string()},
       "give no files or folders with it",
       false},
      {{(base_ / "plain").string(), "--sent-dir", (base_ / "x").string()},
       "--sent-dir requires --watch",
       false},
      {{"--watch", dir_.string(), "--settle", "-1"}, "--settle", false},
  };
  for (const auto& c : cases) {
    fs::remove(base_ / "send.log");
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest", dest};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const int rc = run(argv, base_ / "send.log", seconds(20));
    EXPECT_NE(rc, 0) << c.expect;
    const std::string log = tx_log();
    EXPECT_NE(log.find(c.expect), std::string::npos) << log;
    if (c.one_line) {
      EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    }
  }
  EXPECT_EQ(files_in(dir_), (std::vector<std::string>{"keep.bin"}));
  EXPECT_FALSE(fs::exists(dir_ / ".ddft-watch-journal"));
}

}  // namespace
}  // namespace ddft::testing
