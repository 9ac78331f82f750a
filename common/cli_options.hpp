// The command-line options dd_file_send and dd_file_receive share, and the pieces each program's
// config builds its own options from: a value is turned into its enum, number or endpoint once,
// by the option itself, and a bad one stops the parse with CLI11's one line "--name: reason".
//
// Start-up only, on main's thread. Every add_* function registers options on an app that the
// caller parses; a field bound to an option must outlive the parse, which writes it. A bad value
// is a CLI::ParseError thrown by the parse; the finalize helpers (devices, keys, globs) throw
// CLI::ValidationError with one line; add_consecutive_ports() returns false.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/path_filter.hpp"
#include "common/seal.hpp"
#include "common/transport.hpp"

namespace ddft::common {

// How a choice's spellings compare with what is given.
enum class ChoiceCase {
  kExact,    // "udp" only
  kAnyCase,  // "b2b", "B2B" and "B2b" alike
};

// One value an option may take, as the command line and a config file spell it.
template <typename T>
struct Choice {
  std::string name;
  T value;
};

// One choice for each of `values`, spelt as name(value) spells it (write_mode_name, ...).
template <typename T, typename Name>
std::vector<Choice<T>> named_choices(std::initializer_list<T> values, Name name) {
  std::vector<Choice<T>> out;
  for (const T& v : values) out.push_back({std::string(name(v)), v});
  return out;
}

// The index in `names` of the one `text` names under `letters`, or names.size() when none does.
size_t find_choice(const std::vector<std::string>& names, std::string_view text,
                   ChoiceCase letters);

// A check that refuses a value not in `names` with CLI11's own line "VALUE not in {a,b,c}" (the
// option's name goes before it); --help shows the set after the type, TEXT:{a,b,c}.
CLI::Validator choice_check(std::vector<std::string> names, ChoiceCase letters);

// Adds option `name` taking one of `choices`, written straight into `target` (an enum or a bool)
// when the parse runs the option. --help shows TEXT:{a,b,c}=D, D the spelling of target's value
// now (nothing when no choice has it). Returns the option, for a group or other settings.
template <typename T>
CLI::Option* add_choice_option(CLI::App& app, const std::string& name, T& target,
                               std::vector<Choice<T>> choices, const std::string& help,
                               ChoiceCase letters = ChoiceCase::kExact) {
  std::vector<std::string> names;
  std::string shown;
  for (const Choice<T>& c : choices) {
    names.push_back(c.name);
    if (shown.empty() && c.value == target) shown = c.name;
  }
  // The check runs first: the callback only ever sees one of the names.
  auto take = [&target, choices, names, letters](const std::string& text) {
    const size_t i = find_choice(names, text, letters);
    if (i < choices.size()) target = choices[i].value;
  };
  return app.add_option_function<std::string>(name, take, help)
      ->check(choice_check(names, letters))
      ->default_str(shown);
}

// Adds option `name` for a number from `low` to `high` into `target`; --help shows the type, the
// range and the default (target's value now), and a value outside is refused with CLI11's line
// "--name: Value V not in range LOW to HIGH".
template <typename T>
CLI::Option* add_bounded_option(CLI::App& app, const std::string& name, T& target,
                                std::type_identity_t<T> low, std::type_identity_t<T> high,
                                const std::string& help) {
  return app.add_option(name, target, help)->check(CLI::Range(low, high))->capture_default_str();
}

// --config FILE: options read from a TOML or INI file (option = value), the command line winning;
// a key that names no option stops the parse.
void add_config_file_option(CLI::App& app);

// --transport udp|device into `kind`.
CLI::Option* add_transport_option(CLI::App& app, TransportKind& kind);

// An offload switch (--gso, --gro): auto (true: the kernel's offload when it takes it) or off
// (false) into `on`.
CLI::Option* add_offload_option(CLI::App& app, const std::string& name, bool& on,
                                const std::string& help);

// Whether port 0 may be given as an endpoint: a socket bound there takes any free port, while
// a destination cannot be port 0.
enum class PortZero { kAllowed, kRefused };

// Adds option `name` HOST:PORT, the links of --transport udp: given once per link (one value each
// time: what follows a value is not another one), parsed into `endpoints` in the order given (a
// config file's list when the command line gives none). A value that is not HOST:PORT (or
// [ADDRESS]:PORT) is refused with "--name: expected HOST:PORT, got 'VALUE'", port 0 under
// PortZero::kRefused with "--name: port 0 is not a destination". Under --transport device the
// values are not links: they are left alone and `endpoints` stays empty. `transport` is the
// field add_transport_option() fills, on the same app and added before this option (CLI11 runs
// the options in the order they were added, once every value is in).
CLI::Option* add_endpoints_option(CLI::App& app, const std::string& name,
                                  std::vector<Endpoint>& endpoints, const std::string& help,
                                  PortZero zero, const TransportKind& transport);

// --device PATH, given once per link (one value each time), into `devices`.
CLI::Option* add_devices_option(CLI::App& app, std::vector<std::string>& devices,
                                const std::string& help);

// Throws "--device: --transport device needs --device PATH" when `devices` is empty.
void require_devices(const std::vector<std::string>& devices);

// --lanes N (at least 1) from one endpoint: appends the ports after lanes[0]'s, so that `lanes`
// (which holds only that one) becomes PORT..PORT+N-1. False, and `lanes` untouched, when any of
// them would not be a port (above 65535, or the first is 0), or when N is 0 or `lanes` empty.
bool add_consecutive_ports(std::vector<Endpoint>* lanes, size_t n);

// load_key_file(path), its failure thrown as "--key-file: REASON".
Key load_key_option(const std::string& path);

// PathFilter(includes, excludes), a bad pattern thrown as its one line ("--exclude '[a': ...").
PathFilter path_filter_option(std::vector<std::string> includes, std::vector<std::string> excludes);

}  // namespace ddft::common
