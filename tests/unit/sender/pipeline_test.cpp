// The sender's pipeline (reader and transmitter threads) on real files: a session sends every
// file whole (announce, data in order, end with the file's key) and then the final heartbeat;
// an unreadable file is counted as failed and the rest still go out; the totals add up. The link
// is an in-memory sink behind the DatagramSink interface; the clock is a FakeClock (no waits).
#include "sender/pipeline.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "common/transport.hpp"
#include "sender/config.hpp"
#include "sender/source/file_list.hpp"
#include "support/log_capture.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {
namespace fs = std::filesystem;

// Keeps every datagram sent (the transmit thread calls send()).
class Wire final : public common::DatagramSink {
 public:
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) override {
    std::lock_guard lock(mu_);
    for (const auto& d : datagrams) datagrams_.emplace_back(d.begin(), d.end());
    *sent = datagrams.size();
    return {};
  }
  std::vector<std::vector<uint8_t>> take() {
    std::lock_guard lock(mu_);
    return std::move(datagrams_);
  }

 private:
  std::mutex mu_;
  std::vector<std::vector<uint8_t>> datagrams_;
};

std::string pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) >> 3);
  return s;
}

SenderConfig config() {
  SenderConfig cfg;
  CLI::App app;
  add_sender_options(app, cfg);
  // Small blocks and packets: several blocks per file; control packets once each.
  const char* argv[] = {
      "dd_file_send", "--dest", "127.0.0.1:9", "--packet-size",    "1000", "--read-block-kb",
      "64",           "--rate", "0",           "--control-repeat", "1",    "x"};
  app.parse(12, argv);
  finalize_sender_config(cfg);
  return cfg;
}

struct Received {
  std::map<uint32_t, std::string> path;     // by file id, from the announces
  std::map<uint32_t, std::string> content;  // data, in the order it came
  std::map<uint32_t, common::End> end;
  std::vector<std::string> aborted;
  bool final_heartbeat_last = false;
  int undecodable = 0;
};

Received decode_all(const std::vector<std::vector<uint8_t>>& wire) {
  Received r;
  for (size_t i = 0; i < wire.size(); ++i) {
    common::Packet p;
    if (common::decode_packet(wire[i], &p) != common::DecodeStatus::kOk) {
      ++r.undecodable;
      continue;
    }
    switch (p.header.type) {
      case common::PacketType::kAnnounce: {
        common::Announce a;
        if (common::decode_announce(p.payload, &a) == common::DecodeStatus::kOk) {
          r.path[a.file_id] = a.path;
        }
        break;
      }
      case common::PacketType::kData: {
        common::DataHeader d;
        std::span<const uint8_t> bytes;
        if (common::decode_data(p.payload, &d, &bytes) == common::DecodeStatus::kOk) {
          std::string& c = r.content[d.file_id];
          EXPECT_EQ(d.offset, c.size()) << "data in order";
          c.append(bytes.begin(), bytes.end());
        }
        break;
      }
      case common::PacketType::kEnd: {
        common::End e;
        if (common::decode_end(p.payload, &e) == common::DecodeStatus::kOk) r.end[e.file_id] = e;
        break;
      }
      case common::PacketType::kHeartbeat: {
        common::Heartbeat hb;
        if (common::decode_heartbeat(p.payload, &hb) == common::DecodeStatus::kOk) {
          r.final_heartbeat_last = (hb.flags & common::kHeartbeatFinal) && i + 1 == wire.size();
        }
        break;
      }
      default:
        break;
    }
  }
  return r;
}

TEST(SenderPipeline, ASessionSendsEveryFileWholeThenTheFinalHeartbeat) {
  testing::ScratchDir dir("sender_pipeline");
  const std::string a = pattern(200'000, 1), b = pattern(1, 2);
  { std::ofstream(dir.path() / "a.bin", std::ios::binary) << a; }
  { std::ofstream(dir.path() / "b.txt", std::ios::binary) << b; }
  { std::ofstream(dir.path() / "empty", std::ios::binary); }
  const FileList list = discover_files({dir.path().string() + "/"});
  ASSERT_EQ(list.files.size(), 3u);
  const SenderConfig cfg = config();
  Wire wire;
  common::FakeClock clock;
  SendStatus status;
  Sender sender(cfg, wire, clock);
  sender.set_status(&status);
  std::stop_source stop;
  const SendTotals t = sender.run(list.files, stop.get_token());
  EXPECT_EQ(t.files_sent, 3u);
  EXPECT_EQ(t.files_failed, 0u);
  EXPECT_EQ(t.bytes, a.size() + b.size());
  EXPECT_EQ(t.session_id, sender.session_id());
  EXPECT_EQ(status.files_sent.load(), 3u);
  const auto datagrams = wire.take();
  EXPECT_EQ(t.datagrams, datagrams.size());
  const Received r = decode_all(datagrams);
  EXPECT_EQ(r.undecodable, 0);
  EXPECT_TRUE(r.final_heartbeat_last);
  const std::map<std::string, const std::string*> want = {
      {"a.bin", &a}, {"b.txt", &b}, {"empty", nullptr}};
  ASSERT_EQ(r.path.size(), 3u);
  for (const auto& [id, path] : r.path) {
    ASSERT_TRUE(want.count(path)) << path;
    const std::string content = want.at(path) ? *want.at(path) : std::string();
    EXPECT_EQ(r.content.count(id) ? r.content.at(id) : std::string(), content) << path;
    ASSERT_TRUE(r.end.count(id)) << path;
    const common::End& e = r.end.at(id);
    EXPECT_EQ(e.size, content.size());
    const common::Digest d = common::hash_buffer(
        e.verify, {reinterpret_cast<const uint8_t*>(content.data()), content.size()});
    EXPECT_EQ(e.key_len, d.size);
    EXPECT_TRUE(std::equal(d.bytes.begin(), d.bytes.begin() + d.size, e.key.begin())) << path;
  }
}

// The session's first line: without --shard byte for byte the DFTS line (operators and their
// scripts read it); with --shard K/N, the shard at its end.
TEST(SenderPipeline, TheSessionLineNamesTheShardOnlyWhenSet) {
  testing::ScratchDir dir("sender_session_line");
  { std::ofstream(dir.path() / "a.bin", std::ios::binary) << "a"; }
  const FileList list = discover_files({dir.path().string() + "/"});
  for (const Shard shard : {Shard{}, Shard{1, 2}}) {
    SenderConfig cfg = config();
    cfg.shard = shard;
    Wire wire;
    common::FakeClock clock;
    Sender sender(cfg, wire, clock);
    std::string text;
    {
      const testing::LogCapture log;
      std::stop_source stop;
      sender.run(list.files, stop.get_token());
      text = log.text();
    }
    const size_t at = text.find("Info: session ");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    const std::string want = fmt::format(
        "Info: session {:016x}: 1 file(s) to 127.0.0.1:9, packet 1000 bytes, rate unlimited, "
        "verify B2B",
        sender.session_id());
    EXPECT_EQ(line, shard.enabled() ? want + ", --shard 1/2" : want);
  }
}

TEST(SenderPipeline, AFileThatCannotBeReadIsCountedAndTheRestStillGo) {
  testing::ScratchDir dir("sender_pipeline");
  const std::string a = pattern(5000, 3);
  { std::ofstream(dir.path() / "a.bin", std::ios::binary) << a; }
  SourceFile gone;
  gone.path = (dir.path() / "gone.bin").string();
  gone.rel_path = "gone.bin";
  std::vector<SourceFile> files = discover_files({(dir.path() / "a.bin").string()}).files;
  files.insert(files.begin(), gone);
  const SenderConfig cfg = config();
  Wire wire;
  common::FakeClock clock;
  Sender sender(cfg, wire, clock);
  std::stop_source stop;
  const SendTotals t = sender.run(files, stop.get_token());
  EXPECT_EQ(t.files_sent, 1u);
  EXPECT_EQ(t.files_failed, 1u);
  const Received r = decode_all(wire.take());
  ASSERT_EQ(r.path.size(), 1u);
  EXPECT_EQ(r.path.begin()->second, "a.bin");
  EXPECT_EQ(r.content.begin()->second, a);
  EXPECT_TRUE(r.final_heartbeat_last);
}

// Counts what the observers hear, from any lane's thread (the hub serialises the calls).
class CountingObserver final : public SendObserver {
 public:
  void session_started(uint64_t /*id*/) override { ++started; }
  void file_started(const FileMeta& f) override { ++file_starts[f.rel_path]; }
  void file_progress(const FileMeta& f, uint64_t bytes) override {
    EXPECT_GE(bytes, progress[f.rel_path]) << "progress never goes back";
    progress[f.rel_path] = bytes;
  }
  void file_sent(const FileMeta& f, const common::Digest& /*d*/) override { ++sent[f.rel_path]; }
  void file_failed(const FileMeta& f, const std::string& /*r*/) override { ++failed[f.rel_path]; }
  void session_finished(uint64_t /*id*/) override {
    EXPECT_EQ(started, 1);
    ++finished;
  }
  int started = 0;
  int finished = 0;
  std::map<std::string, int> file_starts, sent, failed;
  std::map<std::string, uint64_t> progress;
};

TEST(SenderPipeline, ThreeLanesAreOneSessionToTheObservers) {
  testing::ScratchDir dir("sender_pipeline");
  // 2.5 MiB striped over the lanes at --stripe-mb 1; the small ones whole.
  const std::string big = pattern(5 << 19, 4);
  { std::ofstream(dir.path() / "big.bin", std::ios::binary) << big; }
  for (int i = 0; i < 4; ++i) {
    std::ofstream(dir.path() / ("s" + std::to_string(i)), std::ios::binary) << pattern(3000, i);
  }
  const FileList list = discover_files({dir.path().string() + "/"});
  ASSERT_EQ(list.files.size(), 5u);
  SenderConfig cfg = config();
  cfg.stripe_mb = 1;
  Wire wires[3];
  common::FakeClock clock;
  SendStatus status;
  Sender sender(cfg, {&wires[0], &wires[1], &wires[2]}, clock);
  EXPECT_EQ(sender.lanes(), 3u);
  CountingObserver seen;
  sender.add_observer(&seen);
  sender.set_status(&status);
  std::stop_source stop;
  const SendTotals t = sender.run(list.files, stop.get_token());
  EXPECT_EQ(t.files_sent, 5u);
  EXPECT_EQ(t.files_failed, 0u);
  EXPECT_EQ(t.bytes, big.size() + 4 * 3000);
  EXPECT_EQ(status.files_sent.load(), 5u);
  EXPECT_EQ(seen.started, 1);
  EXPECT_EQ(seen.finished, 1);
  EXPECT_EQ(seen.file_starts.size(), 5u);
  for (const auto& [path, n] : seen.file_starts) EXPECT_EQ(n, 1) << path;
  for (const auto& [path, n] : seen.sent) EXPECT_EQ(n, 1) << path;
  EXPECT_EQ(seen.sent.size(), 5u);
  EXPECT_EQ(seen.progress["big.bin"], big.size()) << "summed over the lanes";
  uint64_t datagrams = 0;
  size_t big_data_lanes = 0;
  for (Wire& w : wires) {
    const auto got = w.take();
    datagrams += got.size();
    size_t big_data = 0;
    for (const auto& d : got) {
      common::Packet p;
      ASSERT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
      common::DataHeader dh;
      std::span<const uint8_t> bytes;
      if (p.header.type == common::PacketType::kData &&
          common::decode_data(p.payload, &dh, &bytes) == common::DecodeStatus::kOk &&
          dh.offset + bytes.size() > 3000) {
        ++big_data;
      }
    }
    big_data_lanes += big_data > 0;
  }
  EXPECT_EQ(t.datagrams, datagrams);
  EXPECT_GE(big_data_lanes, 2u) << "the big file's stripes went down more than one lane";
}

TEST(SenderPipeline, SealedLanesShareTheSessionIdButEachHasItsOwnSalt) {
  testing::ScratchDir dir("sender_pipeline");
  for (int i = 0; i < 4; ++i) {
    std::ofstream(dir.path() / ("f" + std::to_string(i)), std::ios::binary) << pattern(2000, i);
  }
  const FileList list = discover_files({dir.path().string() + "/"});
  SenderConfig cfg = config();
  common::Key key;
  key.fill(0x5a);
  cfg.key = key;
  Wire wires[2];
  common::FakeClock clock;
  Sender sender(cfg, {&wires[0], &wires[1]}, clock);
  std::stop_source stop;
  EXPECT_EQ(sender.run(list.files, stop.get_token()).files_sent, 4u);
  std::vector<uint8_t> salts[2];
  for (int lane = 0; lane < 2; ++lane) {
    const auto got = wires[lane].take();
    ASSERT_FALSE(got.empty());
    for (size_t i = 0; i < got.size(); ++i) {
      const auto& d = got[i];
      ASSERT_NE(common::peek_flags(d.data()) & common::kFlagAuth, 0);
      EXPECT_EQ(common::peek_session_id(d.data()), sender.session_id());
      EXPECT_EQ(common::peek_seq(d.data()), i) << "each lane numbers from 0";
      const uint8_t* salt = common::sealed_salt(d.data(), d.size());
      if (salts[lane].empty()) salts[lane].assign(salt, salt + common::kSaltSize);
      EXPECT_TRUE(std::equal(salts[lane].begin(), salts[lane].end(), salt)) << "one salt a lane";
    }
  }
  EXPECT_NE(salts[0], salts[1]) << "a key of its own per lane: seq 0 comes on every lane";
}

}  // namespace
}  // namespace ddft::sender
