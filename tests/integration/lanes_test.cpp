// Lanes on the wire: the real dd_file_send drives three links as one session, each
// link a UDP socket of this test on loopback, and every datagram is decoded as a receiver would:
// each lane numbers its datagrams from 0, names itself in its heartbeats, carries whole files
// alone and a striped file's announce (kFlagStriped) and end with every other lane, and ends with
// a complete list naming every file and the lane that carried it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/device_transport.hpp"
#include "common/fd.hpp"
#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "common/udp_transport.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/net.hpp"
#include "support/process.hpp"
#include "support/scratch_fs.hpp"
#include "support/wait.hpp"

namespace ddft::testing {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono;
using ::testing::AllOf;

// One file list entry, its path copied out of the datagram.
struct LaneListed {
  int lane = common::kLaneUnsaid;
  bool aborted = false;
  std::string path;
};

// What one lane's socket got, decoded.
struct LaneView {
  std::vector<uint64_t> seqs;  // in arrival order
  std::vector<uint64_t> sessions;
  std::vector<common::Heartbeat> heartbeats;
  std::map<std::string, uint16_t> announced;  // path -> header flags of its first announce
  std::map<uint32_t, std::string> path_of;    // file id -> path
  std::map<uint32_t, common::End> ends;
  std::set<uint32_t> aborted;
  std::map<uint32_t, std::map<uint64_t, std::vector<uint8_t>>> data;  // file id -> offset -> bytes
  std::map<uint32_t, LaneListed> complete_list;                       // from kListComplete lists
  bool final_heartbeat_last = false;
};

void decode_into(const std::vector<uint8_t>& d, LaneView* v) {
  common::Packet p;
  ASSERT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
  v->seqs.push_back(p.header.seq);
  v->sessions.push_back(p.header.session_id);
  v->final_heartbeat_last = false;
  switch (p.header.type) {
    case common::PacketType::kAnnounce: {
      common::Announce a;
      ASSERT_EQ(common::decode_announce(p.payload, &a), common::DecodeStatus::kOk);
      v->path_of[a.file_id] = std::string(a.path);
      v->announced.try_emplace(std::string(a.path), p.header.flags);
      break;
    }
    case common::PacketType::kData: {
      common::DataHeader dh;
      std::span<const uint8_t> bytes;
      ASSERT_EQ(common::decode_data(p.payload, &dh, &bytes), common::DecodeStatus::kOk);
      v->data[dh.file_id][dh.offset].assign(bytes.begin(), bytes.end());
      break;
    }
    case common::PacketType::kEnd: {
      common::End e;
      ASSERT_EQ(common::decode_end(p.payload, &e), common::DecodeStatus::kOk);
      v->ends[e.file_id] = e;
      break;
    }
    case common::PacketType::kAbort: {
      common::Abort a;
      ASSERT_EQ(common::decode_abort(p.payload, &a), common::DecodeStatus::kOk);
      v->aborted.insert(a.file_id);
      break;
    }
    case common::PacketType::kHeartbeat: {
      common::Heartbeat hb;
      ASSERT_EQ(common::decode_heartbeat(p.payload, &hb), common::DecodeStatus::kOk);
      v->heartbeats.push_back(hb);
      v->final_heartbeat_last = (hb.flags & common::kHeartbeatFinal) != 0;
      break;
    }
    case common::PacketType::kFileList: {
      common::FileList list;
      ASSERT_EQ(common::decode_file_list(p.payload, &list), common::DecodeStatus::kOk);
      if ((list.flags & common::kListComplete) == 0) break;
      for (const auto& e : list.entries) {
        v->complete_list[e.file_id] = {e.lane, e.aborted, std::string(e.path)};
      }
      break;
    }
    default:
      break;
  }
}

// Receives on `socket` (a UDP socket, or a device node's reader) into `out` until `sender_done`
// is set and nothing came for 300 ms (or 60 s passed).
void capture_lane(common::DatagramSource& socket, std::vector<std::vector<uint8_t>>* out,
                  const std::atomic<bool>& sender_done) {
  std::vector<std::vector<uint8_t>> storage(64, std::vector<uint8_t>(common::kMaxDatagramSize));
  std::vector<std::span<uint8_t>> bufs(storage.begin(), storage.end());
  std::vector<size_t> lens(bufs.size());
  const auto give_up = steady_clock::now() + seconds(60);
  while (steady_clock::now() < give_up) {
    size_t count = 0;
    const bool done_before = sender_done.load();
    socket.receive(bufs, lens, &count, milliseconds(300));
    for (size_t i = 0; i < count; ++i) {
      out->emplace_back(storage[i].begin(), storage[i].begin() + static_cast<long>(lens[i]));
    }
    if (count == 0 && done_before) return;
  }
}

class LanesOnTheWire : public ::testing::Test {
 protected:
  // Opens one socket per port, runs dd_file_send with `args` (its log in send.log) while every
  // socket is read, and decodes what each got. `while_running`, when given, is called with the
  // sender's process once it started. Returns the sender's exit code.
  int send_over(const std::vector<uint16_t>& ports, const std::vector<std::string>& args,
                const std::function<void(Process&)>& while_running = {}) {
    std::vector<std::unique_ptr<common::DatagramSource>> sockets;
    for (uint16_t port : ports) {
      sockets.push_back(
          std::make_unique<common::UdpSource>(common::Endpoint{"127.0.0.1", port}, 32 << 20));
    }
    return send_through(sockets, args, while_running);
  }
  // As send_over(), lane k's datagrams read from sources[k] (lanes_[k]).
  int send_through(const std::vector<std::unique_ptr<common::DatagramSource>>& sockets,
                   const std::vector<std::string>& args,
                   const std::function<void(Process&)>& while_running = {}) {
    std::vector<std::vector<std::vector<uint8_t>>> got(sockets.size());
    std::atomic<bool> done{false};
    std::vector<std::thread> readers;
    for (size_t i = 0; i < sockets.size(); ++i) {
      readers.emplace_back([&, i] { capture_lane(*sockets[i], &got[i], done); });
    }
    std::vector<std::string> argv = {DDFT_SEND_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    int rc = -1;
    {
      Process sender(argv, log_path());
      if (while_running) while_running(sender);
      rc = sender.wait(seconds(60));
    }
    done = true;
    for (auto& t : readers) t.join();
    lanes_.assign(sockets.size(), {});
    for (size_t i = 0; i < sockets.size(); ++i) {
      for (const auto& d : got[i]) decode_into(d, &lanes_[i]);
    }
    return rc;
  }
  fs::path log_path() const { return dir_.path() / "send.log"; }
  // Every lane numbered its datagrams 0, 1, 2... in one session, named itself in every
  // heartbeat and ended with its final heartbeat.
  void expect_lanes_well_formed() {
    ASSERT_FALSE(lanes_.empty());
    const uint64_t session = lanes_[0].sessions.empty() ? 0 : lanes_[0].sessions[0];
    for (size_t k = 0; k < lanes_.size(); ++k) {
      const LaneView& v = lanes_[k];
      ASSERT_FALSE(v.seqs.empty()) << "lane " << k;
      for (size_t i = 0; i < v.seqs.size(); ++i) ASSERT_EQ(v.seqs[i], i) << "lane " << k;
      for (uint64_t s : v.sessions) ASSERT_EQ(s, session) << "lane " << k;
      ASSERT_FALSE(v.heartbeats.empty()) << "lane " << k;
      for (const auto& hb : v.heartbeats) {
        EXPECT_EQ(hb.lane, k);
        EXPECT_EQ(hb.lanes, lanes_.size());
      }
      EXPECT_TRUE(v.final_heartbeat_last) << "lane " << k;
    }
  }
  // The lane whose socket got the announce of `path`, failing unless exactly one did.
  int lane_announcing(const std::string& path) {
    int lane = -1;
    for (size_t k = 0; k < lanes_.size(); ++k) {
      if (lanes_[k].announced.count(path) == 0) continue;
      EXPECT_EQ(lane, -1) << path << " announced on two lanes";
      EXPECT_EQ(lanes_[k].announced.at(path) & common::kFlagStriped, 0) << path;
      lane = static_cast<int>(k);
    }
    EXPECT_GE(lane, 0) << path << " never announced";
    return lane;
  }

  ScratchDir dir_{"lanes"};
  std::vector<LaneView> lanes_;
};

TEST_F(LanesOnTheWire, ThreeLanesCarryOneSession) {
  const fs::path src = dir_.path() / "src";
  const uint64_t big_size = (3 << 20) + 12345;  // striped at --stripe-mb 1
  write_pattern(src / "big.bin", big_size, 1);
  write_pattern(src / "a.txt", 1000, 2);
  write_pattern(src / "b.bin", 200'000, 3);
  write_pattern(src / "c" / "d.txt", 5000, 4);
  const std::vector<uint16_t> ports = {free_udp_port(), free_udp_port(), free_udp_port()};
  std::vector<std::string> args;
  for (uint16_t p : ports) args.insert(args.end(), {"--dest", "127.0.0.1:" + std::to_string(p)});
  args.insert(args.end(), {"--stripe-mb", "1", "--read-block-kb", "256", "--rate", "40",
                           "--progress", "off", src.string() + "/"});
  ASSERT_EQ(send_over(ports, args), 0) << read_file(log_path());
  const std::string log = read_file(log_path());
  EXPECT_NE(log.find("4 file(s) to 127.0.0.1:" + std::to_string(ports[0]) +
                     ", 127.0.0.1:" + std::to_string(ports[1]) +
                     ", 127.0.0.1:" + std::to_string(ports[2]) + " (3 lanes, --rate per lane)"),
            std::string::npos)
      << log;
  expect_lanes_well_formed();

  // The striped file: announced (kFlagStriped) and ended (the whole file's digest) on every
  // lane; its data spread over the lanes, each chunk on one lane, together the file exactly.
  const std::string big = read_file(src / "big.bin");
  const common::Digest digest = common::hash_buffer(
      common::VerifyType::kB2B, {reinterpret_cast<const uint8_t*>(big.data()), big.size()});
  std::map<uint64_t, std::vector<uint8_t>> chunks;
  size_t lanes_with_data = 0;
  uint32_t big_id = 0;
  for (const LaneView& v : lanes_) {
    ASSERT_EQ(v.announced.count("big.bin"), 1u);
    EXPECT_NE(v.announced.at("big.bin") & common::kFlagStriped, 0);
    for (const auto& [id, path] : v.path_of) {
      if (path == "big.bin") big_id = id;
    }
    ASSERT_EQ(v.ends.count(big_id), 1u);
    EXPECT_EQ(v.ends.at(big_id).size, big_size);
    EXPECT_TRUE(std::equal(digest.bytes.begin(), digest.bytes.begin() + digest.size,
                           v.ends.at(big_id).key.begin()));
    if (v.data.count(big_id) == 0) continue;
    ++lanes_with_data;
    for (const auto& [offset, bytes] : v.data.at(big_id)) {
      EXPECT_TRUE(chunks.emplace(offset, bytes).second) << "offset " << offset << " twice";
    }
  }
  EXPECT_GE(lanes_with_data, 2u);
  std::string joined;
  for (const auto& [offset, bytes] : chunks) {
    ASSERT_EQ(offset, joined.size()) << "a hole before " << offset;
    joined.append(bytes.begin(), bytes.end());
  }
  EXPECT_TRUE(joined == big) << "the union of the lanes' data is the file";

  // Whole files down one lane each; every lane's last list names every file and its lane.
  const std::map<std::string, int> want = {{"big.bin", common::kLaneAll},
                                           {"a.txt", lane_announcing("a.txt")},
                                           {"b.bin", lane_announcing("b.bin")},
                                           {"c/d.txt", lane_announcing("c/d.txt")}};
  for (size_t k = 0; k < lanes_.size(); ++k) {
    std::map<std::string, int> listed;
    for (const auto& [id, e] : lanes_[k].complete_list) {
      EXPECT_FALSE(e.aborted) << e.path;
      listed[e.path] = e.lane;
    }
    EXPECT_EQ(listed, want) << "lane " << k;
  }
}

TEST_F(LanesOnTheWire, AStopAbortsTheStripedFileOnEveryLane) {
  const std::vector<uint16_t> ports = {free_udp_port(), free_udp_port()};
  // 40 MiB at 4 MB/s a lane: 5 s unless stopped, which it is once the data flows.
  const int rc = send_over(
      ports,
      {"--dest", "127.0.0.1:" + std::to_string(ports[0]), "--dest",
       "127.0.0.1:" + std::to_string(ports[1]), "--stripe-mb", "1", "--read-block-kb", "256",
       "--rate", "4", "--progress", "off", "synthetic:40M"},
      [&](Process& p) {
        EXPECT_TRUE(eventually(
            [&] { return read_file(log_path()).find("Info: session ") != std::string::npos; },
            seconds(10)));
        std::this_thread::sleep_for(milliseconds(500));
        p.signal(SIGINT);
      });
  EXPECT_EQ(rc, 130) << read_file(log_path());
  expect_lanes_well_formed();
  for (size_t k = 0; k < lanes_.size(); ++k) {
    const LaneView& v = lanes_[k];
    ASSERT_EQ(v.path_of.size(), 1u) << "lane " << k;
    const uint32_t id = v.path_of.begin()->first;
    EXPECT_EQ(v.aborted.count(id), 1u) << "lane " << k;
    EXPECT_EQ(v.ends.count(id), 0u) << "lane " << k;
    ASSERT_EQ(v.complete_list.count(id), 1u) << "lane " << k;
    EXPECT_TRUE(v.complete_list.at(id).aborted);
    EXPECT_EQ(v.complete_list.at(id).lane, common::kLaneAll);
  }
  EXPECT_NE(read_file(log_path()).find("not sent: sender stopped"), std::string::npos);
}

// Three UDP sockets on consecutive loopback ports, for --lanes; nothing when none were found.
std::vector<uint16_t> consecutive_ports() {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const uint16_t first = free_udp_port();
    if (first > 65533) continue;
    try {
      // Bound and released at once: free a moment ago, as free_udp_port() promises.
      for (uint16_t p = first; p < first + 3; ++p) {
        common::UdpSource probe(common::Endpoint{"127.0.0.1", p}, 0);
      }
      return {first, static_cast<uint16_t>(first + 1), static_cast<uint16_t>(first + 2)};
    } catch (const std::exception&) {
      continue;
    }
  }
  return {};
}

TEST_F(LanesOnTheWire, LanesCountsPortsFromTheOneDestination) {
  write_pattern(dir_.path() / "one.txt", 3000, 5);
  const std::vector<uint16_t> ports = consecutive_ports();
  if (ports.empty()) GTEST_SKIP() << "no three consecutive free UDP ports on loopback";
  ASSERT_EQ(send_over(ports, {"--dest", "127.0.0.1:" + std::to_string(ports[0]), "--lanes", "3",
                              "--progress", "off", (dir_.path() / "one.txt").string()}),
            0)
      << read_file(log_path());
  expect_lanes_well_formed();
  const int lane = lane_announcing("one.txt");
  for (const LaneView& v : lanes_) {
    ASSERT_EQ(v.complete_list.size(), 1u);
    EXPECT_EQ(v.complete_list.begin()->second.lane, lane);
  }
}

// The line of the manifest `text` whose "path" is `path` ("" when none is).
std::string line_naming(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (::testing::Value(line, JsonHas("path", path))) return line;
  }
  return "";
}

// Two device lanes, FIFOs standing in for the card driver's nodes: lane 0 is read (lanes_[0]),
// lane 1's reader goes away once the sender has opened it, so that its writes fail (EPIPE) as a
// device whose driver went away. A striped file first (every lane carries it), then small ones.
// The pool is small (4 blocks): lane 1, stuck on its full FIFO until its reader goes, holds the
// blocks of its stripe, so the reader reaches the small files only once lane 1 is down.
class DeviceLaneGoesAway : public LanesOnTheWire {
 protected:
  void SetUp() override {
    for (const fs::path& p : {live_, gone_}) ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    write_pattern(src_ / "0big.bin", 3 << 20, 1);
    for (int i = 1; i <= 4; ++i) {
      write_pattern(src_ / ("s" + std::to_string(i)), 20'000, static_cast<uint64_t>(i));
    }
  }
  // Runs dd_file_send over both lanes with `extra` options; returns its exit code.
  int send(const std::vector<std::string>& extra) {
    std::vector<std::unique_ptr<common::DatagramSource>> sources;
    sources.push_back(std::make_unique<common::DeviceSource>(live_.string()));
    // Held until the sender has opened lane 1 (a device node with no reader cannot be opened).
    common::UniqueFd gone_reader(::open(gone_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    EXPECT_TRUE(gone_reader);
    std::vector<std::string> args = {"--transport",  "device",   "--device",
                                     live_.string(), "--device", gone_.string()};
    args.insert(args.end(), {"--stripe-mb", "1", "--read-block-kb", "256", "--read-buffers", "2",
                             "--rate", "2", "--progress", "off", "--manifest", manifest_.string()});
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(src_.string() + "/");
    return send_through(sources, args, [&](Process&) {
      EXPECT_TRUE(eventually(
          [&] { return read_file(log_path()).find("Info: session ") != std::string::npos; },
          seconds(10)));
      gone_reader.reset();
    });
  }
  std::string lane1() const { return "lane 1 (device " + gone_.string() + ")"; }
  static std::string epipe() { return std::strerror(EPIPE); }

  fs::path live_ = dir_.path() / "lane0";
  fs::path gone_ = dir_.path() / "lane1";
  fs::path src_ = dir_.path() / "src";
  fs::path manifest_ = dir_.path() / "sent.jsonl";
};

TEST_F(DeviceLaneGoesAway, ContinueFailsItsFilesAndTheOtherLaneSendsTheRest) {
  const int rc = send({"--lane-down", "continue"});
  const std::string log = read_file(log_path());
  EXPECT_EQ(rc, 1) << "a file failed" << log;
  const std::string reason = lane1() + " is down: send failed: " + epipe();
  EXPECT_NE(log.find("Error: " + reason + "; its files in flight fail, the other lanes go on"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Error: 0big.bin not sent: " + reason), std::string::npos) << log;

  // Lane 0: one session numbered from 0, ending with its final heartbeat; the striped file
  // announced and aborted there too (never ended: the receiver could not complete it).
  ASSERT_EQ(lanes_.size(), 1u);
  const LaneView& v = lanes_[0];
  ASSERT_FALSE(v.seqs.empty());
  for (size_t i = 0; i < v.seqs.size(); ++i) ASSERT_EQ(v.seqs[i], i);
  EXPECT_TRUE(v.final_heartbeat_last);
  std::map<std::string, uint32_t> id_of;
  for (const auto& [id, path] : v.path_of) id_of[path] = id;
  ASSERT_EQ(id_of.count("0big.bin"), 1u);
  const uint32_t big = id_of.at("0big.bin");
  EXPECT_NE(v.announced.at("0big.bin") & common::kFlagStriped, 0);
  EXPECT_EQ(v.aborted.count(big), 1u);
  EXPECT_EQ(v.ends.count(big), 0u);

  // Every file: sent whole on lane 0 (its manifest line "sent") or failed because of lane 1 (its
  // manifest line naming the lane); lane 0's complete list names each, the failed ones aborted.
  std::map<std::string, LaneListed> listed;
  for (const auto& [id, e] : v.complete_list) listed[e.path] = e;
  const std::string manifest = read_file(manifest_);
  size_t failed = 0;
  for (const std::string path : {"0big.bin", "s1", "s2", "s3", "s4"}) {
    ASSERT_EQ(listed.count(path), 1u) << path;
    const std::string line = line_naming(manifest, path);
    if (::testing::Value(line, JsonHas("status", "sent"))) {
      EXPECT_FALSE(listed.at(path).aborted) << path;
      EXPECT_EQ(listed.at(path).lane, 0) << path;
      const std::string want = read_file(src_ / path);
      std::string got;
      for (const auto& [offset, bytes] : v.data.at(id_of.at(path))) {
        ASSERT_EQ(offset, got.size()) << path;
        got.append(bytes.begin(), bytes.end());
      }
      EXPECT_TRUE(got == want) << path;
    } else {
      ++failed;
      EXPECT_TRUE(listed.at(path).aborted) << path;
      EXPECT_THAT(line, AllOf(JsonHas("status", "failed"), JsonHas("reason", reason)));
    }
  }
  EXPECT_EQ(failed, 1u) << "only the striped file: the small ones came after lane 1 went down";
  EXPECT_NE(
      log.find(std::to_string(5 - failed) + " file(s) sent, " + std::to_string(failed) + " failed"),
      std::string::npos)
      << log;
}

TEST_F(DeviceLaneGoesAway, StopEndsTheSessionNamingTheLane) {
  EXPECT_EQ(send({}), 2);  // --lane-down stop is the default
  const std::string log = read_file(log_path());
  EXPECT_NE(log.find("Error: " + lane1() + ": send failed: " + epipe()), std::string::npos) << log;
  EXPECT_EQ(log.find("is down"), std::string::npos) << log;
}

}  // namespace
}  // namespace ddft::testing
