// End to end over loopback: the real dd_file_send and dd_file_receive binaries, byte-for-byte
// comparison of what arrives, and the receive log's DFTS lines.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "common/protocol.hpp"
#include "support/files.hpp"
#include "support/json_check.hpp"
#include "support/json_matchers.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;
using ::testing::HasSubstr;

constexpr size_t kChunk = 8952 - 48;  // data bytes per packet at the default packet size

int count_matches(const std::string& text, const std::regex& re) {
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

class EndToEnd : public ReceiverFixture {
 protected:
  EndToEnd() : ReceiverFixture("e2e") {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
  }

  // Starts the receiver with small buffers; `once` makes it exit when the session ends.
  void start_receiver(std::vector<std::string> extra = {}, bool once = true) {
    if (once) extra.insert(extra.begin(), "--once");
    start_receiver_process(small_receiver_argv(port_, out_, extra), rx_log_path());
  }
  int send(std::vector<std::string> args) {
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest", "127.0.0.1:" + std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer (scripts/sanitize.sh) the receiver does the same work at about half
    // the speed: the default 250 MB/s overflows its ring, so the sender is paced to what it keeps
    // up with. Tests that set their own rate keep it.
    if (std::find(args.begin(), args.end(), "--rate") == args.end()) {
      argv.insert(argv.end(), {"--rate", "100"});
    }
#endif
    return run(argv, base_ / "send.log");
  }
  int finish_receiver() { return receiver_->wait(seconds(60)); }
  fs::path src_, out_;
};

TEST_F(EndToEnd, EdgeSizesArriveByteForByte) {
  write_pattern(src_ / "empty", 0, 1);
  write_pattern(src_ / "one", 1, 2);
  write_pattern(src_ / "exactly3", 3 * kChunk, 3);
  write_pattern(src_ / "three_plus1", 3 * kChunk + 1, 4);
  start_receiver();
  ASSERT_EQ(send({src_.string() + "/"}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  for (const char* name : {"empty", "one", "exactly3", "three_plus1"}) {
    EXPECT_TRUE(same_content(src_ / name, out_ / name)) << name;
  }
  EXPECT_EQ(count_matches(rx_log(), std::regex("B2B Passed")), 4) << rx_log();
  EXPECT_TRUE(failed_records(out_).empty());
}

// Both offloads on (the default: GSO bundles sent, GRO bundles received into the ring) and each
// side without them: the same files, byte for byte, whatever the mix of sizes in a batch.
TEST_F(EndToEnd, EveryOffloadSettingDeliversByteForByte) {
  for (int i = 0; i < 30; ++i) {
    write_pattern(src_ / ("f" + std::to_string(i)), static_cast<size_t>(i) * 7919 * 13 % 400'000,
                  static_cast<uint32_t>(i));
  }
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> settings = {
      {{}, {}},
      {{"--gro", "off"}, {}},
      {{}, {"--gso", "off"}},
      {{"--gro", "off"}, {"--gso", "off"}}};
  for (const auto& [rx, tx] : settings) {
    SCOPED_TRACE(::testing::Message() << "receiver " << (rx.empty() ? "gro auto" : "gro off")
                                      << ", sender " << (tx.empty() ? "gso auto" : "gso off"));
    fs::remove_all(out_);
    fs::create_directories(out_);
    fs::remove(rx_log_path());  // the start waits for this run's "receiving on" line, not the last
    start_receiver(rx);
    std::vector<std::string> args = {src_.string() + "/"};
    args.insert(args.end(), tx.begin(), tx.end());
    ASSERT_EQ(send(args), 0) << tx_log();
    ASSERT_EQ(finish_receiver(), 0) << rx_log();
    for (int i = 0; i < 30; ++i) {
      const std::string name = "f" + std::to_string(i);
      EXPECT_TRUE(same_content(src_ / name, out_ / name)) << name;
    }
    EXPECT_EQ(count_matches(rx_log(), std::regex("B2B Passed")), 30) << rx_log();
    EXPECT_EQ(rx.empty(), rx_log().find("(GRO)") != std::string::npos) << rx_log();
  }
}

TEST_F(EndToEnd, LargeFileHasDftsProgressLines) {
  const uint64_t size = 250ull * 1024 * 1024;
  write_pattern(src_ / "big.bin", size, 5);
  start_receiver();
  ASSERT_EQ(send({(src_ / "big.bin").string()}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "big.bin", out_ / "big.bin"));
  const std::string log = rx_log();
  const std::regex info(
      R"(\d\d/\d\d-\d\d:\d\d:\d\d Info: big\.bin, Size: 262,144,000 \(bytes\) \. \. \. receiving\n)");
  const std::regex rcvd(
      R"(\d\d/\d\d-\d\d:\d\d:\d\d Rcvd: \d{3},\d{3},\d{3} \(\d+\.\d\d%\) Rate: \d+\.\d{3} \(MB/s\) )"
      R"(Dur: \d\d:\d\d:\d\d DR: \d+\.\d\d/\d+ msec FW: \d+\.\d\d/\d+ msec\n)");
  const std::regex file(
      R"(\d\d/\d\d-\d\d:\d\d:\d\d File: big\.bin, Trans: 262,144,000 \(bytes\), )"
      R"(Time: \d\d:\d\d:\d\d\.\d{3}, Rate: \d+\.\d{3} \(MB/s\), Key: 0x[0-9A-F]{8}, B2B Passed\n)");
  EXPECT_EQ(count_matches(log, info), 1) << log;
  EXPECT_EQ(count_matches(log, rcvd), 2) << log;
  EXPECT_EQ(count_matches(log, file), 1) << log;
  // The key the sender printed is the key the receiver verified.
  std::smatch m;
  const std::string tx = tx_log();
  ASSERT_TRUE(std::regex_search(tx, m, std::regex("Key: (0x[0-9A-F]{8})")));
  EXPECT_NE(log.find("Key: " + m[1].str() + ", B2B Passed"), std::string::npos);
}

TEST_F(EndToEnd, NestedFolderOf200SmallFiles) {
  std::mt19937 rng(9);
  for (int i = 0; i < 200; ++i) {
    const fs::path p = src_ / "tree" / ("d" + std::to_string(i % 7)) /
                       ("s" + std::to_string(i % 3)) / ("f" + std::to_string(i) + ".dat");
    write_pattern(p, rng() % 20000, static_cast<uint32_t>(i));
  }
  start_receiver();
  ASSERT_EQ(send({(src_ / "tree").string(), "--verify", "sha256"}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  int compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(src_ / "tree")) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = fs::relative(e.path(), src_);
    EXPECT_TRUE(same_content(e.path(), out_ / rel)) << rel;
    ++compared;
  }
  EXPECT_EQ(compared, 200);
  EXPECT_EQ(count_matches(rx_log(), std::regex("SHA256 Passed")), 200);
}

// The IO thread pools dd_iotest recommends: three readers, three writers, small blocks so that
// each file is many requests completing out of order on both sides.
TEST_F(EndToEnd, ParallelReadersAndWritersDeliverByteForByte) {
  write_pattern(src_ / "p" / "a.bin", 20ull * 1024 * 1024 + 12345, 21);
  write_pattern(src_ / "p" / "b.bin", 3 * kChunk + 7, 22);
  write_pattern(src_ / "p" / "c.bin", 0, 23);
  start_receiver({"--writers", "3", "--write-block-kb", "64", "--queue-depth", "4"});
  EXPECT_NE(rx_log().find("3 threads x "), std::string::npos) << rx_log();
  ASSERT_EQ(send({(src_ / "p").string(), "--readers", "3", "--read-block-kb", "64",
                  "--read-queue-depth", "2"}),
            0)
      << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  for (const char* name : {"a.bin", "b.bin", "c.bin"}) {
    EXPECT_TRUE(same_content(src_ / "p" / name, out_ / "p" / name)) << name;
  }
  EXPECT_EQ(count_matches(rx_log(), std::regex("B2B Passed")), 3) << rx_log();
  EXPECT_TRUE(failed_records(out_).empty());
}

TEST_F(EndToEnd, SameNameKeepsTheOldFile) {
  fs::create_directories(out_ / "dir");
  std::ofstream(out_ / "dir/same.txt") << "old";
  fs::create_directories(src_ / "dir");
  std::ofstream(src_ / "dir/same.txt") << "new";
  start_receiver();
  ASSERT_EQ(send({(src_ / "dir").string()}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_EQ(read_file(out_ / "dir/same.txt"), "new");
  EXPECT_EQ(read_file(out_ / "dir/same.1.txt"), "old");
  EXPECT_NE(rx_log().find("kept as same.1.txt"), std::string::npos) << rx_log();
}

// --state-dir: the sender makes its id once and keeps it; every session carries it to the
// receiver (kSenderInfo), and each file sent is in the history a later run reads.
TEST_F(EndToEnd, TheSenderIdCrossesWithEachSessionAndTheHistoryKeepsEachFile) {
  std::ofstream(src_ / "a.txt") << "a";
  std::ofstream(src_ / "b.txt") << "bb";
  const fs::path state = base_ / "state";
  for (int run = 0; run < 2; ++run) {
    fs::remove(rx_log_path());  // the start waits for this run's own ready line
    start_receiver();
    ASSERT_EQ(send({src_.string() + "/", "--state-dir", state.string()}), 0) << tx_log();
    ASSERT_EQ(finish_receiver(), 0) << rx_log();
  }
  const std::string id = read_file(state / "sender-id").substr(0, 16);
  ASSERT_EQ(id.size(), 16u);
  EXPECT_NE(rx_log().find("comes from sender " + id), std::string::npos) << rx_log();
  EXPECT_NE(tx_log().find("Info: sender " + id + "; its history"), std::string::npos) << tx_log();
  EXPECT_NE(tx_log().find("holds 2 file(s)"), std::string::npos) << "the first run's";
  const std::string history = read_file(state / "history");
  // Each file sent once a line, and each run's "sent up to" mark at its end.
  size_t files = 0, marks = 0;
  std::istringstream in(history);
  for (std::string line; std::getline(in, line);) {
    files += line.starts_with("H ");
    marks += line.starts_with("W ");
  }
  EXPECT_EQ(files, 4u) << history;
  EXPECT_EQ(marks, 2u) << history;
  EXPECT_NE(history.find("H " + id), std::string::npos) << history;
  EXPECT_NE(history.find("\"b.txt\""), std::string::npos) << history;
}

// The receiver's operator features with the real daemon: --on-complete gets each delivered file's
// final path and a failing hook leaves its file delivered, --exclude drops a file without a failure
// record, and --log-format json writes one JSON object per line.
TEST_F(EndToEnd, OnCompleteHooksFiltersAndJsonLog) {
  std::ofstream(src_ / "a.txt") << "a";
  fs::create_directories(src_ / "sub");
  std::ofstream(src_ / "sub" / "b c.txt") << "b";
  std::ofstream(src_ / "bad.txt") << "bad";
  std::ofstream(src_ / "draft.skip") << "never";
  const fs::path hook = base_ / "hook.sh";
  std::ofstream(hook) << "#!/bin/sh\nprintf '%s\\n' \"$1\" >> '" << (base_ / "hooked.txt").string()
                      << "'\ncase \"$1\" in */bad.txt) echo 'scan: infected' >&2; exit 7;; esac\n";
  fs::permissions(hook, fs::perms::owner_all);
  start_receiver({"--on-complete", hook.string(), "--exclude", "*.skip", "--log-format", "json"});
  ASSERT_EQ(send({src_.string() + "/"}), 0) << tx_log();
  // A filtered file and a failing hook are not failed files: --once exits 0.
  ASSERT_EQ(finish_receiver(), 0) << rx_log();

  // --once waits for the session's hooks: each ran once, on the final path.
  std::istringstream hooked(read_file(base_ / "hooked.txt"));
  std::vector<std::string> paths;
  for (std::string line; std::getline(hooked, line);) paths.push_back(line);
  std::sort(paths.begin(), paths.end());
  EXPECT_EQ(paths, (std::vector<std::string>{(out_ / "a.txt").string(), (out_ / "bad.txt").string(),
                                             (out_ / "sub/b c.txt").string()}));
  EXPECT_EQ(read_file(out_ / "bad.txt"), "bad");  // its hook failed; it stays delivered
  EXPECT_FALSE(fs::exists(out_ / "draft.skip"));
  EXPECT_TRUE(failed_records(out_).empty());

  // Every line one JSON object; the messages are the text format's.
  std::istringstream log(rx_log());
  std::map<std::string, std::string> level_of;  // msg -> level
  int lines = 0;
  for (std::string line; std::getline(log, line);) {
    ++lines;
    std::string error;
    const auto obj = JsonChecker::parse_flat_object(line, &error);
    ASSERT_TRUE(obj) << error << ": " << line;
    ASSERT_EQ(obj->size(), 4u) << line;
    EXPECT_EQ(obj->at("program"), "dd_file_receive");
    EXPECT_TRUE(std::regex_match(
        obj->at("time"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d)")))
        << line;
    level_of[obj->at("msg")] = obj->at("level");
  }
  EXPECT_GT(lines, 8);
  auto find = [&](const std::string& prefix) -> std::string {
    for (const auto& [msg, level] : level_of) {
      if (msg.rfind(prefix, 0) == 0) return level + " " + msg;
    }
    return "";
  };
  EXPECT_EQ(find("Info: filtered"),
            "info Info: filtered \"draft.skip\": matches --exclude '*.skip'");
  EXPECT_NE(find("Info: on-complete \"a.txt\": exit 0 ("), "") << rx_log();
  EXPECT_NE(find("Info: on-complete \"sub/b c.txt\": exit 0 ("), "") << rx_log();
  const std::string bad = find("Warn: on-complete \"bad.txt\": exit 7 (");
  EXPECT_EQ(bad.rfind("warning ", 0), 0u) << rx_log();
  EXPECT_NE(bad.find("; output: \"scan: infected\")"), std::string::npos) << bad;
  EXPECT_NE(find("Info: on-complete: 2 ok, 1 failed, 0 timed out, 0 not run"), "") << rx_log();
  EXPECT_NE(find("File: bad.txt, Trans: 3 (bytes)"), "") << rx_log();
  const std::string summary = find("Info: session ");
  EXPECT_NE(summary.find(": 3 file(s) passed, 0 failed, 0 refused, 1 filtered;"), std::string::npos)
      << summary;
}

TEST_F(EndToEnd, SenderKilledMidFileLeavesNoFinalFile) {
  write_pattern(src_ / "victim.bin", 64ull * 1024 * 1024, 6);
  start_receiver({"--file-timeout", "1"}, /*once=*/false);
  Process sender({DDFT_SEND_BIN, (src_ / "victim.bin").string(), "--dest",
                  "127.0.0.1:" + std::to_string(port_), "--rate", "16"},
                 base_ / "send.log");
  ASSERT_TRUE(eventually([&] { return rx_log().find("Info: victim.bin") != std::string::npos; },
                         seconds(10)));
  sender.signal(SIGKILL);
  EXPECT_EQ(sender.wait(seconds(10)), 128 + SIGKILL);
  ASSERT_TRUE(eventually([&] { return !failed_records(out_).empty(); }, seconds(15))) << rx_log();
  receiver_->signal(SIGTERM);
  EXPECT_EQ(finish_receiver(), 0);  // SIGTERM is a clean stop
  EXPECT_FALSE(fs::exists(out_ / "victim.bin"));
  const auto recs = failed_records(out_);
  ASSERT_EQ(recs.size(), 1u);
  const std::string rec = read_file(recs[0]);
  EXPECT_THAT(rec, JsonHas("name", "victim.bin"));
  EXPECT_THAT(rec, JsonHas("reason", HasSubstr("no packet for")));
  EXPECT_NE(rx_log().find("victim.bin FAILED"), std::string::npos);
}

TEST_F(EndToEnd, DroppedDataPacketNamesTheMissingRange) {
  write_pattern(src_ / "holed.bin", 1 << 20, 7);
  write_pattern(src_ / "after.bin", 5000, 8);
  start_receiver();
  ASSERT_EQ(
      send({(src_ / "holed.bin").string(), (src_ / "after.bin").string(), "--test-drop-data", "5"}),
      0)
      << tx_log();
  EXPECT_EQ(finish_receiver(), 1) << rx_log();  // a failed file: --once exits 1
  EXPECT_FALSE(fs::exists(out_ / "holed.bin"));
  EXPECT_TRUE(same_content(src_ / "after.bin", out_ / "after.bin"));  // the daemon carried on
  const auto recs = failed_records(out_);
  ASSERT_EQ(recs.size(), 1u);
  const std::string rec = read_file(recs[0]);
  const std::string range =
      "[[" + std::to_string(5 * kChunk) + ", " + std::to_string(6 * kChunk) + "]]";
  EXPECT_THAT(rec, JsonHas("missing_ranges", JsonText(range)));
  EXPECT_NE(rx_log().find("1 lost"), std::string::npos) << rx_log();
}

TEST_F(EndToEnd, MissingSourceIsReportedAndTheRestIsSent) {
  write_pattern(src_ / "good.bin", 10000, 9);
  start_receiver();
  EXPECT_EQ(send({(src_ / "missing.bin").string(), (src_ / "good.bin").string()}), 1);
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "good.bin", out_ / "good.bin"));
  EXPECT_NE(tx_log().find("cannot send '" + (src_ / "missing.bin").string() +
                          "': No such file or directory"),
            std::string::npos)
      << tx_log();
}

TEST_F(EndToEnd, PortInUseRefusesToStart) {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port_);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const int rc = run({DDFT_RECEIVE_BIN, "--listen", "127.0.0.1:" + std::to_string(port_),
                      "--output", out_.string(), "--buffer-mb", "128"},
                     base_ / "receive.log", seconds(10));
  ::close(s);
  EXPECT_EQ(rc, 1);
  const std::string log = rx_log();
  EXPECT_NE(
      log.find("cannot listen on 127.0.0.1:" + std::to_string(port_) + ": Address already in use"),
      std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;  // one clear line
}

TEST_F(EndToEnd, OutputThatIsNotAFolderRefusesToStart) {
  std::ofstream(base_ / "file") << "x";
  const int rc = run({DDFT_RECEIVE_BIN, "--listen", "127.0.0.1:" + std::to_string(port_),
                      "--output", (base_ / "file").string(), "--buffer-mb", "128"},
                     base_ / "receive.log", seconds(10));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(rx_log().find("cannot be used: Not a directory"), std::string::npos) << rx_log();
}

TEST_F(EndToEnd, DeviceTransportThroughAFifo) {
  // A FIFO stands in for the card driver's device node.
  const fs::path node = base_ / "owl_node";
  ASSERT_EQ(::mkfifo(node.c_str(), 0600), 0);
  write_pattern(src_ / "dev/a.bin", 3 << 20, 11);
  write_pattern(src_ / "dev/sub/b.bin", 12345, 12);
  // No reader yet: the sender refuses with one line.
  EXPECT_EQ(run({DDFT_SEND_BIN, "--transport", "device", "--device", node.string(),
                 (src_ / "dev").string()},
                base_ / "send.log"),
            2);
  EXPECT_NE(tx_log().find("no reader has it open"), std::string::npos) << tx_log();
  receiver_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_RECEIVE_BIN, "--transport", "device", "--device", node.string(),
                               "--output", out_.string(), "--buffer-mb", "128", "--once"},
      base_ / "receive.log");
  ASSERT_TRUE(eventually([&] { return rx_log().find("receiving on device") != std::string::npos; },
                         seconds(10)));
  ASSERT_EQ(run({DDFT_SEND_BIN, "--transport", "device", "--device", node.string(),
                 (src_ / "dev").string()},
                base_ / "send.log"),
            0)
      << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "dev/a.bin", out_ / "dev/a.bin"));
  EXPECT_TRUE(same_content(src_ / "dev/sub/b.bin", out_ / "dev/sub/b.bin"));
}

TEST_F(EndToEnd, ReportOptionVerboseAndNone) {
  write_pattern(src_ / "r.bin", 3 << 20, 13);
  start_receiver({}, /*once=*/false);
  // V: a progress line every --report-mb MB (at 1 and 2 MiB) and the summary line.
  ASSERT_EQ(send({(src_ / "r.bin").string(), "--report", "V", "--report-mb", "1"}), 0) << tx_log();
  std::string log = tx_log();
  EXPECT_EQ(count_matches(log, std::regex(R"(Progress: r\.bin, Sent: [\d,]+ \(\d+\.\d\d%\))")), 2)
      << log;
  EXPECT_EQ(count_matches(log, std::regex("Sent: r\\.bin, Size: 3,145,728")), 1) << log;
  // N: no per-file lines, only the session summary.
  fs::remove(base_ / "send.log");
  ASSERT_EQ(send({(src_ / "r.bin").string(), "--report", "N"}), 0) << tx_log();
  log = tx_log();
  EXPECT_EQ(log.find("r.bin"), std::string::npos) << log;
  EXPECT_NE(log.find("1 file(s) sent, 0 failed"), std::string::npos) << log;
  receiver_->signal(SIGTERM);
  EXPECT_EQ(finish_receiver(), 0);
}

TEST_F(EndToEnd, ReadOnlyOutputRefusesToStart) {
  // As root, permission bits cannot make a folder unwritable; a read-only mount can.
  fs::create_directories(base_ / "ro");
  if (::geteuid() != 0 ||
      run({"/bin/mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", (base_ / "ro").string()},
          base_ / "mount.log", seconds(10)) != 0) {
    GTEST_SKIP() << "cannot mount a read-only tmpfs here";
  }
  const int rc = run({DDFT_RECEIVE_BIN, "--listen", "127.0.0.1:" + std::to_string(port_),
                      "--output", (base_ / "ro").string(), "--buffer-mb", "128"},
                     base_ / "receive.log", seconds(10));
  run({"/bin/umount", (base_ / "ro").string()}, base_ / "mount.log", seconds(10));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(rx_log().find("is not writable: Read-only file system"), std::string::npos) << rx_log();
}

TEST_F(EndToEnd, GarbageOnThePortDoesNotDisturbATransfer) {
  write_pattern(src_ / "clean.bin", 2 << 20, 10);
  start_receiver();
  std::mt19937 rng(1);
  for (int i = 0; i < 500; ++i) {
    std::vector<uint8_t> junk(rng() % 9000 + 1);
    for (auto& c : junk) c = static_cast<uint8_t>(rng());
    if (i % 2 && junk.size() >= 4) std::memcpy(junk.data(), "DDFT", 4);
    send_raw(junk);
  }
  ASSERT_EQ(send({(src_ / "clean.bin").string()}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "clean.bin", out_ / "clean.bin"));
  EXPECT_NE(rx_log().find("500 rejected"), std::string::npos) << rx_log();
}

// --key-file: a key of 32 random bytes, the owner's only.
fs::path make_key(const fs::path& p, uint64_t seed) {
  write_pattern(p, 32, seed);
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
  return p;
}

TEST_F(EndToEnd, SealedTransfersArriveByteForByteEncryptedOrAuthenticatedOnly) {
  const fs::path key = make_key(base_ / "link.key", 71);
  write_pattern(src_ / "a.bin", 3 * 1024 * 1024 + 17, 72);
  write_pattern(src_ / "sub/b.bin", 100'000, 73);
  write_pattern(src_ / "empty", 0, 74);
  start_receiver({"--key-file", key.string()});
  ASSERT_EQ(send({src_.string() + "/", "--key-file", key.string()}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  for (const char* name : {"a.bin", "sub/b.bin", "empty"}) {
    EXPECT_TRUE(same_content(src_ / name, out_ / name)) << name;
  }
  EXPECT_NE(rx_log().find("datagrams authenticated and encrypted (AES-256-GCM)"), std::string::npos)
      << rx_log();
  EXPECT_EQ(rx_log().find("failed authentication"), std::string::npos) << rx_log();

  // Authenticated only, with FEC behind the seal, and the receiver given --workers 2 (the option
  // end to end; whether the helpers did their shares, which depends on how much each drain
  // finds, is for UnsealPoolTest and WriterLoopTest): the next session of the same receiver folder.
  // A fresh log: start_receiver() waits for the new receiver's own "receiving on" line (under ASan
  // the first one's line let the sender start before the new socket was bound).
  fs::remove_all(out_ / "a.bin");
  fs::remove(base_ / "receive.log");
  start_receiver({"--key-file", key.string(), "--workers", "2"});
  ASSERT_EQ(
      send({(src_ / "a.bin").string(), "--key-file", key.string(), "--auth-only", "--fec", "16:2"}),
      0)
      << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "a.bin", out_ / "a.bin"));
  EXPECT_NE(rx_log().find("datagrams authenticated, not encrypted (AES-256-GCM)"),
            std::string::npos)
      << rx_log();
  EXPECT_NE(rx_log().find("; open workers 2"), std::string::npos) << rx_log();
  EXPECT_TRUE(failed_records(out_).empty());
}

// An output folder as an earlier version left it (its state beside the files, a failure record in
// OUTPUT/.failed): the receiver moves it all into OUTPUT/.ddft at its start, says so in one line,
// and goes on from there: the replay state is read in its new place, and the journal grows there.
TEST_F(EndToEnd, TheStateAnEarlierVersionLeftIsMovedIntoTheStateFolder) {
  const fs::path key = make_key(base_ / "link.key", 78);
  write_pattern(src_ / "a.bin", 100'000, 78);
  start_receiver({"--key-file", key.string()});
  ASSERT_EQ(send({(src_ / "a.bin").string(), "--key-file", key.string()}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  // Back to where earlier versions kept it.
  const fs::path state = state_folder(out_);
  fs::rename(state / "outcomes", out_ / ".ddft-outcomes");
  fs::rename(state / "session-state", out_ / ".ddft-session-state");
  fs::rename(state / "record-reserve", out_ / ".ddft-record-reserve");
  fs::remove_all(state);
  write_file(out_ / ".failed/20250101-000000-00000000000000aa-1-old.bin.json", "{}\n");
  const std::string journal = read_file(out_ / ".ddft-outcomes");
  ASSERT_NE(journal.find("\"a.bin\""), std::string::npos) << journal;

  fs::remove(rx_log_path());
  write_pattern(src_ / "b.bin", 50'000, 79);
  start_receiver({"--key-file", key.string()});
  ASSERT_EQ(send({(src_ / "b.bin").string(), "--key-file", key.string()}), 0) << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_EQ(count_matches(rx_log(), std::regex("moved the receiver's state")), 1) << rx_log();
  EXPECT_NE(rx_log().find("Info: moved the receiver's state (journal, session state, 1 failed "
                          "record, record reserve) from " +
                          out_.string() + " to " + state.string() + "\n"),
            std::string::npos)
      << rx_log();
  EXPECT_NE(rx_log().find("Info: replay protection: newest session"), std::string::npos)
      << rx_log();
  std::vector<std::string> top;
  for (const auto& e : fs::directory_iterator(out_)) top.push_back(e.path().filename().string());
  std::sort(top.begin(), top.end());
  EXPECT_EQ(top, (std::vector<std::string>{".ddft", "a.bin", "b.bin"}));
  EXPECT_TRUE(same_content(src_ / "b.bin", out_ / "b.bin"));
  const std::string now = read_file(state / "outcomes");
  EXPECT_NE(now.find("\"a.bin\""), std::string::npos) << "the old journal goes on: " << now;
  EXPECT_NE(now.find("\"b.bin\""), std::string::npos) << now;
  EXPECT_EQ(failed_records(out_).size(), 1u);
}

TEST_F(EndToEnd, ASenderWithoutTheKeyDeliversNothing) {
  const fs::path key = make_key(base_ / "link.key", 75);
  const fs::path other = make_key(base_ / "other.key", 76);
  write_pattern(src_ / "planted.bin", 200'000, 77);
  start_receiver({"--key-file", key.string()}, /*once=*/false);
  // Another key, then no key at all: both refused, counted, never written.
  ASSERT_EQ(send({(src_ / "planted.bin").string(), "--key-file", other.string()}), 0) << tx_log();
  ASSERT_EQ(send({(src_ / "planted.bin").string()}), 0) << tx_log();
  ASSERT_TRUE(eventually(
      [&] { return rx_log().find("failed authentication (bad tag;") != std::string::npos; },
      seconds(10)))
      << rx_log();
  receiver_->signal(SIGTERM);
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_FALSE(fs::exists(out_ / "planted.bin"));
  // The receiver's state folder only, and its journal of outcomes empty.
  for (const auto& e : fs::directory_iterator(out_)) {
    EXPECT_EQ(e.path(), state_folder(out_)) << "nothing written: " << e.path();
  }
  EXPECT_EQ(fs::file_size(state_folder(out_) / "outcomes"), 0u);
  EXPECT_EQ(rx_log().find("receiving\n"), std::string::npos) << rx_log();
}

// Hostile datagrams against the real daemon (no key: the worst case), each with what it gets.
// Afterwards a real transfer still works and nothing exists outside the output folder.
TEST_F(EndToEnd, HostileAnnouncesGetTheirRefusalAndNothingEscapes) {
  fs::create_directories(base_ / "outside");
  fs::create_symlink(base_ / "outside", out_ / "escape");  // planted in the output folder
  start_receiver({"--max-files-in-flight", "8", "--max-file-size", "1GiB"}, /*once=*/false);
  uint64_t seq = 0;
  auto sendto = [&](const std::vector<uint8_t>& d) {
    send_raw(d);
    if (seq % 64 == 0) std::this_thread::sleep_for(milliseconds(2));  // the socket buffer
  };
  auto announce = [&](uint32_t id, const std::string& path, uint64_t size) {
    common::Header h;
    h.session_id = 0xbad;
    h.seq = seq++;
    common::Announce a;
    a.file_id = id;
    a.size = size;
    a.chunk_size = 1000;
    a.path = path;
    std::vector<uint8_t> b(common::announce_datagram_size(path.size()));
    b.resize(common::encode_announce(h, a, b));
    sendto(b);
  };
  auto data = [&](uint32_t id, const std::string& text) {
    common::Header h;
    h.session_id = 0xbad;
    h.seq = seq++;
    std::vector<uint8_t> b(common::data_datagram_size(text.size()));
    std::memcpy(common::data_bytes_of(b.data()), text.data(), text.size());
    b.resize(common::encode_data_in_place(h, {id, 0, 0}, text.size(), b));
    sendto(b);
  };
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "d/";
  const std::pair<std::string, std::string> cases[] = {
      {"../evil", "'.' or '..' in path"},
      {"/etc/evil", "absolute path"},
      {"escape/evil", "'escape' in the output folder is a symlink or not a folder"},
      {".ddft-session-state", "a name the receiver keeps for its own files"},
      {".ddft/outcomes", "a name the receiver keeps for its own files"},
      {deep + "x", "path deeper than --max-path-depth 64"},
      {"a\x01"
       "b",
       "control character in path"},
  };
  uint32_t id = 1;
  for (const auto& [path, why] : cases) {
    announce(id, path, 5);
    data(id, "evil!");
    ++id;
  }
  announce(id++, "huge.bin", uint64_t{1} << 40);
  // A flood of announces: never more than twice the bound of temporary files, and the oldest fail.
  size_t most_parts = 0;
  for (int i = 0; i < 2000; ++i) {
    announce(id++, "flood/" + std::to_string(i), 1000);
    if (i % 100 == 0 && fs::exists(out_ / "flood")) {
      size_t parts = 0;
      for (const auto& e : fs::directory_iterator(out_ / "flood")) {
        parts += e.path().extension() == ".part";
      }
      most_parts = std::max(most_parts, parts);
    }
  }
  // Every line asserted here is logged when its record is written on the pool, in no set order:
  // one ("escape") only once the pool has walked the folder, an eviction's only once the evicted
  // file's temporary file has been made. The log is read, and its lines asserted, only once the
  // last of them is there: the event waited for is each asserted text, whole, not a line that
  // merely names the file.
  std::vector<std::string> lines;
  for (const auto& [path, why] : cases) lines.push_back(why);
  lines.push_back(
      "\"huge.bin\": announced size 1,099,511,627,776 bytes is over --max-file-size "
      "1,073,741,824");
  lines.push_back("more than 8 files in flight (--max-files-in-flight)");
  const auto first_missing = [&] {
    const std::string log = rx_log();
    for (const std::string& line : lines) {
      if (log.find(line) == std::string::npos) return line;
    }
    return std::string();
  };
  ASSERT_TRUE(eventually([&] { return first_missing().empty(); }, seconds(10)))
      << "not logged: " << first_missing() << "\n"
      << rx_log();
  EXPECT_LE(most_parts, 16u);

  // The daemon still works for the real sender.
  write_pattern(src_ / "clean.bin", 300'000, 11);
  ASSERT_EQ(send({(src_ / "clean.bin").string()}), 0) << tx_log();
  ASSERT_TRUE(eventually([&] { return fs::exists(out_ / "clean.bin"); }, seconds(20))) << rx_log();
  receiver_->signal(SIGTERM);
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  EXPECT_TRUE(same_content(src_ / "clean.bin", out_ / "clean.bin"));
  EXPECT_TRUE(fs::is_empty(base_ / "outside"));
  EXPECT_FALSE(fs::exists(base_ / "evil"));
  EXPECT_FALSE(fs::exists("/etc/evil"));
  EXPECT_TRUE(fs::is_symlink(out_ / "escape")) << "the planted link is left as it was";
}

// DFTS pauses longer than the receiver's silence limit (3 heartbeat intervals of 100 ms):
// EOF_DELAY after each file and a forced sleep (-fsdelay) in the middle of one, sealed and with
// FEC. The sender's heartbeats go on through them, so the receiver never warns of a silent link,
// counts no packet lost (a heartbeat never overtakes the data before it), and every file arrives.
TEST_F(EndToEnd, DftsPausesKeepTheLinkAlive) {
  const fs::path key = make_key(base_ / "link.key", 81);
  write_pattern(src_ / "first.bin", 5000, 82);
  write_pattern(src_ / "second.bin", 1536 * 1024, 83);  // a forced sleep after its first MiB
  start_receiver({"--key-file", key.string()});
  ASSERT_EQ(send({(src_ / "first.bin").string(), (src_ / "second.bin").string(), "--key-file",
                  key.string(), "--fec", "16:2", "--heartbeat-ms", "100", "--eof-delay", "700",
                  "--fsinterval", "1", "--fsdelay", "700"}),
            0)
      << tx_log();
  ASSERT_EQ(finish_receiver(), 0) << rx_log();
  for (const char* name : {"first.bin", "second.bin"}) {
    EXPECT_TRUE(same_content(src_ / name, out_ / name)) << name;
  }
  const std::string log = rx_log();
  EXPECT_EQ(log.find("no packet from sender session"), std::string::npos) << log;
  EXPECT_EQ(log.find("lost on the link"), std::string::npos) << log;
  EXPECT_EQ(count_matches(log, std::regex("B2B Passed")), 2) << log;
}

// --sink null needs no --output: the files are received and verified, each Passed or FAILED
// line is logged, and nothing is written anywhere (the replay state of --key-file stays in memory,
// a failed file's Error line is its only record).
TEST_F(EndToEnd, NullSinkWithoutOutputReceivesAndReportsEveryFile) {
  const fs::path key = make_key(base_ / "link.key", 78);
  write_pattern(src_ / "holed.bin", 1 << 20, 79);
  write_pattern(src_ / "a.bin", 3 * 1024 * 1024 + 5, 80);
  write_pattern(src_ / "b.bin", 100'000, 81);
  start_receiver_process(
      {DDFT_RECEIVE_BIN, "--listen", listen(), "--sink", "null", "--once", "--buffer-mb", "64",
       "--write-buffers", "16", "--socket-buffer-mb", "32", "--key-file", key.string()},
      rx_log_path());
  ASSERT_EQ(send({(src_ / "holed.bin").string(), (src_ / "a.bin").string(),
                  (src_ / "b.bin").string(), "--key-file", key.string(), "--test-drop-data", "5"}),
            0)
      << tx_log();
  EXPECT_EQ(finish_receiver(), 1) << rx_log();  // a failed file: --once exits 1
  const std::string log = rx_log();
  EXPECT_NE(log.find("into nothing (--sink null without --output"), std::string::npos) << log;
  EXPECT_EQ(count_matches(log, std::regex("B2B Passed")), 2) << log;
  EXPECT_NE(log.find("Error: holed.bin FAILED: "), std::string::npos) << log;
  EXPECT_NE(log.find("record: none written (--sink null without --output: this line is the "
                     "record)"),
            std::string::npos)
      << log;
  // Nothing but what the test made (the fixture's out/ stays empty): no failed folder, no state
  // file, no journal.
  for (const auto& e : fs::recursive_directory_iterator(base_)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(e.path().parent_path() == src_ || e.path() == src_ || e.path() == out_ ||
                name == "link.key" || name == "receive.log" || name == "send.log")
        << "nothing written: " << e.path();
  }
  EXPECT_TRUE(fs::is_empty(out_));
}

}  // namespace
}  // namespace ddft::testing
