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
