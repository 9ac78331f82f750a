// Every file named, end to end over loopback with the real binaries: each file
// the sender sent is either delivered byte for byte or named by exactly one failure record, and
// dd_reconcile (with the sender's --manifest) finds every one delivered or failed. The receiver's
// ring overflows under a stalled disk, the receiver starts in the middle of a file, it restarts
// in the middle of a session, and every packet of some files is lost on the link: the sender's
// file list names what the receiver never saw.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/log_format.hpp"
#include "support/files.hpp"
#include "support/named_fixture.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

double since(steady_clock::time_point t) {
  return duration<double>(steady_clock::now() - t).count();
}

// The hardest case for naming: 10,000 small files sent unpaced into a writer that stalls long
// enough for the ring to overflow. Packets of thousands of files are dropped, announces, data and
// ends alike; the passed files and the failed records add up to 10,000, each naming its file once.
TEST_F(Named, TenThousandSmallFilesIntoAStalledWriterAreEachNamed) {
  const auto t0 = steady_clock::now();
  std::vector<std::string> paths;
  for (int i = 0; i < 10'000; ++i) {
    // 10 x 10 x 10 nested folders of 10 files each.
    const std::string rel = "tree/d" + std::to_string(i % 10) + "/s" + std::to_string(i / 10 % 10) +
                            "/t" + std::to_string(i / 100 % 10) + "/f" + std::to_string(i) + ".dat";
    write_small(src_ / rel, 16 * 1024, static_cast<uint64_t>(i));
    paths.push_back(rel);
  }
  const double made_s = since(t0);
  // 48 MB: 16 write blocks of 1 MiB and a ring of 32 MiB, which the unpaced sender fills in well
  // under the 3 s the writer stalls for (once 4 MiB are written).
  start_receiver(base_ / "receive.log",
                 {"--buffer-mb", "48", "--write-buffers", "16", "--test-stall-writer-s", "3",
                  "--test-stall-after-mb", "4"});
  const auto t1 = steady_clock::now();
  start_sender({(src_ / "tree").string(), "--rate", "0"});
  ASSERT_EQ(sender_->wait(seconds(60)), 0) << tx_log();
  const double sent_s = since(t1);
  // Failed files: --once exits 1.
  ASSERT_EQ(receiver_->wait(seconds(60)), 1) << read_file(base_ / "receive.log");
  const double received_s = since(t1);
  const std::string log = read_file(base_ / "receive.log");

  // The ring did overflow.
  EXPECT_NE(log.find("Warn: receive buffer full"), std::string::npos) << log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      log, m,
      std::regex(R"(Warn: (\d+) packet\(s\) were dropped because the receive buffer was full)")))
      << log;
  EXPECT_GT(std::stoull(m[1]), 0u);

  const Outcome o = account(paths, {base_ / "receive.log"});
  EXPECT_TRUE(o.problems.empty()) << o.problems.size() << " problem(s):\n" << first_problems(o);
  EXPECT_EQ(o.passed_lines + o.records, 10'000u)
      << o.passed_lines << " Passed lines, " << o.records << " records";
  EXPECT_EQ(o.delivered.size() + o.failed.size(), 10'000u);
  EXPECT_GT(o.failed.size(), 0u);
  const auto t2 = steady_clock::now();
  const Reconciled r = reconcile({base_ / "receive.log"});
  expect_reconciled(r, o, 10'000);
  std::cout << "10,000 files of 16 KB: made in " << made_s << " s, sent in " << sent_s
            << " s, receiver done after " << received_s << " s, checked in " << since(t2) << " s; "
            << o.delivered.size() << " delivered, " << o.failed.size()
            << " failed (ring drops: " << m[1] << ")\n";
}

// Waits until the sender's progress lines (--report V --report-mb 1) show at least `bytes` of
// `name` sent. Returns false after 20 s.
bool sender_past(const fs::path& log, const std::string& name, uint64_t bytes) {
  const std::regex progress("Progress: " + name + R"(, Sent: ([\d,]+))");
  return eventually(
      [&] {
        const std::string text = read_file(log);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), progress);
             it != std::sregex_iterator(); ++it) {
          std::string digits = (*it)[1];
          digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
          if (std::stoull(digits) >= bytes) return true;
        }
        return false;
      },
      seconds(20));
}

// A receiver that starts while a large file is being sent hears of it from the announce the
// sender repeats mid-file: the file fails with a record that says its first bytes went before
// this receiver, and dd_reconcile names it as failed.
TEST_F(Named, AReceiverStartedMidFileNamesTheFileItJoined) {
  write_pattern(src_ / "big.bin", 64ull << 20, 41);
  // 16 MB/s: the file takes 4 s; the receiver starts once 2 MB are gone.
  start_sender({(src_ / "big.bin").string(), "--rate", "16", "--report", "V", "--report-mb", "1"});
  ASSERT_TRUE(sender_past(base_ / "send.log", "big.bin", 2'000'000)) << tx_log();
  start_receiver(base_ / "receive.log", {"--buffer-mb", "64", "--write-buffers", "16"});
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  const std::string log_path = (base_ / "receive.log").string();
  ASSERT_EQ(receiver_->wait(seconds(30)), 1) << read_file(log_path);
  const std::string log = read_file(log_path);
  EXPECT_NE(log.find("Info: big.bin, Size: 67,108,864 (bytes) . . . receiving (joined mid-file: "
                     "its first packets went before this receiver started)"),
            std::string::npos)
      << log;

  const Outcome o = account({"big.bin"}, {log_path});
  EXPECT_TRUE(o.problems.empty()) << first_problems(o);
  ASSERT_EQ(o.failed.size(), 1u) << log;
  const Record& rec = o.failed.begin()->second;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      rec.reason, m, std::regex(R"(^started before this receiver: bytes 0-(\d+) missing \()")))
      << rec.reason;
  const uint64_t missing = std::stoull(m[1]);
  EXPECT_GT(missing, 0u);
  EXPECT_LT(missing, 64ull << 20);
  EXPECT_EQ(rec.bytes_received, (64ull << 20) - missing) << rec.reason;
  EXPECT_NE(log.find("Error: big.bin FAILED: started before this receiver: bytes 0-" +
                     std::to_string(missing) + " missing"),
            std::string::npos)
      << log;

  const Reconciled r = reconcile({log_path});
  expect_reconciled(r, o, 1);
  const std::string line = r.line_of("big.bin");
  EXPECT_EQ(line.rfind("failed ", 0), 0u) << r.report;
  EXPECT_NE(line.find("started before this receiver: bytes 0-"), std::string::npos) << r.report;
}

// The same with --repeat 2, the receiver joining during the first copy: the second copy brings
// the bytes it missed, and the file is delivered.
TEST_F(Named, AReceiverStartedMidFileIsCompletedByTheNextCopy) {
  write_pattern(src_ / "big.bin", 64ull << 20, 42);
  start_sender({(src_ / "big.bin").string(), "--rate", "16", "--repeat", "2", "--report", "V",
                "--report-mb", "1"});
  ASSERT_TRUE(sender_past(base_ / "send.log", "big.bin", 2'000'000)) << tx_log();
  start_receiver(base_ / "receive.log", {"--buffer-mb", "64", "--write-buffers", "16"});
  ASSERT_EQ(sender_->wait(seconds(40)), 0) << tx_log();
  const fs::path log_path = base_ / "receive.log";
  ASSERT_EQ(receiver_->wait(seconds(30)), 0) << read_file(log_path);
  const std::string log = read_file(log_path);
  // Joined mid-file, yet complete after the second copy: it joined during the first (had it
  // joined during the second, nothing would bring the bytes before it).
  EXPECT_NE(log.find("Info: big.bin, Size: 67,108,864 (bytes) . . . receiving (joined mid-file"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Info: big.bin: complete after copy 2 of 2 (--repeat)"), std::string::npos)
      << log;
  const Outcome o = account({"big.bin"}, {log_path});
  EXPECT_TRUE(o.problems.empty()) << first_problems(o);
  EXPECT_EQ(o.delivered.size(), 1u);
  EXPECT_EQ(o.records, 0u);
  const Reconciled r = reconcile({log_path});
  expect_reconciled(r, o, 1);
}

// A receiver stopped (SIGTERM: a clean stop; SIGKILL: a crash) and started again while a session
// of many files goes on. The files it finished before are not named again when the sender's
// file list names them; the files the restart cut (the one in flight, those sent while no
// receiver listened, the one the new receiver joined) are each named once.
class NamedRestart : public Named, public ::testing::WithParamInterface<int> {};

TEST_P(NamedRestart, FilesAcrossARestartAreEachNamedOnce) {
  const int sig = GetParam();
  // Large files (repeated announces mid-file) and small ones (none: a receiver that starts
  // during one sees data of a file it never heard of) in turn.
  std::vector<std::string> paths;
  for (int i = 0; i < 48; ++i) {
    const std::string rel =
        "multi/" + std::string(i % 2 ? "small" : "large") + "/f" + std::to_string(100 + i) + ".bin";
    write_pattern(src_ / rel, i % 2 ? 150'000 : 3 << 20, static_cast<uint64_t>(i));
    paths.push_back(rel);
  }
  const fs::path log1 = base_ / "receive1.log", log2 = base_ / "receive2.log";
  start_receiver(log1, {"--buffer-mb", "64", "--write-buffers", "16"}, /*once=*/false);
  // 16 MB/s: about 4.7 s for the whole session, the restart after about 1 s.
  start_sender({(src_ / "multi").string(), "--rate", "16"});
  ASSERT_TRUE(eventually([&] { return passed_paths(read_file(log1)).size() >= 8; }, seconds(20)))
      << read_file(log1);
  receiver_->signal(sig);
  EXPECT_EQ(receiver_->wait(seconds(20)), sig == SIGTERM ? 0 : 128 + SIGKILL) << read_file(log1);
  // Down for half a second, as with a service manager's restart delay: a few files go by
  // with no receiver at all.
  std::this_thread::sleep_for(milliseconds(500));
  start_receiver(log2, {"--buffer-mb", "64", "--write-buffers", "16"});
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  ASSERT_EQ(receiver_->wait(seconds(30)), 1) << read_file(log2);

  const std::vector<std::string> before = passed_paths(read_file(log1));
  const std::string second = read_file(log2);
  // The restarted receiver's first line is its start line, though the sender was sending as it
  // started: a session line before it belongs, for dd_reconcile, to an earlier run.
  EXPECT_LT(second.find("Info: receiving on"), second.find("Info: sender session")) << second;
  // Nothing the first run delivered is named again by the second. A kill can land between a
  // file's Passed line and its journal line: the next start then syncs the file and logs it
  // Passed again, saying so (a Passed line at least once, never none).
  for (const std::string& p : before) {
    EXPECT_EQ(second.find(" " + p + " FAILED"), std::string::npos) << p << "\n" << second;
    if (second.find("File: " + p + ",") == std::string::npos) continue;
    EXPECT_EQ(sig, SIGKILL) << p << " logged Passed again after a clean stop\n" << second;
    EXPECT_NE(second.find("Info: " + p + ": delivered by an earlier run of the receiver"),
              std::string::npos)
        << p << "\n"
        << second;
  }
  const Outcome o = account(paths, {log1, log2});
  EXPECT_TRUE(o.problems.empty()) << first_problems(o) << read_file(log1) << second;
  EXPECT_GE(o.delivered.size(), before.size());
  EXPECT_GE(o.failed.size(), 1u) << "the restart cut no file?\n" << read_file(log1) << second;
  // Each failure is one the restart explains.
  const std::regex why(
      "^(receiver stopped before the file was complete|the receiver stopped \\(crash, kill or "
      "power cut\\) while the file was being received|never announced: all its packets were "
      "lost|never announced to this receiver: sent before its first packet of the session|"
      "started before this receiver: bytes 0-)");
  for (const auto& [p, rec] : o.failed) {
    EXPECT_TRUE(std::regex_search(rec.reason, why)) << p << ": " << rec.reason;
  }
  const Reconciled r = reconcile({log1, log2});
  expect_reconciled(r, o, paths.size());
  std::cout << (sig == SIGTERM ? "SIGTERM" : "SIGKILL") << ": " << before.size()
            << " delivered before the restart, " << o.delivered.size() - before.size() << " after, "
            << o.failed.size() << " named as failed\n";
}

INSTANTIATE_TEST_SUITE_P(Signals, NamedRestart, ::testing::Values(SIGTERM, SIGKILL),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return std::string(p.param == SIGTERM ? "Sigterm" : "Sigkill");
                         });

// Heavy burst loss on the link (dd_linksim) wipes out every packet of some small files: their
// announce, data and end. The sender's file list names them, and each gets a "never announced"
// record. The loss is repeatable (--seed; the session is too short for a timed heartbeat or
// list, so the sender's datagrams are the same each run): with this seed, bursts take whole
// files while a copy of each file-list datagram gets through. Should a change to what the sender
// sends make this seed lose every copy of a list datagram, the files it names show up below as
// "logged Passed 0 time(s), named by 0 record(s)", and dd_reconcile as "never seen": choose
// another seed then (the loss of every copy of a list is the limit of what can be named).
TEST_F(Named, FilesWhoseEveryPacketWasLostAreNamedByTheFileList) {
  std::vector<std::string> paths;
  for (int i = 0; i < 400; ++i) {
    // One data packet each: a file is its 3 announces, 1 data packet and 3 ends, back to back.
    const std::string rel =
        "lossy/g" + std::to_string(i % 8) + "/f" + std::to_string(1000 + i) + ".dat";
    write_pattern(src_ / rel, 1000 + static_cast<uint64_t>(i), static_cast<uint64_t>(i));
    paths.push_back(rel);
  }
  uint16_t link_port = free_udp_port();
  while (link_port == port_) link_port = free_udp_port();
  start_receiver(base_ / "receive.log", {"--buffer-mb", "64", "--write-buffers", "16"});
  link_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_LINKSIM_BIN, "--listen",
                               "127.0.0.1:" + std::to_string(link_port), "--forward",
                               "127.0.0.1:" + std::to_string(port_), "--quiet", "--seed", "2",
                               "--burst-loss", "20", "--burst-len", "20", "--burst-max", "40"},
      base_ / "linksim.log");
  // dd_linksim has no start line with --quiet: its socket is bound well within this.
  std::this_thread::sleep_for(milliseconds(200));
  start_sender({(src_ / "lossy").string(), "--rate", "20", "--heartbeat-ms", "10000"}, link_port);
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  const fs::path log_path = base_ / "receive.log";
  ASSERT_EQ(receiver_->wait(seconds(30)), 1) << read_file(log_path);
  link_->signal(SIGTERM);
  link_->wait(seconds(10));
  const std::string link = read_file(base_ / "linksim.log");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(link, m, std::regex(R"(dropped (\d+) .* in (\d+) burst)"))) << link;
  EXPECT_GT(std::stoul(m[1]), 0u) << link;

  const Outcome o = account(paths, {log_path});
  EXPECT_TRUE(o.problems.empty()) << first_problems(o) << link;
  size_t never_announced = 0;
  const std::string log = read_file(log_path);
  for (const auto& [p, rec] : o.failed) {
    if (rec.reason != "never announced: all its packets were lost") continue;
    ++never_announced;
    EXPECT_EQ(rec.bytes_received, 0u) << p;
    // Its log line says so, in the form dd_reconcile reads.
    EXPECT_NE(log.find("Error: " + p +
                       " FAILED: never announced: all its packets were lost; "
                       "received 0 of " +
                       common::with_commas(fs::file_size(src_ / p)) + " bytes"),
              std::string::npos)
        << p;
  }
  EXPECT_GT(never_announced, 0u) << "no file lost all its packets: " << link;
  const Reconciled r = reconcile({log_path});
  expect_reconciled(r, o, paths.size());
  std::cout << "burst loss: " << link << o.delivered.size() << " delivered, " << o.failed.size()
            << " failed, of which " << never_announced << " never announced\n";
}

}  // namespace
}  // namespace ddft::testing
