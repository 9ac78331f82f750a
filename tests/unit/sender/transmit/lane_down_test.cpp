// A lane whose link fails mid-session (--lane-down), on real links: every lane is a FIFO standing
// in for the card driver's node (common/device_transport.hpp), and the failing lane's reader is
// gone, so its writes fail with EPIPE as a device whose driver went away. With continue the lane
// goes down: its files fail (the striped one as a whole), the files after it are sent over the
// lane still up, the session ends; with stop, one lane, or every lane down, the session ends with
// the error.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/device_transport.hpp"
#include "common/fd.hpp"
#include "common/protocol.hpp"
#include "sender/config.hpp"
#include "sender/pipeline.hpp"
#include "sender/source/file_list.hpp"
#include "sender/transmit/transmitter.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;

// What the observers heard, one outcome per file (the hub serialises the calls).
class Outcomes final : public SendObserver {
 public:
  void file_started(const FileMeta& f) override { ++started[f.rel_path]; }
  void file_sent(const FileMeta& f, const common::Digest& /*d*/) override { ++sent[f.rel_path]; }
  void file_failed(const FileMeta& f, const std::string& reason) override {
    failed[f.rel_path].push_back(reason);
  }
  void session_finished(uint64_t /*id*/) override { ++finished; }
  std::map<std::string, int> started, sent;
  std::map<std::string, std::vector<std::string>> failed;
  int finished = 0;
};

// Reads the frames of a live lane's FIFO, so that its writes go through, from start() until
// stopped. Until it starts, the lane's writes wait for room (the lane is busy, not failed).
class LaneReader {
 public:
  explicit LaneReader(const fs::path& node) : source_(node.string()) {}
  ~LaneReader() { stop(); }
  LaneReader(const LaneReader&) = delete;
  LaneReader& operator=(const LaneReader&) = delete;
  // Starts reading (a second call does nothing). Any thread.
  void start() {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { read(); });
  }
  void stop() {
    std::lock_guard lock(mu_);
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  size_t frames() const { return frames_; }
  size_t undecodable() const { return undecodable_; }

 private:
  void read() {
    std::vector<std::vector<uint8_t>> store(32, std::vector<uint8_t>(common::kMaxDatagramSize));
    std::vector<std::span<uint8_t>> bufs(store.begin(), store.end());
    std::vector<size_t> lens(bufs.size());
    while (!done_) {
      size_t n = 0;
      if (source_.receive(bufs, lens, &n, milliseconds(20))) return;
      for (size_t i = 0; i < n; ++i) {
        common::Packet p;
        const auto status = common::decode_packet({store[i].data(), lens[i]}, &p);
        ++(status == common::DecodeStatus::kOk ? frames_ : undecodable_);
      }
    }
  }
  common::DeviceSource source_;
  std::mutex mu_;  // start() and stop()
  std::atomic<bool> done_{false};
  std::atomic<size_t> frames_{0}, undecodable_{0};
  std::thread thread_;
};

// The files of a list: the first `first` at once, the rest once `open()` says so (polled, at
// most 10 s), so that which files come after a lane went down is not left to timing.
class GatedSource final : public FileSource {
 public:
  GatedSource(std::vector<SourceFile> files, size_t first, std::function<bool()> open)
      : files_(std::move(files)), first_(first), open_(std::move(open)) {}
  std::optional<SourceFile> next(std::stop_token stop) override {
    if (given_ == first_) {
      const auto give_up = steady_clock::now() + seconds(10);
      while (!open_() && !stop.stop_requested() && steady_clock::now() < give_up) {
        std::this_thread::sleep_for(milliseconds(5));
      }
    }
    if (stop.stop_requested() || given_ >= files_.size()) return std::nullopt;
    return files_[given_++];
  }
  std::string describe() const override { return std::to_string(files_.size()) + " file(s)"; }

 private:
  std::vector<SourceFile> files_;
  size_t first_;
  std::function<bool()> open_;
  size_t given_ = 0;
};

class LaneDownTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A FIFO without a reader raises SIGPIPE on write (dd_file_send ignores it too).
    std::signal(SIGPIPE, SIG_IGN);
  }
  // A lane's node: a FIFO in the scratch folder.
  fs::path node(const std::string& name) {
    const fs::path p = dir_.path() / name;
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  // The sink of a lane whose link is gone: opened while a reader held the node (the driver was
  // there), which then went away; every write fails with EPIPE.
  std::unique_ptr<common::DatagramSink> dead_lane(const fs::path& p) {
    common::UniqueFd reader(::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    EXPECT_TRUE(reader);
    return std::make_unique<common::DeviceSink>(p.string());
  }
  // --transport device, one --device per node, 2 MB/s a lane (a live lane takes over a second
  // for the striped file's first stripe), stripes of 1 MiB, `policy`.
  SenderConfig config(const std::vector<fs::path>& nodes, const std::string& policy) {
    SenderConfig cfg;
    CLI::App app;
    add_sender_options(app, cfg);
    std::vector<std::string> args = {"dd_file_send", "--transport", "device", "--lane-down",
                                     policy,         "--stripe-mb", "1",      "--read-block-kb",
                                     "256",          "--rate",      "2"};
    for (const fs::path& p : nodes) args.insert(args.end(), {"--device", p.string()});
    args.push_back("x");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    finalize_sender_config(cfg);
    return cfg;
  }
  // Files of `sizes` bytes, "f0", "f1"..., in that order.
  std::vector<SourceFile> sized(const std::vector<uint64_t>& sizes) {
    const fs::path src = dir_.path() / "src";
    std::vector<std::string> paths;
    for (size_t i = 0; i < sizes.size(); ++i) {
      testing::write_pattern(src / ("f" + std::to_string(i)), sizes[i], i + 10);
      paths.push_back((src / ("f" + std::to_string(i))).string());
    }
    return discover_files(paths).files;
  }
  // A striped file first (3 MiB, every lane carries it), then four small ones.
  std::vector<SourceFile> files() {
    const fs::path src = dir_.path() / "src";
    testing::write_pattern(src / "0big.bin", 3 << 20, 1);
    for (int i = 1; i <= 4; ++i) {
      testing::write_pattern(src / ("s" + std::to_string(i)), 20'000, static_cast<uint64_t>(i));
    }
    return discover_files({src.string() + "/"}).files;
  }

  testing::ScratchDir dir_{"lane_down"};
};

TEST_F(LaneDownTest, ContinueFailsTheDownLanesFilesAndSendsTheRestOverTheOthers) {
  const fs::path live = node("lane0"), gone = node("lane1");
  LaneReader reader(live);
  common::DeviceSink live_sink(live.string());
  const std::unique_ptr<common::DatagramSink> gone_sink = dead_lane(gone);
  reader.start();
  const SenderConfig cfg = config({live, gone}, "continue");
  const std::vector<SourceFile> list = files();
  ASSERT_EQ(list.size(), 5u);
  Sender sender(cfg, {&live_sink, gone_sink.get()}, common::SteadyClock::instance());
  Outcomes seen;
  SendStatus status;
  sender.add_observer(&seen);
  sender.set_status(&status);
  testing::LogCapture log;
  std::stop_source stop;
  // The striped file first; the small ones once lane 1 is down.
  GatedSource source(list, 1, [&status] { return status.lanes_up.load() == 1; });
  const SendTotals t = sender.run(source, stop.get_token());  // no throw: the session went on
  reader.stop();

  const std::string reason = "lane 1 (device " + gone.string() + ") is down: send failed: " +
                             std::error_code(EPIPE, std::system_category()).message();
  EXPECT_NE(
      log.text().find("Error: " + reason + "; its files in flight fail, the other lanes go on\n"),
      std::string::npos)
      << log.text();
  // The striped file used the lane that went down: it fails, once, with the lane's reason.
  ASSERT_EQ(seen.failed.count("0big.bin"), 1u) << log.text();
  EXPECT_EQ(seen.failed.at("0big.bin"), std::vector<std::string>{reason});
  // The small ones, after lane 1 went down, went over lane 0; every file was heard of once.
  for (const SourceFile& f : list) {
    const auto started = seen.started.find(f.rel_path);
    EXPECT_TRUE(started != seen.started.end() && started->second == 1) << f.rel_path;
    if (f.rel_path == "0big.bin") continue;
    const auto sent = seen.sent.find(f.rel_path);
    EXPECT_TRUE(sent != seen.sent.end() && sent->second == 1) << f.rel_path;
  }
  EXPECT_EQ(seen.failed.size(), 1u);
  EXPECT_EQ(seen.sent.size(), 4u);
  EXPECT_EQ(t.files_sent, 4u);
  EXPECT_EQ(t.files_failed, 1u);
  EXPECT_EQ(status.files_failed.load(), t.files_failed);
  EXPECT_EQ(status.lanes_up.load(), 1u);
  EXPECT_EQ(seen.finished, 1) << "the lane down counts at the end";
  EXPECT_GT(reader.frames(), 0u);
  EXPECT_EQ(reader.undecodable(), 0u);
}

TEST_F(LaneDownTest, ContinueFailsAWholeFileOnTheDownLane) {
  const fs::path live = node("lane0"), gone = node("lane1");
  // Lane 0 is not read at first: busy with the first file, it is not the least busy lane for the
  // second, which goes down lane 1.
  LaneReader reader(live);
  common::DeviceSink live_sink(live.string());
  const std::unique_ptr<common::DatagramSink> gone_sink = dead_lane(gone);
  SenderConfig cfg = config({live, gone}, "continue");
  cfg.stripe_mb = 0;  // whole files only
  const std::vector<SourceFile> list = sized({1 << 20, 20'000, 30'000, 40'000});
  ASSERT_EQ(list.size(), 4u);
  Sender sender(cfg, {&live_sink, gone_sink.get()}, common::SteadyClock::instance());
  Outcomes seen;
  SendStatus status;
  sender.add_observer(&seen);
  sender.set_status(&status);
  std::stop_source stop;
  // The last two once lane 1 is down; lane 0 is read from then on.
  GatedSource source(list, 2, [&] {
    if (status.lanes_up.load() != 1) return false;
    reader.start();
    return true;
  });
  const SendTotals t = sender.run(source, stop.get_token());
  reader.stop();
  const std::string reason = "lane 1 (device " + gone.string() + ") is down: send failed: " +
                             std::error_code(EPIPE, std::system_category()).message();
  using Failures = std::map<std::string, std::vector<std::string>>;
  EXPECT_EQ(seen.failed, (Failures{{list[1].rel_path, {reason}}}));
  EXPECT_EQ(seen.sent, (std::map<std::string, int>{
                           {list[0].rel_path, 1}, {list[2].rel_path, 1}, {list[3].rel_path, 1}}));
  EXPECT_EQ(t.files_sent, 3u);
  EXPECT_EQ(t.files_failed, 1u);
  EXPECT_EQ(reader.undecodable(), 0u);
}

TEST_F(LaneDownTest, StopEndsTheSessionWithTheLaneNamed) {
  const fs::path live = node("lane0"), gone = node("lane1");
  LaneReader reader(live);
  reader.start();
  common::DeviceSink live_sink(live.string());
  const std::unique_ptr<common::DatagramSink> gone_sink = dead_lane(gone);
  const SenderConfig cfg = config({live, gone}, "stop");
  Sender sender(cfg, {&live_sink, gone_sink.get()}, common::SteadyClock::instance());
  std::stop_source stop;
  try {
    sender.run(files(), stop.get_token());
    FAIL() << "the session went on";
  } catch (const LinkError& e) {
    EXPECT_EQ(std::string(e.what()), "lane 1 (device " + gone.string() + "): send failed: " +
                                         std::error_code(EPIPE, std::system_category()).message());
  }
}

TEST_F(LaneDownTest, ContinueWithEveryLaneDownEndsTheSession) {
  const fs::path a = node("lane0"), b = node("lane1");
  const std::unique_ptr<common::DatagramSink> sink_a = dead_lane(a), sink_b = dead_lane(b);
  const SenderConfig cfg = config({a, b}, "continue");
  Sender sender(cfg, {sink_a.get(), sink_b.get()}, common::SteadyClock::instance());
  std::stop_source stop;
  try {
    sender.run(files(), stop.get_token());
    FAIL() << "the session went on with no lane";
  } catch (const LinkError& e) {
    EXPECT_NE(std::string(e.what()).find("send failed and no other lane is up"), std::string::npos)
        << e.what();
  }
}

TEST_F(LaneDownTest, ContinueWithOneLaneIsStop) {
  const fs::path a = node("lane0");
  const std::unique_ptr<common::DatagramSink> sink = dead_lane(a);
  const SenderConfig cfg = config({a}, "continue");
  Sender sender(cfg, *sink, common::SteadyClock::instance());
  std::stop_source stop;
  try {
    sender.run(files(), stop.get_token());
    FAIL() << "one lane went down and the session went on";
  } catch (const LinkError& e) {
    // One lane: the words of a sender before lanes.
    EXPECT_EQ(std::string(e.what()),
              "send failed: " + std::error_code(EPIPE, std::system_category()).message());
  }
}

}  // namespace
}  // namespace ddft::sender
