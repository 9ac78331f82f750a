// How the programs end on a bad command line: CLI11 prints what to say, and the status is 2, as
// for other command-line tools (not CLI11's own 105, 106, ...), so that scripts can tell a usage
// error from a failed transfer.
//
// For main(), after a failed parse; throws nothing.
#pragma once

#include <CLI/CLI.hpp>

namespace ddft::common {

inline constexpr int kUsageExit = 2;

// Prints `e` as CLI11 does (--help and --version too) and returns the exit status: 0 for
// --help and --version, kUsageExit for anything else.
inline int usage_exit(const CLI::App& app, const CLI::Error& e) {
  return app.exit(e) == 0 ? 0 : kUsageExit;
}

}  // namespace ddft::common
