// The options both programs share (common/cli_options.hpp), on an app of the test's own: what a
// parse leaves in the typed fields, the one-line errors, and what --help shows.
#include "common/cli_options.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {

enum class Colour { kRed, kGreen, kBlue };

// Parses `args` (after the program name) with `app`. Returns "" or the error's message, as the
// programs print it.
std::string parse_options(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

std::vector<Choice<Colour>> colours() {
  return {{"red", Colour::kRed}, {"green", Colour::kGreen}, {"blue", Colour::kBlue}};
}

TEST(CliOptions, AChoiceGoesStraightIntoItsField) {
  Colour c = Colour::kGreen;
  CLI::App app;
  add_choice_option(app, "--colour", c, colours(), "A colour");
  ASSERT_EQ(parse_options(app, {"--colour", "blue"}), "");
  EXPECT_EQ(c, Colour::kBlue);
  Colour untouched = Colour::kGreen;
  CLI::App none;
  add_choice_option(none, "--colour", untouched, colours(), "A colour");
  ASSERT_EQ(parse_options(none, {}), "");
  EXPECT_EQ(untouched, Colour::kGreen);
}

TEST(CliOptions, AChoiceOutsideTheSetIsOneLine) {
  for (const std::string bad : {"Blue", "purple", ""}) {
    Colour c = Colour::kRed;
    CLI::App app;
    add_choice_option(app, "--colour", c, colours(), "A colour");
    EXPECT_EQ(parse_options(app, {"--colour", bad}),
              "--colour: " + bad + " not in {red,green,blue}");
    EXPECT_EQ(c, Colour::kRed);
  }
}

TEST(CliOptions, AChoiceInAnyCaseTakesEveryCaseAndNamesTheSetAsWritten) {
  for (const std::string given : {"N", "n"}) {
    bool on = true;
    CLI::App app;
    add_choice_option<bool>(app, "--lock", on, {{"Y", true}, {"N", false}}, "Lock",
                            ChoiceCase::kAnyCase);
    ASSERT_EQ(parse_options(app, {"--lock", given}), "") << given;
    EXPECT_FALSE(on) << given;
  }
  bool on = false;
  CLI::App app;
  add_choice_option<bool>(app, "--lock", on, {{"Y", true}, {"N", false}}, "Lock",
                          ChoiceCase::kAnyCase);
  EXPECT_EQ(parse_options(app, {"--lock", "yes"}), "--lock: yes not in {Y,N}");
}

TEST(CliOptions, HelpShowsTheSetAndTheDefault) {
  Colour c = Colour::kGreen;
  int n = 7;
  CLI::App app;
  add_choice_option(app, "--colour", c, colours(), "A colour");
  add_bounded_option(app, "--count", n, 1, 9, "A count");
  const std::string help = app.help();
  EXPECT_NE(help.find("--colour TEXT:{red,green,blue}=green"), std::string::npos) << help;
  EXPECT_NE(help.find("--count INT:INT in [1 - 9]=7"), std::string::npos) << help;
}

TEST(CliOptions, ABoundedNumberOutsideItsRangeIsOneLine) {
  size_t n = 4;
  CLI::App app;
  add_bounded_option(app, "--batch", n, 1, 1024, "Batch");
  EXPECT_EQ(parse_options(app, {"--batch", "0"}), "--batch: Value 0 not in range 1 to 1024");
  EXPECT_EQ(n, 4u);
  CLI::App ok;
  add_bounded_option(ok, "--batch", n, 1, 1024, "Batch");
  ASSERT_EQ(parse_options(ok, {"--batch", "1024"}), "");
  EXPECT_EQ(n, 1024u);
}

TEST(CliOptions, TransportAndOffloads) {
  TransportKind kind = TransportKind::kUdp;
  bool gso = true;
  CLI::App app;
  add_transport_option(app, kind);
  add_offload_option(app, "--gso", gso, "Offload");
  ASSERT_EQ(parse_options(app, {"--transport", "device", "--gso", "off"}), "");
  EXPECT_EQ(kind, TransportKind::kDevice);
  EXPECT_FALSE(gso);
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--transport", "UDP"}, "--transport: UDP not in {udp,device}"},
      {{"--gso", "on"}, "--gso: on not in {auto,off}"},
      {{"--gso", "AUTO"}, "--gso: AUTO not in {auto,off}"},
  };
  for (const auto& [args, want] : bad) {
    TransportKind k = TransportKind::kUdp;
    bool on = true;
    CLI::App a;
    add_transport_option(a, k);
    add_offload_option(a, "--gso", on, "Offload");
    EXPECT_EQ(parse_options(a, args), want);
  }
}

// An app with --transport, --dest (port 0 refused), --device and positional sources.
struct Links {
  TransportKind transport = TransportKind::kUdp;
  std::vector<Endpoint> dests;
  std::vector<std::string> devices;
  std::vector<std::string> sources;
  CLI::App app;
  Links() {
    add_config_file_option(app);
    add_transport_option(app, transport);
    add_endpoints_option(app, "--dest,-d", dests, "Where", PortZero::kRefused, transport);
    add_devices_option(app, devices, "Devices");
    app.add_option("sources", sources);
  }
};

TEST(CliOptions, EndpointsInTheOrderGivenOneValueEach) {
  Links l;
  ASSERT_EQ(parse_options(l.app, {"--dest", "10.0.0.1:5000", "a", "-d", "[::1]:6000", "b"}), "");
  ASSERT_EQ(l.dests.size(), 2u);
  EXPECT_EQ(l.dests[0].to_string(), "10.0.0.1:5000");
  EXPECT_EQ(l.dests[1].host, "::1");
  EXPECT_EQ(l.dests[1].port, 6000);
  EXPECT_EQ(l.sources, (std::vector<std::string>{"a", "b"}));
}

TEST(CliOptions, ABadEndpointIsOneLineUnderItsLongName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"nonsense", "--dest: expected HOST:PORT, got 'nonsense'"},
      {"[::1", "--dest: expected [ADDRESS]:PORT, got '[::1'"},
      {"h:70000", "--dest: expected HOST:PORT with a port from 0 to 65535, got 'h:70000'"},
      {"h:0", "--dest: port 0 is not a destination"},
  };
  for (const auto& [value, want] : cases) {
    Links l;
    EXPECT_EQ(parse_options(l.app, {"-d", value}), want);
  }
  // Port 0 where the program allows it (a socket bound to any free port).
  TransportKind udp = TransportKind::kUdp;
  std::vector<Endpoint> listens;
  CLI::App app;
  add_endpoints_option(app, "--listen", listens, "Where", PortZero::kAllowed, udp);
  ASSERT_EQ(parse_options(app, {"--listen", "127.0.0.1:0"}), "");
  ASSERT_EQ(listens.size(), 1u);
  EXPECT_EQ(listens[0].port, 0);
}

TEST(CliOptions, EndpointsAreNotLinksUnderTheDeviceTransport) {
  Links l;
  ASSERT_EQ(parse_options(l.app, {"--dest", "nonsense", "--transport", "device", "--device", "/a",
                                  "--device", "/b", "x"}),
            "");
  EXPECT_TRUE(l.dests.empty());
  EXPECT_EQ(l.devices, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(l.sources, (std::vector<std::string>{"x"}));
}

TEST(CliOptions, EndpointsFromAConfigFileUnlessTheCommandLineGivesThem) {
  testing::ScratchDir dir("cli_options");
  const auto conf = dir.path() / "links.conf";
  std::ofstream(conf) << "dest = [\"127.0.0.1:5000\", \"127.0.0.1:5001\"]\n";
  Links from_file;
  ASSERT_EQ(parse_options(from_file.app, {"--config", conf.string()}), "");
  ASSERT_EQ(from_file.dests.size(), 2u);
  EXPECT_EQ(from_file.dests[1].port, 5001);
  Links over;
  ASSERT_EQ(parse_options(over.app, {"--config", conf.string(), "--dest", "127.0.0.1:7000"}), "");
  ASSERT_EQ(over.dests.size(), 1u);
  EXPECT_EQ(over.dests[0].port, 7000);
  // The transport from the file counts as the command line's does.
  std::ofstream(conf) << "transport = \"device\"\ndest = \"nonsense\"\ndevice = \"/a\"\n";
  Links device;
  ASSERT_EQ(parse_options(device.app, {"--config", conf.string()}), "");
  EXPECT_EQ(device.transport, TransportKind::kDevice);
  EXPECT_TRUE(device.dests.empty());
  // A key that names no option stops the parse.
  std::ofstream(conf) << "no-such-option = 1\n";
  Links extra;
  EXPECT_NE(parse_options(extra.app, {"--config", conf.string()}), "");
}

TEST(CliOptions, ConsecutivePorts) {
  std::vector<Endpoint> lanes = {{"h", 65533}};
  ASSERT_TRUE(add_consecutive_ports(&lanes, 3));
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes[2].to_string(), "h:65535");
  std::vector<Endpoint> one = {{"h", 5}};
  ASSERT_TRUE(add_consecutive_ports(&one, 1));
  EXPECT_EQ(one.size(), 1u);
  std::vector<Endpoint> past = {{"h", 65534}};
  EXPECT_FALSE(add_consecutive_ports(&past, 3));
  EXPECT_EQ(past.size(), 1u) << "left untouched";
  std::vector<Endpoint> zero = {{"h", 0}};
  EXPECT_FALSE(add_consecutive_ports(&zero, 2));
  std::vector<Endpoint> none;
  EXPECT_FALSE(add_consecutive_ports(&none, 2));
  EXPECT_FALSE(add_consecutive_ports(&one, 0));
}

// The finalize helpers' one lines.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(CliOptions, FinalizeHelpersThrowOneLine) {
  EXPECT_EQ(error_of([] { require_devices({}); }),
            "--device: --transport device needs --device PATH");
  EXPECT_EQ(error_of([] { require_devices({"/dev/a"}); }), "");
  EXPECT_EQ(error_of([] { load_key_option("/nonexistent/k"); }),
            "--key-file: key file '/nonexistent/k' cannot be read: No such file or directory");
  EXPECT_EQ(error_of([] { path_filter_option({}, {"[a"}); }), "--exclude '[a': unclosed '['");
  EXPECT_EQ(error_of([] { path_filter_option({"*.txt"}, {"*.tmp"}); }), "");
}

TEST(CliOptions, FindChoice) {
  const std::vector<std::string> names = {"b2b", "sha256"};
  EXPECT_EQ(find_choice(names, "sha256", ChoiceCase::kExact), 1u);
  EXPECT_EQ(find_choice(names, "SHA256", ChoiceCase::kExact), names.size());
  EXPECT_EQ(find_choice(names, "SHA256", ChoiceCase::kAnyCase), 1u);
  EXPECT_EQ(find_choice(names, "sha25", ChoiceCase::kAnyCase), names.size());
  EXPECT_EQ(find_choice(names, "", ChoiceCase::kAnyCase), names.size());
}

}  // namespace
}  // namespace ddft::common
