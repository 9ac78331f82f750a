#include "iotest/cli.hpp"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "common/logging.hpp"
#include "common/signals.hpp"
#include "common/version.hpp"
#include "iotest/disk.hpp"

namespace ddft::iotest {
namespace {

std::string join(const std::vector<unsigned>& v) { return fmt::format("{}", fmt::join(v, ",")); }

// Asks one question until `accept` takes the answer (an empty answer means the default).
// `accept` throws std::invalid_argument with the reason a value is refused.
template <typename Accept>
void ask(std::istream& in, std::ostream& out, const std::string& question, Accept accept) {
  for (;;) {
    out << question << std::flush;
    std::string line;
    if (!std::getline(in, line)) {
      throw std::runtime_error("input ended before every question was answered");
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    try {
      accept(line);
      return;
    } catch (const std::invalid_argument& e) {
      out << "  " << e.what() << "\n";
    }
  }
}

template <typename T>
T parse_number(const std::string& text, const char* what, T lo, T hi) {
  // Parsed wide and range-checked before narrowing, so that nothing wraps; nan and inf refused.
  long double v = 0;
  size_t used = 0;
  try {
    if (!text.empty() && text[0] != '-' && text[0] != '+' && text[0] != ' ') {
      v = std::is_floating_point_v<T> ? std::stold(text, &used)
                                      : static_cast<long double>(std::stoull(text, &used));
    }
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw std::invalid_argument(fmt::format("{}: '{}' is not a number", what, text));
  }
  if (v < static_cast<long double>(lo) || v > static_cast<long double>(hi)) {
    throw std::invalid_argument(fmt::format("{}: {} is outside {}..{}", what, text, lo, hi));
  }
  return static_cast<T>(v);
}

bool parse_bool(const std::string& text) {
  if (text == "true" || text == "on" || text == "yes" || text == "y") return true;
  if (text == "false" || text == "off" || text == "no" || text == "n") return false;
  throw std::invalid_argument(fmt::format("direct IO: '{}' is not true or false", text));
}

}  // namespace

namespace {

// The questions of prompt_params about the run: the folder, the file size, the timeout and the
// number of runs per setting.
void prompt_run_params(std::istream& in, std::ostream& out, Params& p) {
  const bool write = p.kind == Kind::kWrite;
  ask(in, out, "Please enter the drive/path you wish to test (ie:  /mnt/data/ ):  ",
      [&](const std::string& a) {
        struct stat st {};
        if (a.empty()) throw std::invalid_argument("a path is needed");
        if (::stat(a.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
          throw std::invalid_argument(fmt::format("'{}' is not a folder", a));
        }
        p.path = a;
      });
  out << "  File to be " << (write ? "written" : "read") << ":  " << p.path << "/\n\n";
  ask(in, out,
      fmt::format("Please enter the size of file you wish to {} (in MB, default {}):  ",
                  write ? "write" : "read", p.size_mb),
      [&](const std::string& a) {
        if (!a.empty()) p.size_mb = parse_number<uint64_t>(a, "file size", 1, uint64_t{1} << 24);
      });
  out << "  File size:  " << p.size_mb << "MB.\n\n";
  ask(in, out,
      fmt::format("Please enter the timeout length (secs) per run (default {} secs): ",
                  p.timeout_s),
      [&](const std::string& a) {
        if (!a.empty()) p.timeout_s = parse_number<double>(a, "timeout", 0.1, 86400);
      });
  out << "  Timeout:  " << p.timeout_s << " seconds.\n\n";
  ask(in, out,
      fmt::format("Please enter the number of runs to perform for each setting (default {}): ",
                  p.runs),
      [&](const std::string& a) {
        if (!a.empty()) p.runs = parse_number<unsigned>(a, "runs", 1, 100);
      });
  out << "  Number of runs per iteration:  " << p.runs << "\n\n";
}

// The questions of prompt_params about the sweep: block sizes and thread counts.
void prompt_sweep_params(std::istream& in, std::ostream& out, Params& p) {
  const bool write = p.kind == Kind::kWrite;
  out << "Test if buffer size used in " << (write ? "writes to" : "reads from")
      << " disk affect performance.\n";
  ask(in, out,
      fmt::format("Please enter a buffer array to attempt (default:  '{}')\nSize in KB, comma "
                  "delimited: ",
                  join(p.block_kb)),
      [&](const std::string& a) {
        if (!a.empty()) p.block_kb = parse_list(a, "buffer sizes", kMinBlockKb, kMaxBlockKb);
        check_block_sizes(p.block_kb);
      });
  out << "  " << p.block_kb.size() << " Buffer Size values (KB):  " << join(p.block_kb) << ".\n\n";
  out << "Test if multiple " << (write ? "writers" : "readers")
      << " offer performance benefit when "
      << (write ? "saving a block to" : "reading a block from") << " disk.\n";
  ask(in, out,
      fmt::format("Please enter a {} thread array to attempt (default:  '{}'): ",
                  write ? "writer" : "reader", join(p.threads)),
      [&](const std::string& a) {
        if (!a.empty()) p.threads = parse_list(a, "thread counts", 1, kMaxThreads);
      });
  out << "  " << p.threads.size() << " Thread values:  " << join(p.threads) << ".\n\n";
}

// The questions of prompt_params that only the write test asks: files at once, direct I/O and
// the write mode.
void prompt_write_params(std::istream& in, std::ostream& out, Params& p) {
  ask(in, out,
      fmt::format("How many files would you like to create concurrently for IO test (default "
                  "{})?\nNote:  number of files will never exceed number of writer threads during "
                  "tests.\n",
                  p.files),
      [&](const std::string& a) {
        if (!a.empty()) p.files = parse_number<unsigned>(a, "files", 1, kMaxThreads);
      });
  out << "  " << p.files << " files will be created in test:  " << p.files << ".\n\n";
  ask(in, out,
      fmt::format("Test using Direct IO, past the page cache (default {}):  ",
                  p.direct ? "true" : "false"),
      [&](const std::string& a) {
        if (!a.empty()) p.direct = parse_bool(a);
      });
  out << "  Use DirectIO = " << (p.direct ? "true" : "false") << ".\n\n";
  ask(in, out,
      fmt::format("Mode used to open up files (rw/rws/rwd -- default {}):  ",
                  common::write_mode_name(p.mode)),
      [&](const std::string& a) {
        if (!a.empty()) p.mode = parse_mode(a);
      });
  out << "  Mode used = " << common::write_mode_name(p.mode) << ".\n\n";
}

}  // namespace

void prompt_params(std::istream& in, std::ostream& out, Params& p) {
  const bool write = p.kind == Kind::kWrite;
  out << (write ? "Entering Write TestIO." : "Entering Read TestIO.")
      << " This will run a series of tests on the file system to\nattempt to discover the optimal "
         "values for # of "
      << (write ? "writer" : "reader") << " threads and " << (write ? "write" : "read")
      << " block\nsize for your system. The test is both IO intensive and CPU intensive. Please\n"
         "give the test adequate time to complete.\n\n";
  prompt_run_params(in, out, p);
  prompt_sweep_params(in, out, p);
  if (write) prompt_write_params(in, out, p);
}

namespace {

// The options that are text on the command line, before they become Params.
struct OptionText {
  std::string test = "write";
  std::string block;
  std::string threads;
  std::string direct = "on";
  std::string mode = "rw";
  std::string json_path;
};

// The help's description line: for the stand-alone program (no `kind`) or one switch.
std::string app_description(std::optional<Kind> kind) {
  return kind == Kind::kRead ? "Disk read self-test: the sender's reader over a sweep of "
                               "block sizes and reader threads"
         : kind == Kind::kWrite
             ? "Disk write self-test: the receiver's writer over a sweep of block sizes and "
               "writer threads"
             : "Disk IO self-test: finds the block size and thread count at which this "
               "disk writes (receiver) or reads (sender) fastest, through the programs' own "
               "IO code. Run on a terminal with no options, it asks for each setting.";
}

// Declares the self-test's options on `app`, stored into `p` and `t`. `standalone`: dd_iotest
// itself, which also has --version and --test.
void add_iotest_options(CLI::App& app, Params& p, OptionText& t, bool standalone,
                        const std::string& prog) {
  if (standalone) {
    // Only the stand-alone program: under --test-io, --version is the host program's.
    app.set_version_flag("--version", prog + " " + common::kVersion);
    app.add_option("--test", t.test, "write (for dd_file_receive) or read (for dd_file_send)")
        ->check(CLI::IsMember({"write", "read"}))
        ->capture_default_str();
  }
  app.add_option("--path,-p", p.path, "Folder to test (the test files are made and removed there)");
  app.add_option("--size-mb", p.size_mb,
                 "Bytes moved per run, MB (2^20); above the RAM for an "
                 "honest figure")
      ->capture_default_str();
  app.add_option("--timeout", p.timeout_s, "Seconds per run before it is cut short")
      ->capture_default_str();
  app.add_option("--runs", p.runs, "Runs per setting; the table shows their average")
      ->capture_default_str();
  app.add_option("--block-kb", t.block, "Buffer (block) sizes to try, KB, comma-separated")
      ->capture_default_str();
  app.add_option("--threads", t.threads, "Thread counts to try, comma-separated")
      ->capture_default_str();
  app.add_option("--files", p.files,
                 "Files written at once (never more than the threads; write test)")
      ->capture_default_str();
  app.add_option("--direct-io", t.direct,
                 "on: O_DIRECT for whole blocks as the receiver does; "
                 "off: through the page cache (write test)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--mode", t.mode, "File mode as --write-mode: rw, rwd, rws (write test)")
      ->capture_default_str();
  app.add_option("--queue-depth", p.queue_depth,
                 "Requests in flight per thread (default: the program's own, 32 write / 4 read)");
  app.add_option("--json", t.json_path,
                 "Also write the figures as JSON to this file ('-': "
                 "stdout, the report then goes to stderr)");
}

// Completes `p` from the option text, asks for every setting when no option but --test was
// given (`given` == 0) on a terminal, and validates it. Throws with the reason a value is refused.
void settle_params(Params& p, const OptionText& t, size_t given) {
  p.block_kb = parse_list(t.block, "buffer sizes", kMinBlockKb, kMaxBlockKb);
  p.threads = parse_list(t.threads, "thread counts", 1, kMaxThreads);
  if (p.kind == Kind::kWrite) p.direct = t.direct == "on";
  p.mode = parse_mode(t.mode);
  if (given == 0 && ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO)) {
    prompt_params(std::cin, std::cout, p);
  }
  validate(p);
}

// Runs the sweep of `p`, each run's figure on stderr, until done or `stop` is requested. Throws
// what the disk runner throws (its test files removed).
Sweep measure(const Params& p, const std::stop_source& stop) {
  DiskRunner runner(p, stop.get_token());
  return run_sweep(
      p, [&](unsigned b, unsigned t, unsigned f) { return runner.run(b, t, f); },
      [&] { return stop.stop_requested(); },
      [&](const Cell& c, unsigned run, const RunOutcome& o) {
        std::fprintf(stderr, "  %u KB x %u thread(s), run %u/%u: %.1f MB/s%s\n", c.block_kb,
                     c.threads, run + 1, p.runs, mb_per_s(o), o.timed_out ? " (timed out)" : "");
      });
}

// Prints the table and the recommendation to `report` and, with --json, writes the figures to
// `json_file` (or stdout for "-"). Returns the exit status: 0, 1 if the JSON cannot be written,
// 130 if the sweep was interrupted.
int report_sweep(const Params& p, const Sweep& sweep, std::vector<std::string> warnings,
                 std::FILE* report, const std::string& json_path, std::ofstream& json_file,
                 const std::string& prog) {
  unsigned timeouts = 0;
  for (const Cell& c : sweep.cells) timeouts += c.timeouts;
  if (timeouts > 0) {
    warnings.push_back(
        fmt::format("{} run(s) hit the {} s timeout (cells marked *): their figures "
                    "cover only what was moved until then; give a longer --timeout",
                    timeouts, p.timeout_s));
  }
  std::fputs("\n", report);
  std::fputs(format_table(sweep).c_str(), report);
  if (timeouts > 0) std::fprintf(report, "Warning: %s\n", warnings.back().c_str());
  const Recommendation rec = recommend(sweep);
  if (sweep.interrupted) {
    std::fputs(
        "Interrupted: the test files were removed; the table shows the settings measured "
        "so far.\n",
        report);
  } else {
    std::fputs(format_recommendation(sweep, rec).c_str(), report);
  }
  std::fflush(report);
  if (!json_path.empty()) {
    const std::string doc = to_json(sweep, rec, warnings);
    if (json_path == "-") {
      std::fputs(doc.c_str(), stdout);
    } else {
      json_file << doc;
      if (!json_file.flush()) {
        std::fprintf(stderr, "%s: error: cannot write '%s'\n", prog.c_str(), json_path.c_str());
        return 1;
      }
    }
  }
  return sweep.interrupted ? 130 : 0;
}

}  // namespace

int iotest_main(int argc, char** argv, const std::string& prog, std::optional<Kind> kind) {
  // The programs' own log lines (the reader's errors, the signal notice) go to stderr: stdout
  // carries the report, or the JSON with --json -. A closed pipe must not kill a run mid-way
  // (its files would stay): writes then fail instead.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("iotest"));
  spdlog::set_pattern("%v");
  std::signal(SIGPIPE, SIG_IGN);
  Params p;
  OptionText t;
  t.block = join(p.block_kb);
  t.threads = join(p.threads);
  CLI::App app{app_description(kind)};
  app.name(prog);
  add_iotest_options(app, p, t, !kind, prog);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 2;
  }
  p.kind = kind ? *kind : (t.test == "read" ? Kind::kRead : Kind::kWrite);
  if (p.kind == Kind::kRead) p.direct = false;
  size_t given = 0;  // options other than --test: none, on a terminal, means "ask"
  for (const CLI::Option* o : app.get_options()) {
    if (!o->check_lname("test")) given += o->count();
  }
  std::FILE* report = t.json_path == "-" ? stderr : stdout;
  Preflight pre;
  std::ofstream json_file;
  try {
    settle_params(p, t, given);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 2;
  }
  try {
    pre = preflight(p);
    if (!t.json_path.empty() && t.json_path != "-") {
      json_file.open(t.json_path, std::ios::trunc);
      if (!json_file) throw std::runtime_error(fmt::format("cannot write '{}'", t.json_path));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 2;
  }
  std::fputs(format_params(p).c_str(), report);
  for (const std::string& w : pre.warnings) std::fprintf(report, "Warning: %s\n", w.c_str());
  std::fflush(report);

  std::stop_source stop;
  common::StopOnSignals on_signal(stop);
  Sweep sweep;
  try {
    sweep = measure(p, stop);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s (the test files were removed)\n", prog.c_str(), e.what());
    return 1;
  }
  return report_sweep(p, sweep, pre.warnings, report, t.json_path, json_file, prog);
}

const char* switch_flag(Kind kind) { return kind == Kind::kWrite ? "--test-io" : "--test-read-io"; }

void add_switch_help(CLI::App& app, Kind kind) {
  const bool write = kind == Kind::kWrite;
  app.add_flag(switch_flag(kind))
      ->description(fmt::format("Run the disk {} self-test instead, through this program's {} ({} "
                                "--help for its options)",
                                write ? "write" : "read", write ? "writer" : "reader",
                                switch_flag(kind)))
      ->group("Self-test");
}

std::optional<int> run_if_requested(int argc, char** argv, Kind kind) {
  const std::string flag = switch_flag(kind);
  std::vector<char*> rest;
  bool found = false;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && flag == argv[i]) {
      found = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!found) return std::nullopt;
  const std::string prog = std::string(argc > 0 ? ::basename(argv[0]) : "ddft") + " " + flag;
  return iotest_main(static_cast<int>(rest.size()), rest.data(), prog, kind);
}

}  // namespace ddft::iotest
