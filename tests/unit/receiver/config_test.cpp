// The receiver's command line: what a parse leaves in ReceiverConfig, and the one-line errors.
// Kept to behaviour (flags in, values and messages out) so that the config can change inside.
#include "receiver/config.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>
#include <vector>

namespace ddft::receiver {
namespace {

// Parses `args` (after the program name) into *cfg and finalizes it. Returns "" or the error's
// message, as main() prints it.
std::string parse(std::vector<std::string> args, ReceiverConfig* cfg) {
  CLI::App app;
  add_receiver_options(app, *cfg);
  args.insert(args.begin(), "dd_file_receive");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
    finalize_receiver_config(*cfg);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(ReceiverConfig, DefaultsAreDurableAndDerivedFromTheOutput) {
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "--output", "/srv/in"}, &cfg), "");
  EXPECT_EQ(cfg.listen.host, "127.0.0.1");
  EXPECT_EQ(cfg.listen.port, 6000);
  EXPECT_EQ(cfg.output, "/srv/in");
  EXPECT_EQ(cfg.state_dir, "/srv/in/.ddft");
  EXPECT_EQ(cfg.failed_dir, "/srv/in/.ddft/failed");
  EXPECT_EQ(cfg.write_mode, WriteMode::kDataSync);
  EXPECT_EQ(cfg.on_collision, CollisionPolicy::kRename);
  EXPECT_FALSE(cfg.once);
  EXPECT_TRUE(cfg.keys.empty());
}

TEST(ReceiverConfig, ChoicesAreParsed) {
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"-l", "[::1]:7000", "-o", "/o", "--write-mode", "rws", "--on-collision",
                   "reject", "--failed-dir", "/f", "--once", "--buffer-mb", "128"},
                  &cfg),
            "");
  EXPECT_EQ(cfg.listen.host, "::1");
  EXPECT_EQ(cfg.write_mode, WriteMode::kFullSync);
  EXPECT_EQ(cfg.on_collision, CollisionPolicy::kReject);
  EXPECT_EQ(cfg.failed_dir, "/f");
  EXPECT_TRUE(cfg.once);
  EXPECT_EQ(cfg.buffer_mb, 128u);
}

TEST(ReceiverConfig, LanesAreListenedOnInTheOrderGiven) {
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"--listen", "10.0.0.1:7000", "--listen", "10.0.1.1:7000", "-o", "/o"}, &cfg),
            "");
  ASSERT_EQ(cfg.lanes(), 2u);
  EXPECT_EQ(cfg.lane_name(1), "10.0.1.1:7000");
  EXPECT_EQ(cfg.listen.host, "10.0.0.1") << "the first lane's";
  ReceiverConfig consecutive;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:7000", "--lanes", "4", "-o", "/o"}, &consecutive), "");
  ASSERT_EQ(consecutive.lanes(), 4u);
  EXPECT_EQ(consecutive.lane_name(3), "127.0.0.1:7003");
  ReceiverConfig devices;
  ASSERT_EQ(parse({"--transport", "device", "--device", "/dev/a", "--device", "/dev/b", "-o", "/o"},
                  &devices),
            "");
  ASSERT_EQ(devices.lanes(), 2u);
  EXPECT_EQ(devices.lane_name(1), "device /dev/b");
  EXPECT_EQ(devices.device, "/dev/a");
}

TEST(ReceiverConfig, ValuesGoStraightIntoTheirFields) {
  ReceiverConfig by_default;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "-o", "/o"}, &by_default), "");
  EXPECT_EQ(by_default.transport, common::TransportKind::kUdp);
  EXPECT_EQ(by_default.io_engine, common::IoEngine::kAuto);
  EXPECT_EQ(by_default.direct_io, DirectIo::kAuto);
  EXPECT_FALSE(by_default.null_sink);
  EXPECT_TRUE(by_default.gro);
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "-o", "/o", "--write-mode", "rw", "--on-collision",
                   "overwrite", "--io-engine", "pwrite", "--direct-io", "off", "--gro", "off"},
                  &cfg),
            "");
  EXPECT_EQ(cfg.write_mode, WriteMode::kBuffered);
  EXPECT_EQ(cfg.on_collision, CollisionPolicy::kOverwrite);
  EXPECT_EQ(cfg.io_engine, common::IoEngine::kPwrite);
  EXPECT_EQ(cfg.direct_io, DirectIo::kOff);
  EXPECT_FALSE(cfg.gro);
  ReceiverConfig other;
  ASSERT_EQ(parse({"-l", "127.0.0.1:6000", "-o", "/o", "--io-engine", "uring", "--direct-io", "on"},
                  &other),
            "");
  EXPECT_EQ(other.io_engine, common::IoEngine::kUring);
  EXPECT_EQ(other.direct_io, DirectIo::kOn);
  // --sink null leaves nothing for an engine to write.
  ReceiverConfig null;
  ASSERT_EQ(parse({"-l", "127.0.0.1:6000", "--sink", "null", "--io-engine", "uring"}, &null), "");
  EXPECT_TRUE(null.null_sink);
  EXPECT_EQ(null.io_engine, common::IoEngine::kNull);
}

// A bad value is refused by the parse, with the line the program prints (tests/cli pins the same
// lines on the real program).
TEST(ReceiverConfig, BadValuesAreTheirOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--transport", "UDP"}, "--transport: UDP not in {udp,device}"},
      {{"--write-mode", "RWD"}, "--write-mode: RWD not in {rw,rwd,rws}"},
      {{"--on-collision", "Rename"}, "--on-collision: Rename not in {rename,overwrite,reject}"},
      {{"--io-engine", "URING"}, "--io-engine: URING not in {auto,uring,pwrite}"},
      {{"--direct-io", "On"}, "--direct-io: On not in {auto,on,off}"},
      {{"--sink", "NULL"}, "--sink: NULL not in {disk,null}"},
      {{"--gro", "yes"}, "--gro: yes not in {auto,off}"},
      {{"--listen", "nonsense"}, "--listen: expected HOST:PORT, got 'nonsense'"},
      {{"-l", "127.0.0.1"}, "--listen: expected HOST:PORT, got '127.0.0.1'"},
      {{"--workers", "65"}, "--workers: Value 65 not in range 0 to 64"},
  };
  for (const auto& [args, want] : cases) {
    std::vector<std::string> argv = {"--listen", "127.0.0.1:6000", "--output", "/o"};
    argv.insert(argv.end(), args.begin(), args.end());
    ReceiverConfig cfg;
    EXPECT_EQ(parse(argv, &cfg), want);
  }
  // --listen names the links of --transport udp: under --transport device it is left alone.
  ReceiverConfig device;
  ASSERT_EQ(
      parse({"--transport", "device", "--device", "/dev/a", "--listen", "nonsense", "-o", "/o"},
            &device),
      "");
  EXPECT_TRUE(device.listens.empty());
  EXPECT_EQ(device.lane_name(0), "device /dev/a");
}

// --sink null writes nothing, so it needs no folder: no --output, and no failed folder made up.
TEST(ReceiverConfig, NullSinkNeedsNoOutput) {
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "--sink", "null"}, &cfg), "");
  EXPECT_TRUE(cfg.null_sink);
  EXPECT_EQ(cfg.output, "");
  EXPECT_EQ(cfg.failed_dir, "");
  EXPECT_EQ(cfg.state_dir, "");
  ReceiverConfig with;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "--sink", "null", "-o", "/o"}, &with), "");
  EXPECT_EQ(with.state_dir, "/o/.ddft");
  EXPECT_EQ(with.failed_dir, "/o/.ddft/failed");
}

TEST(ReceiverConfig, BadInputIsOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--output", "/o"}, "--listen"},
      {{"--listen", "nowhere", "--output", "/o"}, "--listen"},
      {{"--transport", "device", "--output", "/o"}, "--transport device needs --device PATH"},
      {{"--listen", "127.0.0.1:1", "--output", "/o", "--exclude", "[a"}, "unclosed"},
      {{"--listen", "127.0.0.1:1", "--output", "/o", "--buffer-mb", "16"},
       "leaves no room for the receive ring"},
      {{"--listen", "127.0.0.1:1", "--output", "/o", "--key-file", "a", "--key-file", "b",
        "--key-file", "c"},
       "at most two keys"},
      {{"--listen", "127.0.0.1:1", "--output", "/o", "--write-mode", "fast"}, "--write-mode"},
      {{"--listen", "127.0.0.1:1", "--listen", "127.0.0.1:1", "--output", "/o"},
       "127.0.0.1:1 is given twice"},
      {{"--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2", "--lanes", "2", "--output", "/o"},
       "--lanes N takes one --listen"},
      {{"--listen", "127.0.0.1:1", "--lanes", "65", "--output", "/o"}, "at most 64"},
      {{"--listen", "127.0.0.1:65535", "--lanes", "2", "--output", "/o"}, "ports 65535 to 65536"},
      {{"--listen", "127.0.0.1:1"}, "--output is required"},
      {{"--listen", "127.0.0.1:1", "--sink", "disk"}, "--output is required"},
      {{"--listen", "127.0.0.1:1", "--sink", "null", "--failed-dir", "/f"},
       "--failed-dir: needs --output"},
      {{"--listen", "127.0.0.1:1", "--sink", "null", "--state-dir", "/s"},
       "--state-dir: needs --output"},
  };
  for (const auto& [args, want] : cases) {
    ReceiverConfig cfg;
    const std::string err = parse(args, &cfg);
    EXPECT_NE(err.find(want), std::string::npos) << args.back() << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// --state-dir: the failed folder follows it unless --failed-dir is given; it must be on the output
// folder's file system (the nearest existing parent of one not made yet tells) and not the output
// folder itself. Real folders: a temporary one, and /proc (never the same file system).
TEST(ReceiverConfig, TheStateFolderIsOnTheOutputsFileSystem) {
  const std::filesystem::path out = std::filesystem::temp_directory_path();
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"-l", "127.0.0.1:1", "-o", out.string(), "--state-dir",
                   (out / "not-made-yet/state").string()},
                  &cfg),
            "");
  EXPECT_EQ(cfg.state_dir, (out / "not-made-yet/state").string());
  EXPECT_EQ(cfg.failed_dir, (out / "not-made-yet/state/failed").string());
  ReceiverConfig both;
  ASSERT_EQ(parse({"-l", "127.0.0.1:1", "-o", out.string(), "--state-dir", (out / "s").string(),
                   "--failed-dir", "/f"},
                  &both),
            "");
  EXPECT_EQ(both.failed_dir, "/f");
  ReceiverConfig elsewhere;
  EXPECT_EQ(
      parse({"-l", "127.0.0.1:1", "-o", out.string(), "--state-dir", "/proc/ddft"}, &elsewhere),
      "--state-dir: '/proc/ddft' is not on the file system of --output '" + out.string() +
          "' (the receiver moves its failed files and its state by rename)");
  ReceiverConfig itself;
  EXPECT_EQ(
      parse({"-l", "127.0.0.1:1", "-o", out.string(), "--state-dir", out.string() + "/."}, &itself),
      "--state-dir: '" + out.string() +
          "/.' is the output folder: the state needs a folder of its own");
}

}  // namespace
}  // namespace ddft::receiver
