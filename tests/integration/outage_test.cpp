// Nothing lost to a receiver outage, end to end over loopback with the real binaries: a receiver
// killed and started again under a hot folder, and one down for a whole batch. The sender's
// history (--state-dir) goes on the wire again on a schedule (--history-repeat, seconds here):
// every file the receiver did not get while it was down is named once, with when it was sent;
// every other one is delivered byte for byte; dd_reconcile agrees.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/named_fixture.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;
using ::testing::StartsWith;

// The reason of a record the sender's history made.
const std::regex kMissedReason(
    "^sent at \\d{4}-\\d\\d-\\d\\dT[0-9:.]+[-+]\\d\\d:\\d\\d in session [0-9a-f]{16}, file \\d+, "
    "while this receiver was not receiving \\(named by the sender's history\\)$");

class Outage : public Named {
 protected:
  Outage() : Named("outage") {}
  fs::path state() const { return base_ / "state"; }
  // Files passed and named so far, by the receive logs and the failed folder.
  size_t settled(const std::vector<fs::path>& logs) const {
    size_t n = failed_records(out_).size();
    for (const fs::path& l : logs) n += passed_paths(read_file(l)).size();
    return n;
  }
  // 200 files dropped into a hot folder over 20 s (`extra`: more of the sender's options), the
  // receiver (its logs `log1`, then `log2`) killed at 5 s and started again at 13 s.
  void hot_folder_outage(const std::vector<std::string>& extra, const fs::path& log1,
                         const fs::path& log2, std::vector<std::string>* paths,
                         steady_clock::time_point* restarted) {
    const fs::path watch = make_dir("watch");
    start_receiver(log1, {}, /*once=*/false);
    std::vector<std::string> args = {
        "--watch",          watch.string(), "--state-dir", state().string(),
        "--history-repeat", "2s,10s",       "--rate",      "20"};
    args.insert(args.end(), extra.begin(), extra.end());
    start_sender(args);
    const auto t0 = steady_clock::now();
    for (int i = 0; i < 200; ++i) {
      std::this_thread::sleep_until(t0 + milliseconds(100 * i));
      if (i == 50) {
        receiver_->signal(SIGKILL);
        ASSERT_EQ(receiver_->wait(seconds(20)), 128 + SIGKILL);
      }
      if (i == 130) {
        start_receiver(log2, {}, /*once=*/false);
        *restarted = steady_clock::now();
      }
      // Written whole beside the folder, then linked in: the hot folder takes it as it appears,
      // and deletes (or moves) its link once sent; the source stays to compare with.
      const std::string rel = "hot/f" + std::to_string(1000 + i) + ".bin";
      write_small(src_ / rel, 16 * 1024 + static_cast<size_t>(i), static_cast<uint64_t>(i));
      fs::create_directories((watch / rel).parent_path());
      fs::create_hard_link(src_ / rel, watch / rel);
      paths->push_back(rel);
    }
  }
  // dd_resend_request over out_ into `request` (its summary line into request.err): its status.
  int write_request(const fs::path& request) {
    return run({"/bin/sh", "-c", std::string(DDFT_RESEND_REQUEST) + " \"$0\" > \"$1\"",
                out_.string(), request.string()},
               base_ / "request.err", seconds(30));
  }
  static size_t count_of(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  static size_t missed(const Outcome& o) {
    size_t n = 0;
    for (const auto& [p, rec] : o.failed) n += std::regex_search(rec.reason, kMissedReason);
    return n;
  }
};

// 200 files dropped into a hot folder over 20 s; the receiver killed (SIGKILL) at 5 s and
// started again at 13 s, so that a file list (every 5 s) goes out while it is down; the history
// repeats each file 2 s and 10 s after it was sent (a repeat must come after the restart: an
// outage is named up to the last repeat). Without resends, every file is delivered or named
// within two history repeats of the restart.
TEST_F(Outage, AHotFolderWhoseReceiverIsKilledAndRestartedHasEveryFileDeliveredOrNamed) {
  const fs::path log1 = base_ / "receive1.log", log2 = base_ / "receive2.log";
  std::vector<std::string> paths;
  steady_clock::time_point restarted{};
  ASSERT_NO_FATAL_FAILURE(hot_folder_outage({}, log1, log2, &paths, &restarted));
  // The files sent while it was down (5 s to 13 s, the restart itself taking a moment) by their
  // second repeat (10 s after each, so 15 s to 23 s); the rest as they come.
  const auto written = steady_clock::now();
  EXPECT_TRUE(eventually(
      [&] {
        return settled({log1, log2}) >= paths.size();
      },
      seconds(40)))
      << settled({log1, log2}) << " of " << paths.size();
  const double after_restart = duration<double>(steady_clock::now() - restarted).count();
  const double after_last = duration<double>(steady_clock::now() - written).count();
  sender_->signal(SIGTERM);
  EXPECT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  receiver_->signal(SIGTERM);
  EXPECT_EQ(receiver_->wait(seconds(30)), 0) << read_file(log2);

  const Outcome o = account(paths, {log1, log2});
  EXPECT_TRUE(o.problems.empty()) << first_problems(o) << read_file(log2);
  EXPECT_GE(missed(o), 10u) << "the history named none of the files sent while it was down?";
  const std::regex why(
      "^(the receiver stopped \\(crash, kill or power cut\\) while the file was being received|"
      "never announced to this receiver: sent before its first packet of the session|"
      "started before this receiver: bytes 0-)");
  for (const auto& [p, rec] : o.failed) {
    EXPECT_TRUE(std::regex_search(rec.reason, kMissedReason) || std::regex_search(rec.reason, why))
        << p << ": " << rec.reason;
  }
  expect_reconciled(reconcile({log1, log2}), o, paths.size());
  std::cout << "hot folder, receiver killed at 5 s and back at 13 s: " << paths.size() << " sent, "
            << o.delivered.size() << " delivered, " << o.failed.size() << " named (" << missed(o)
            << " by the history), " << paths.size() - o.delivered.size() - o.failed.size()
            << " lost; all settled " << after_last << " s after the last file was written, "
            << after_restart << " s after the restart\n";
}

// The same outage with --resend-after 10s (and a retention folder to resend from): every file
// is delivered byte for byte, none twice, and no record is left open: each file the outage cost
// was named, then delivered by its resend, which resolved its record.
TEST_F(Outage, AHotFolderWithResendsHasEveryFileDeliveredOnceAfterTheReceiverWasKilled) {
  const fs::path log1 = base_ / "receive1.log", log2 = base_ / "receive2.log";
  const fs::path sent = make_dir("sent");
  std::vector<std::string> paths;
  steady_clock::time_point restarted{};
  ASSERT_NO_FATAL_FAILURE(hot_folder_outage(
      {"--resend-after", "10s", "--sent-dir", sent.string(), "--sent-keep-hours", "1"}, log1, log2,
      &paths, &restarted));
  const auto passed_once = [&] {
    std::map<std::string, int> n;
    for (const fs::path& l : {log1, log2}) {
      for (const std::string& p : passed_paths(read_file(l))) ++n[p];
    }
    return n;
  };
  // The last files' resends 10 s after them.
  EXPECT_TRUE(eventually([&] { return passed_once().size() >= paths.size(); }, seconds(60)))
      << passed_once().size() << " of " << paths.size();
  // And the last resends of all, of files delivered already: skipped.
  EXPECT_TRUE(eventually(
      [&] {
        return count_of(read_file(log2), ": a copy of the file delivered in session") >=
               paths.size() / 3;
      },
      seconds(40)));
  sender_->signal(SIGTERM);
  EXPECT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  receiver_->signal(SIGTERM);
  EXPECT_EQ(receiver_->wait(seconds(30)), 0) << read_file(log2);

  const std::map<std::string, int> passed = passed_once();
  size_t delivered = 0;
  for (const std::string& p : paths) {
    const auto it = passed.find(p);
    EXPECT_TRUE(it != passed.end() && it->second == 1)
        << p << ": logged Passed " << (it == passed.end() ? 0 : it->second);
    delivered += same_content(src_ / p, out_ / p);
  }
  EXPECT_EQ(delivered, paths.size());
  EXPECT_FALSE(fs::exists(out_ / "hot" / "f1000.1.bin")) << "a second copy under a final name";
  size_t resolved = 0;
  const std::vector<fs::path> records = failed_records(out_);
  for (const fs::path& rec : records) {
    const bool closed =
        ::testing::Value(read_file(rec), JsonHas("resolved", StartsWith("delivered on resend")));
    EXPECT_TRUE(closed) << "an open record: " << read_file(rec);
    resolved += closed;
  }
  const size_t resent = count_of(read_file(log2), ": delivered on resend (session ");
  std::cout << "hot folder with --resend-after 10s, receiver killed at 5 s and back at 13 s: "
            << paths.size() << " sent, " << delivered << " delivered (once each), "
            << records.size() << " named then delivered on resend (" << resolved
            << " records resolved, " << resent << " resend lines), 0 open, 0 lost\n";
}

// The receiver is down for a whole one-shot batch. The next run of the sender on that host
// (another batch, once the receiver is back) carries the first batch's history: each of its
// files is named, with when it was sent.
TEST_F(Outage, ABatchSentWhileTheReceiverWasDownIsNamedByTheNextRun) {
  std::vector<std::string> paths;
  for (int i = 0; i < 40; ++i) {
    const std::string rel = "batch/f" + std::to_string(i) + ".bin";
    write_small(src_ / rel, 20'000 + static_cast<size_t>(i), static_cast<uint64_t>(i));
    paths.push_back(rel);
  }
  const std::vector<std::string> history = {"--state-dir", state().string(), "--history-repeat",
                                            "1s,1h"};
  std::vector<std::string> first = history;
  first.push_back((src_ / "batch").string());
  start_sender(first);
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  // Past the first repeat: the next run sends it at its start.
  std::this_thread::sleep_for(milliseconds(1500));
  const fs::path log = base_ / "receive.log";
  start_receiver(log, {});
  write_small(src_ / "later/one.bin", 5'000, 99);
  paths.push_back("later/one.bin");
  std::vector<std::string> second = history;
  second.push_back((src_ / "later").string());
  start_sender(second);
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  EXPECT_EQ(receiver_->wait(seconds(30)), 1) << read_file(log);

  const Outcome o = account(paths, {log});
  EXPECT_TRUE(o.problems.empty()) << first_problems(o) << read_file(log);
  EXPECT_EQ(o.delivered.size(), 1u);
  EXPECT_EQ(missed(o), 40u) << read_file(log);
  expect_reconciled(reconcile({log}), o, paths.size());
  std::cout << "batch while the receiver was down: " << paths.size() << " sent, "
            << o.delivered.size() << " delivered, " << o.failed.size() << " named, "
            << paths.size() - o.delivered.size() - o.failed.size() << " lost\n";
}

// The human loop: a lossy link (dd_linksim, an outage mid-batch) fails some files of 50; the
// receiving side writes a resend request (dd_resend_request), which is carried to the sender;
// dd_file_send --resend-request sends exactly those again; the receiver delivers them and marks
// their records resolved; dd_reconcile finds every file delivered.
TEST_F(Outage, AResendRequestRoundTripDeliversWhatALossyLinkLostAndResolvesTheRecords) {
  std::vector<std::string> paths;
  for (int i = 0; i < 50; ++i) {
    const std::string rel = "batch/f" + std::to_string(i) + ".bin";
    write_small(src_ / rel, 200'000 + static_cast<size_t>(i), static_cast<uint64_t>(i));
    paths.push_back(rel);
  }
  uint16_t link_port = free_udp_port();
  while (link_port == port_) link_port = free_udp_port();
  const fs::path log = base_ / "receive.log";
  start_receiver(log, {}, /*once=*/false);
  // Every datagram lost for 0.3 s, a second into the batch (about 2.5 s at 4 MB/s).
  link_ = std::make_unique<Process>(
      std::vector<std::string>{DDFT_LINKSIM_BIN, "--listen", loopback(link_port), "--forward",
                               loopback(port_), "--quiet", "--outage", "1", "0.3"},
      base_ / "linksim.log");
  std::this_thread::sleep_for(milliseconds(200));
  const std::vector<std::string> state = {"--state-dir", this->state().string()};
  std::vector<std::string> first = state;
  for (const char* a : {"--rate", "4", "--history-repeat", "none"}) first.push_back(a);
  first.push_back((src_ / "batch").string());
  start_sender(first, link_port);
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  ASSERT_TRUE(eventually([&] { return settled({log}) >= paths.size(); }, seconds(30)))
      << read_file(log);
  const size_t lost = failed_records(out_).size();
  ASSERT_GE(lost, 1u) << "the outage lost no file: nothing to ask for\n" << read_file(log);

  const fs::path request = base_ / "request.jsonl";
  ASSERT_EQ(write_request(request), 0) << read_file(base_ / "request.err");
  const std::string asked = read_file(request);
  EXPECT_EQ(static_cast<size_t>(std::count(asked.begin(), asked.end(), '\n')), lost) << asked;

  // Carried across; the same sender's host sends exactly those again, straight to the receiver.
  std::vector<std::string> resend = state;
  for (const std::string& a :
       {std::string("--resend-request"), request.string(), (src_ / "batch").string()}) {
    resend.push_back(a);
  }
  start_sender(resend);
  ASSERT_EQ(sender_->wait(seconds(30)), 0) << tx_log();
  EXPECT_NE(tx_log().find(std::to_string(lost) + " to send again, 0 refused"), std::string::npos)
      << tx_log();
  ASSERT_TRUE(eventually(
      [&] { return count_of(read_file(log), ": delivered on resend (session ") >= lost; },
      seconds(30)))
      << read_file(log);
  receiver_->signal(SIGTERM);
  EXPECT_EQ(receiver_->wait(seconds(30)), 0) << read_file(log);

  for (const std::string& p : paths) EXPECT_TRUE(same_content(src_ / p, out_ / p)) << p;
  for (const fs::path& rec : failed_records(out_)) {
    EXPECT_THAT(read_file(rec), JsonHas("resolved", StartsWith("delivered on resend (session ")));
  }
  // Nothing left to ask for.
  ASSERT_EQ(write_request(request), 0) << read_file(base_ / "request.err");
  EXPECT_EQ(read_file(request), "");
  const Reconciled r = reconcile({log});
  EXPECT_EQ(r.exit_code, 0) << r.report;
  EXPECT_EQ(r.counts.at("delivered"), static_cast<int>(paths.size())) << r.report;
  EXPECT_EQ(r.counts.at("delivered on resend"), static_cast<int>(lost)) << r.report;
  EXPECT_EQ(r.counts.at("failed"), 0) << r.report;
  std::cout << "resend request round trip: " << paths.size() << " sent, " << lost
            << " lost on the link and named, " << lost << " asked for and resent, " << paths.size()
            << " delivered, " << lost << " records resolved, 0 lost\n";
}

}  // namespace
}  // namespace ddft::testing
