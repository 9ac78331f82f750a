// The self-test's command line and its dialogue: dd_iotest, dd_file_receive --test-io and
// dd_file_send --test-read-io all come here.
//
// Runs on main's thread, which owns the terminal dialogue; the disk runs start their own IO
// threads (iotest/disk.hpp). iotest_main() and run_if_requested() return an exit status and let
// nothing out; prompt_params() throws std::runtime_error when the input ends.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <optional>
#include <string>

#include "iotest/sweep.hpp"

namespace ddft::iotest {

// Runs the self-test with argv (argv[0] is the program's name as shown in messages). With
// `kind` set the test is fixed (the programs' own switches); without it, --test write|read picks.
// Returns the exit status: 0 done, 1 an IO error, 2 bad input, 130 interrupted.
int iotest_main(int argc, char** argv, const std::string& prog, std::optional<Kind> kind);

// The programs' switch: dd_file_receive --test-io (write), dd_file_send --test-read-io (read).
const char* switch_flag(Kind kind);
// When the switch is anywhere in argv, runs the self-test with the other arguments and returns
// its exit status.
std::optional<int> run_if_requested(int argc, char** argv, Kind kind);
// Lists the switch in the program's --help.
void add_switch_help(CLI::App& app, Kind kind);

// Asks for every input on `out`, reading answers from `in`, the seed's dialogue: each question
// shows its default, an empty answer takes it, a bad answer is explained in one line and the
// question asked again. Throws std::runtime_error when the input ends.
void prompt_params(std::istream& in, std::ostream& out, Params& p);

}  // namespace ddft::iotest
