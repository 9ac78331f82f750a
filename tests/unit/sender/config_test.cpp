// The sender's command line: what a parse leaves in SenderConfig (and the sizes derived from
// it), the one-line errors, and DFTS's single-dash spellings. Kept to behaviour (flags in, values
// and messages out) so that the config can change inside.
#include "sender/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sender/source/hot_folder.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::sender {
namespace {

// Parses `args` (after the program name) into *cfg and finalizes it. Returns "" or the error's
// message, as main() prints it.
std::string parse(std::vector<std::string> args, SenderConfig* cfg) {
  CLI::App app;
  add_sender_options(app, *cfg);
  args.insert(args.begin(), "dd_file_send");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    finalize_sender_config(*cfg);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(SenderConfig, DestinationSourcesAndDefaults) {
  SenderConfig cfg;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "a.bin", "dir/"}, &cfg), "");
  EXPECT_EQ(cfg.dest.host, "127.0.0.1");
  EXPECT_EQ(cfg.dest.port, 5000);
  EXPECT_EQ(cfg.sources, (std::vector<std::string>{"a.bin", "dir/"}));
  EXPECT_EQ(cfg.verify, common::VerifyType::kB2B);
  EXPECT_FALSE(cfg.fec.enabled());
  EXPECT_FALSE(cfg.key.has_value());
  EXPECT_EQ(cfg.report, ReportOption::kSummary);
  EXPECT_EQ(cfg.symlinks, SymlinkMode::kSkip);
  for (const SymlinkMode m : {SymlinkMode::kFollow, SymlinkMode::kError}) {
    SenderConfig other;
    ASSERT_EQ(
        parse({"--dest", "127.0.0.1:5000", "--symlinks", std::string(symlink_mode_name(m)), "x"},
              &other),
        "");
    EXPECT_EQ(other.symlinks, m);
  }
  SenderConfig hot;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "--watch", "/in", "--symlinks", "error"}, &hot), "");
  EXPECT_EQ(hot.symlinks, SymlinkMode::kError);
}

TEST(SenderConfig, PacketSizesShrinkWithFec) {
  SenderConfig plain;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "--packet-size", "1472", "x"}, &plain), "");
  EXPECT_EQ(source_datagram_size(plain), 1472u);
  EXPECT_EQ(data_chunk_size(plain), 1472u - common::kHeaderSize - common::kDataHeaderSize);
  SenderConfig fec;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "--packet-size", "1472", "--fec", "8:2", "--verify",
                   "sha256", "x"},
                  &fec),
            "");
  EXPECT_EQ(fec.fec.k, 8u);
  EXPECT_EQ(fec.fec.m, 2u);
  EXPECT_EQ(fec.verify, common::VerifyType::kSha256);
  EXPECT_LT(source_datagram_size(fec), 1472u) << "a parity datagram must carry a source";
  EXPECT_LT(data_chunk_size(fec), data_chunk_size(plain));
}

TEST(SenderConfig, BadInputIsOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"x"}, "--dest"},
      {{"--dest", "127.0.0.1:0", "x"}, "port 0 is not a destination"},
      {{"--dest", "127.0.0.1:1", "--verify", "md5", "x"}, "--verify"},
      {{"--dest", "127.0.0.1:1", "--fec", "32", "x"}, "is not K:M"},
      {{"--dest", "127.0.0.1:1", "--auth-only", "x"}, "needs --key-file"},
      {{"--transport", "device", "x"}, "--transport device needs --device PATH"},
      {{"--dest", "127.0.0.1:1", "--lane-down", "x", "x"}, "--lane-down: x not in"},
      {{"--dest", "127.0.0.1:1", "--symlinks", "maybe", "x"},
       "--symlinks: maybe not in {skip,follow,error}"},
      {{"--dest", "127.0.0.1:1", "--watch", "/in", "--symlinks", "follow"},
       "follow cannot be used with --watch"},
  };
  for (const auto& [args, want] : cases) {
    SenderConfig cfg;
    const std::string err = parse(args, &cfg);
    EXPECT_NE(err.find(want), std::string::npos) << args.back() << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// Each choice and coded value lands in its typed field, spelt as the option takes it (--verify,
// --file-lock and --report in either case).
TEST(SenderConfig, ValuesGoStraightIntoTheirFields) {
  SenderConfig by_default;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "x"}, &by_default), "");
  EXPECT_EQ(by_default.transport, common::TransportKind::kUdp);
  EXPECT_TRUE(by_default.gso);
  EXPECT_FALSE(by_default.file_lock);
  EXPECT_EQ(by_default.progress, ProgressMode::kAuto);
  EXPECT_EQ(by_default.compress, CompressMode::kOff);
  EXPECT_EQ(by_default.compress_workers, 0u) << "no compress workers without --compress";
  EXPECT_FALSE(by_default.shard.enabled());
  SenderConfig cfg;
  ASSERT_EQ(parse({"--dest",
                   "127.0.0.1:5000",
                   "--verify",
                   "SHA256",
                   "--gso",
                   "off",
                   "--file-lock",
                   "y",
                   "--report",
                   "n",
                   "--progress",
                   "off",
                   "--compress",
                   "auto:5",
                   "--fec",
                   "8:2",
                   "--fec-interleave",
                   "4",
                   "--shard",
                   "0/3",
                   "--lane-down",
                   "continue",
                   "x"},
                  &cfg),
            "");
  EXPECT_EQ(cfg.verify, common::VerifyType::kSha256);
  EXPECT_FALSE(cfg.gso);
  EXPECT_TRUE(cfg.file_lock);
  EXPECT_EQ(cfg.report, ReportOption::kNone);
  EXPECT_EQ(cfg.progress, ProgressMode::kOff);
  EXPECT_EQ(cfg.compress, CompressMode::kAuto);
  EXPECT_EQ(cfg.compress_level, 5);
  EXPECT_GE(cfg.compress_workers, 1u);
  EXPECT_EQ(cfg.fec.k, 8u);
  EXPECT_EQ(cfg.fec.m, 2u);
  EXPECT_EQ(cfg.fec.interleave, 4u);
  EXPECT_EQ(cfg.shard.to_string(), "0/3");
  EXPECT_EQ(cfg.lane_down, LaneDownPolicy::kContinue);
  SenderConfig other;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "--verify", "none", "--file-lock", "N", "--report",
                   "V", "--progress", "on", "--compress", "zstd", "--fec", "off", "x"},
                  &other),
            "");
  EXPECT_EQ(other.verify, common::VerifyType::kNone);
  EXPECT_FALSE(other.file_lock);
  EXPECT_EQ(other.report, ReportOption::kVerbose);
  EXPECT_EQ(other.progress, ProgressMode::kOn);
  EXPECT_EQ(other.compress, CompressMode::kZstd);
  EXPECT_EQ(other.compress_level, 1);
  EXPECT_FALSE(other.fec.enabled());
}

// A bad value of a choice or a coded option is refused by the parse, with the line the
// programs print (tests/cli pins the same lines on the real program).
TEST(SenderConfig, BadValuesAreTheirOneLine) {
  const std::string compress =
      "--compress: expected off, auto[:LEVEL] or zstd[:LEVEL], LEVEL 1 to 19";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--transport", "UDP"}, "--transport: UDP not in {udp,device}"},
      {{"--verify", "md5"}, "--verify: md5 not in {b2b,sha256,none}"},
      {{"--gso", "on"}, "--gso: on not in {auto,off}"},
      {{"--gso", "AUTO"}, "--gso: AUTO not in {auto,off}"},
      {{"--file-lock", "yes"}, "--file-lock: yes not in {Y,N}"},
      {{"--report", "x"}, "--report: x not in {S,V,N}"},
      {{"--progress", "ON"}, "--progress: ON not in {auto,on,off}"},
      {{"--lane-down", "Stop"}, "--lane-down: Stop not in {stop,continue}"},
      {{"--symlinks", "SKIP"}, "--symlinks: SKIP not in {skip,follow,error}"},
      {{"--compress", "gzip"}, compress},
      {{"--compress", "ZSTD"}, compress},
      {{"--compress", "zstd:20"}, compress},
      {{"--compress", "zstd:"}, compress},
      {{"--compress", "off:1"}, compress},
      {{"--fec", "32"}, "--fec: '32' is not K:M (source and parity packets per group, e.g. 32:4)"},
      {{"--fec", "250:10"}, "--fec: '250:10': K and M must be at least 1 and K + M at most 255"},
      {{"--fec", "8:2", "--fec-interleave", "0"},
       "--fec-interleave: Value 0 not in range 1 to 255"},
      {{"--dest", "nonsense"}, "--dest: expected HOST:PORT, got 'nonsense'"},
      {{"-d", "[::1"}, "--dest: expected [ADDRESS]:PORT, got '[::1'"},
      {{"--compress", "auto", "--read-block-kb", "8192"},
       "--read-block-kb: at most 4096 with --compress (a compressed block is at most 4 MiB)"},
  };
  for (const auto& [args, want] : cases) {
    std::vector<std::string> argv = {"--dest", "127.0.0.1:5000", "x"};
    argv.insert(argv.end(), args.begin(), args.end());
    SenderConfig cfg;
    EXPECT_EQ(parse(argv, &cfg), want);
  }
}

// --dest names the links of --transport udp: under --transport device it is left alone.
TEST(SenderConfig, DestinationsAreNotLinksUnderTheDeviceTransport) {
  SenderConfig cfg;
  ASSERT_EQ(parse({"--transport", "device", "--device", "/dev/a", "--dest", "nonsense", "x"}, &cfg),
            "");
  EXPECT_EQ(cfg.transport, common::TransportKind::kDevice);
  EXPECT_TRUE(cfg.dests.empty());
  EXPECT_EQ(cfg.lane_name(0), "device /dev/a");
}

TEST(SenderConfig, OneLaneByDefault) {
  SenderConfig cfg;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "x"}, &cfg), "");
  EXPECT_EQ(cfg.lanes(), 1u);
  EXPECT_EQ(cfg.lane_name(0), "127.0.0.1:5000");
  EXPECT_EQ(cfg.stripe_mb, 64u);
  SenderConfig dev;
  ASSERT_EQ(parse({"--transport", "device", "--device", "/dev/a", "x"}, &dev), "");
  EXPECT_EQ(dev.lanes(), 1u);
  EXPECT_EQ(dev.device, "/dev/a");
  EXPECT_EQ(dev.lane_name(0), "device /dev/a");
}

TEST(SenderConfig, LanesFromSeveralDestinations) {
  SenderConfig cfg;
  // A source right after a --dest is a source, not another destination.
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "a", "-d", "10.0.0.2:6000", "b", "--stripe-mb", "0"},
                  &cfg),
            "");
  EXPECT_EQ(cfg.sources, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(cfg.lanes(), 2u);
  EXPECT_EQ(cfg.dest.port, 5000);  // lane 0, for code that knows of one
  EXPECT_EQ(cfg.lane_name(0), "127.0.0.1:5000");
  EXPECT_EQ(cfg.lane_name(1), "10.0.0.2:6000");
  EXPECT_EQ(cfg.stripe_mb, 0u);
  SenderConfig dev;
  ASSERT_EQ(parse({"--transport", "device", "--device", "/dev/a", "--device", "/dev/b", "x"}, &dev),
            "");
  ASSERT_EQ(dev.lanes(), 2u);
  EXPECT_EQ(dev.device, "/dev/a");
  EXPECT_EQ(dev.lane_name(1), "device /dev/b");
}

TEST(SenderConfig, LaneDownPolicy) {
  SenderConfig by_default;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "x"}, &by_default), "");
  EXPECT_EQ(by_default.lane_down, LaneDownPolicy::kStop);
  SenderConfig go_on;
  ASSERT_EQ(
      parse({"--dest", "127.0.0.1:5000", "--lanes", "2", "--lane-down", "continue", "x"}, &go_on),
      "");
  EXPECT_EQ(go_on.lane_down, LaneDownPolicy::kContinue);
}

TEST(SenderConfig, LanesFromConsecutivePorts) {
  SenderConfig cfg;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:65533", "--lanes", "3", "x"}, &cfg), "");
  ASSERT_EQ(cfg.lanes(), 3u);
  EXPECT_EQ(cfg.lane_name(0), "127.0.0.1:65533");
  EXPECT_EQ(cfg.lane_name(2), "127.0.0.1:65535");
  SenderConfig one;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "--lanes", "1", "x"}, &one), "");
  EXPECT_EQ(one.lanes(), 1u);
}

TEST(SenderConfig, DestinationsFromAConfigFile) {
  const testing::ScratchDir dir("send_lanes");
  const auto path = dir.path() / "send.conf";
  {
    std::ofstream f(path);
    f << "dest = [\"127.0.0.1:5000\", \"127.0.0.1:5001\"]\nstripe-mb = 8\n";
  }
  SenderConfig cfg;
  EXPECT_EQ(parse({"--config", path.string(), "x"}, &cfg), "");
  EXPECT_EQ(cfg.lanes(), 2u);
  EXPECT_EQ(cfg.lane_name(1), "127.0.0.1:5001");
  EXPECT_EQ(cfg.stripe_mb, 8u);
  // The command line wins over the file.
  SenderConfig over;
  EXPECT_EQ(parse({"--config", path.string(), "--dest", "127.0.0.1:7000", "x"}, &over), "");
  EXPECT_EQ(over.lanes(), 1u);
  EXPECT_EQ(over.lane_name(0), "127.0.0.1:7000");
}

TEST(SenderConfig, LanesToDifferentHostsSendWholeFilesUnlessStripingIsAskedFor) {
  SenderConfig one_host;
  ASSERT_EQ(parse({"--dest", "10.0.0.1:5000", "--dest", "10.0.0.1:5001", "a"}, &one_host), "");
  EXPECT_EQ(one_host.stripe_mb, 64u);
  EXPECT_TRUE(one_host.stripe_note.empty());
  SenderConfig two_hosts;
  ASSERT_EQ(parse({"--dest", "10.0.1.1:5000", "--dest", "10.0.2.1:5000", "a"}, &two_hosts), "");
  EXPECT_EQ(two_hosts.stripe_mb, 0u) << "they may be two receivers: no file striped across them";
  EXPECT_NE(two_hosts.stripe_note.find("every file goes whole"), std::string::npos);
  SenderConfig nics;
  ASSERT_EQ(parse({"--dest", "10.0.1.1:5000", "--dest", "10.0.2.1:5000", "--stripe-mb", "64", "a"},
                  &nics),
            "");
  EXPECT_EQ(nics.stripe_mb, 64u) << "two NICs of one receiver, as the operator says";
}

TEST(SenderConfig, BadLanesAreOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--dest", "127.0.0.1:5000", "--dest", "127.0.0.1:5000", "x"},
       "--dest: 127.0.0.1:5000 given twice: each lane needs a destination of its own"},
      {{"--dest", "127.0.0.1:5000", "--dest", "127.0.0.1:5001", "--lanes", "2", "x"},
       "--lanes: takes one --dest (the first of the lanes' ports), got 2"},
      {{"--dest", "127.0.0.1:5000", "--lanes", "0", "x"}, "--lanes: Value 0 not in range 1 to 64"},
      {{"--dest", "127.0.0.1:5000", "--lanes", "65", "x"}, "--lanes: Value 65 not in range"},
      {{"--dest", "127.0.0.1:65534", "--lanes", "3", "x"},
       "--lanes: 3 lanes from port 65534 go past port 65535"},
      {{"--transport", "device", "--device", "/dev/a", "--device", "/dev/a", "x"},
       "--device: /dev/a given twice"},
      {{"--transport", "device", "--device", "/dev/a", "--lanes", "2", "x"},
       "--lanes: 2 lanes with --transport device: give --device once per lane instead (got 1)"},
      {{"--dest", "127.0.0.1:5000", "--stripe-mb", "-1", "x"}, "--stripe-mb"},
  };
  for (const auto& [args, want] : cases) {
    SenderConfig cfg;
    const std::string err = parse(args, &cfg);
    EXPECT_NE(err.find(want), std::string::npos) << want << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  // More lanes than a session may have, from --dest.
  std::vector<std::string> many;
  for (int i = 0; i <= static_cast<int>(common::kMaxLanes); ++i) {
    many.push_back("--dest");
    many.push_back("127.0.0.1:" + std::to_string(5000 + i));
  }
  many.push_back("x");
  SenderConfig cfg;
  EXPECT_EQ(parse(many, &cfg), "--dest: 65 destinations: at most 64 lanes");
}

TEST(SenderConfig, ShardFromTheCommandLineOrAConfigFile) {
  SenderConfig none;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "x"}, &none), "");
  EXPECT_FALSE(none.shard.enabled());
  SenderConfig cfg;
  ASSERT_EQ(parse({"--dest", "127.0.0.1:5000", "--shard", "1/2", "x"}, &cfg), "");
  EXPECT_EQ(cfg.shard.index, 1u);
  EXPECT_EQ(cfg.shard.count, 2u);
  EXPECT_EQ(hot_folder_options(cfg).shard.to_string(), "1/2");
  const testing::ScratchDir dir("send_shard");
  const auto path = dir.path() / "send.conf";
  std::ofstream(path) << "shard = \"2/3\"\n";
  SenderConfig file;
  EXPECT_EQ(parse({"--config", path.string(), "--dest", "127.0.0.1:5000", "x"}, &file), "");
  EXPECT_EQ(file.shard.to_string(), "2/3");
  std::ofstream(path) << "shard = \"3/3\"\n";
  SenderConfig bad;
  EXPECT_EQ(parse({"--config", path.string(), "--dest", "127.0.0.1:5000", "x"}, &bad),
            "--shard: 3/3: K counts from 0 and must be below N (the 3 shards are 0/3 to 2/3)");
}

TEST(SenderConfig, BadShardIsOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3/3", "--shard: 3/3: K counts from 0 and must be below N (the 3 shards are 0/3 to 2/3)"},
      {"1",
       "--shard: '1' is not K/N (this host takes shard K of N, counted from 0: 0/2 and 1/2 for "
       "two hosts)"},
      {"0/0", "--shard: 0/0: N, the number of shards, must be at least 1"},
      {"a/b",
       "--shard: 'a/b' is not K/N (this host takes shard K of N, counted from 0: 0/2 and 1/2 for "
       "two hosts)"},
      {"", "--shard: '' is not K/N"},
  };
  for (const auto& [value, want] : cases) {
    SenderConfig cfg;
    const std::string err = parse({"--dest", "127.0.0.1:5000", "--shard", value, "x"}, &cfg);
    EXPECT_EQ(err.rfind(want, 0), 0u) << value << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(DftsArgs, SingleDashSpellingsAreTranslated) {
  const char* argv[] = {"dd_file_send", "-fsinterval", "100", "-fsdelay", "0",
                        "-NOSLEEPALG",  "-fsinternal", "5",   "--",       "-NOSLEEPALG"};
  const auto out = translate_dfts_args(10, argv);
  EXPECT_EQ(out,
            (std::vector<std::string>{"dd_file_send", "--fsinterval", "100", "--fsdelay", "0",
                                      "--no-sleep-alg", "--fsinterval", "5", "--", "-NOSLEEPALG"}));
}

TEST(DftsArgs, ParsedIntoTheConfig) {
  SenderConfig cfg;
  CLI::App app;
  add_sender_options(app, cfg);
  const char* argv[] = {"dd_file_send", "x", "--dest",      "127.0.0.1:1", "-fsinterval", "100",
                        "-fsdelay",     "0", "--sleep-alg", "-NOSLEEPALG", "--file-lock", "Y",
                        "--report",     "v"};
  const auto args = translate_dfts_args(14, argv);
  std::vector<const char*> ptrs;
  for (const auto& a : args) ptrs.push_back(a.c_str());
  app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  finalize_sender_config(cfg);
  EXPECT_EQ(cfg.fs_interval_mb, 100u);
  EXPECT_EQ(cfg.fs_delay_ms, 0u);
  EXPECT_FALSE(cfg.sleep_alg);  // the later -NOSLEEPALG wins
  EXPECT_TRUE(cfg.file_lock);
  EXPECT_EQ(cfg.report, ReportOption::kVerbose);
}

}  // namespace
}  // namespace ddft::sender
