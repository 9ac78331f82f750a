#include "common/cli_options.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <stdexcept>

namespace ddft::common {

namespace {

bool same_letters(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

size_t find_choice(const std::vector<std::string>& names, std::string_view text,
                   ChoiceCase letters) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (letters == ChoiceCase::kExact ? names[i] == text : same_letters(names[i], text)) return i;
  }
  return names.size();
}

CLI::Validator choice_check(std::vector<std::string> names, ChoiceCase letters) {
  // The set as CLI11's IsMember prints it, in --help and in the error line alike.
  std::string set = "{";
  for (size_t i = 0; i < names.size(); ++i) set += (i == 0 ? "" : ",") + names[i];
  set += "}";
  return CLI::Validator(
      [names = std::move(names), letters, set](std::string& text) {
        return find_choice(names, text, letters) < names.size() ? std::string()
                                                                : text + " not in " + set;
      },
      set);
}

void add_config_file_option(CLI::App& app) {
  app.set_config("--config", "", "Read options from this file (TOML or INI, option = value)");
  // A misspelt setting must stop the program, not be silently ignored.
  app.allow_config_extras(CLI::config_extras_mode::error);
}

CLI::Option* add_transport_option(CLI::App& app, TransportKind& kind) {
  return add_choice_option(
      app, "--transport", kind,
      named_choices({TransportKind::kUdp, TransportKind::kDevice}, transport_name),
      "udp (simulator mode, a plain NIC) or device (the diode card driver's node)");
}

CLI::Option* add_offload_option(CLI::App& app, const std::string& name, bool& on,
                                const std::string& help) {
  return add_choice_option<bool>(app, name, on, {{"auto", true}, {"off", false}}, help);
}

CLI::Option* add_endpoints_option(CLI::App& app, const std::string& name,
                                  std::vector<Endpoint>& endpoints, const std::string& help,
                                  PortZero zero, const TransportKind& transport) {
  // The option's name as CLI11 prints it ("--dest" for "--dest,-d"), known once it is added.
  auto shown = std::make_shared<std::string>();
  auto take = [&endpoints, &transport, shown, zero](const std::vector<std::string>& texts) {
    endpoints.clear();
    if (transport != TransportKind::kUdp) return;
    for (const std::string& text : texts) {
      Endpoint e;
      std::string error;
      if (!parse_endpoint(text, &e, &error)) throw CLI::ValidationError(*shown, error);
      if (zero == PortZero::kRefused && e.port == 0) {
        throw CLI::ValidationError(*shown, "port 0 is not a destination");
      }
      endpoints.push_back(e);
    }
  };
  CLI::Option* opt = app.add_option_function<std::vector<std::string>>(name, take, help)
                         ->expected(1)
                         ->allow_extra_args(false)
                         ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  *shown = opt->get_name();
  return opt;
}

CLI::Option* add_devices_option(CLI::App& app, std::vector<std::string>& devices,
                                const std::string& help) {
  return app.add_option("--device", devices, help)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void require_devices(const std::vector<std::string>& devices) {
  if (devices.empty()) {
    throw CLI::ValidationError("--device", "--transport device needs --device PATH");
  }
}

bool add_consecutive_ports(std::vector<Endpoint>* lanes, size_t n) {
  if (n == 0 || lanes->empty()) return false;
  const Endpoint first = lanes->front();
  if (first.port == 0 || first.port + (n - 1) > 65535) return false;
  for (size_t i = 1; i < n; ++i) {
    Endpoint e = first;
    e.port = static_cast<uint16_t>(first.port + i);
    lanes->push_back(e);
  }
  return true;
}

Key load_key_option(const std::string& path) {
  try {
    return load_key_file(path);
  } catch (const std::exception& e) {
    throw CLI::ValidationError("--key-file", e.what());
  }
}

PathFilter path_filter_option(std::vector<std::string> includes,
                              std::vector<std::string> excludes) {
  try {
    return PathFilter(std::move(includes), std::move(excludes));
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());  // "--exclude '[a': unclosed '['"
  }
}

}  // namespace ddft::common
