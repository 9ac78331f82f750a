// The receiver's command line: what a parse leaves in ReceiverConfig, and the one-line errors.
// Kept to behaviour (flags in, values and messages out) so that the config can change inside.
#include "receiver/config.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
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
  EXPECT_EQ(cfg.failed_dir, "/srv/in/.failed");
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

// --sink null writes nothing, so it needs no folder: no --output, and no failed folder made up.
TEST(ReceiverConfig, NullSinkNeedsNoOutput) {
  ReceiverConfig cfg;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "--sink", "null"}, &cfg), "");
  EXPECT_TRUE(cfg.null_sink);
  EXPECT_EQ(cfg.output, "");
  EXPECT_EQ(cfg.failed_dir, "");
  ReceiverConfig with;
  ASSERT_EQ(parse({"--listen", "127.0.0.1:6000", "--sink", "null", "-o", "/o"}, &with), "");
  EXPECT_EQ(with.failed_dir, "/o/.failed");
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
  };
  for (const auto& [args, want] : cases) {
    ReceiverConfig cfg;
    const std::string err = parse(args, &cfg);
    EXPECT_NE(err.find(want), std::string::npos) << args.back() << ": " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace ddft::receiver
