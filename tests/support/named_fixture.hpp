// The "every file named" tests' fixture, shared by the tests of a receiver that restarts, is
// down or misses files: real binaries on loopback, a source and an output folder, and what
// became of every file by the receive logs, the failed folder and dd_reconcile.
//
// Header-only; for integration tests (DDFT_SEND_BIN, DDFT_RECEIVE_BIN and DDFT_RECONCILE).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/files.hpp"
#include "support/process.hpp"
#include "support/receiver_fixture.hpp"

namespace ddft::testing {

// One failure record of the receiver's failed folder.
struct Record {
  std::filesystem::path file;
  std::string name;    // "name": the file's path as the sender sent it
  std::string reason;  // "reason"
  uint64_t bytes_received = 0;
};

// A string member of a record (the receiver writes one member a line). The names and reasons of
// these tests hold no quote or backslash, so the escapes JSON allows are not decoded.
inline std::string json_member(const std::string& text, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\"" + key + "\": \"((?:[^\"\\\\]|\\\\.)*)\""))) {
    return "";
  }
  return m[1];
}

inline std::vector<Record> read_records(const std::filesystem::path& out) {
  std::vector<Record> recs;
  for (const std::filesystem::path& p : failed_records(out)) {
    const std::string text = read_file(p);
    Record r;
    r.file = p;
    r.name = json_member(text, "name");
    r.reason = json_member(text, "reason");
    std::smatch m;
    if (std::regex_search(text, m, std::regex(R"("bytes_received": (\d+))"))) {
      r.bytes_received = std::stoull(m[1]);
    }
    recs.push_back(std::move(r));
  }
  return recs;
}

// The paths of the receive log's "File: PATH, ... Passed" lines, one entry per line.
inline std::vector<std::string> passed_paths(const std::string& log) {
  static const std::regex file(R"(File: (.*), Trans: [\d,]+ \(bytes\), .*, (B2B|SHA256) Passed$)");
  std::vector<std::string> out;
  std::istringstream in(log);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, file)) out.push_back(m[1]);
  }
  return out;
}

// Writes `size` pseudo-random bytes (from `seed`) to `p`, creating its folder, as write_pattern()
// does but generating only the bytes asked for: write_pattern() makes a whole MiB of pattern per
// file, too slow for thousands of small files.
inline void write_small(const std::filesystem::path& p, size_t size, uint64_t seed) {
  std::filesystem::create_directories(p.parent_path());
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> words(size / 8 + 1);
  for (auto& w : words) w = rng();
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(size));
}

// What became of every file, from the logs and the failed folder.
struct Outcome {
  std::set<std::string> delivered;       // logged Passed once and byte-identical to its source
  std::map<std::string, Record> failed;  // named by exactly one record
  size_t passed_lines = 0;
  size_t records = 0;
  std::vector<std::string> problems;  // one line each: a file not named once, a stranger, ...
};

// dd_reconcile's summary: outcome -> count ("delivered", "failed", "never seen", ...).
struct Reconciled {
  int exit_code = -1;
  std::map<std::string, int> counts;
  std::string report;
  // The report's line for `path` (the first with a column that is exactly it), or "". The
  // paths of these tests hold no space.
  std::string line_of(const std::string& path) const {
    std::istringstream in(report);
    for (std::string line; std::getline(in, line);) {
      std::istringstream cols(line);
      for (std::string col; cols >> col;) {
        if (col == path) return line;
      }
    }
    return "";
  }
};

class Named : public ReceiverFixture {
 protected:
  explicit Named(std::string tag = "named") : ReceiverFixture(std::move(tag)) {}
  void SetUp() override {
    ReceiverFixture::SetUp();
    src_ = make_dir("src");
    out_ = make_dir("out");
  }
  void TearDown() override {
    sender_.reset();
    receiver_.reset();
    link_.reset();
    ReceiverFixture::TearDown();
  }

  // Starts a receiver on port_ writing into out_ and logging to `log`; waits for its start line.
  void start_receiver(const std::filesystem::path& log, std::vector<std::string> extra,
                      bool once = true) {
    std::vector<std::string> argv = {DDFT_RECEIVE_BIN, "--listen",
                                     "127.0.0.1:" + std::to_string(port_), "--output",
                                     out_.string(), "--socket-buffer-mb", "32", "--file-timeout",
                                     // A lost final heartbeat ends the session after this
                                     // silence, not after the default 30 s.
                                     "5"};
    if (once) argv.push_back("--once");
    argv.insert(argv.end(), extra.begin(), extra.end());
    start_receiver_process(argv, log, std::chrono::seconds(20));
  }
  // Starts the sender to `dest_port` (port_ when 0) with a manifest, not waiting for it.
  void start_sender(std::vector<std::string> args, uint16_t dest_port = 0) {
    std::vector<std::string> argv = {DDFT_SEND_BIN, "--dest",
                                     "127.0.0.1:" + std::to_string(dest_port ? dest_port : port_),
                                     "--manifest", manifest().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    sender_ = std::make_unique<Process>(argv, base_ / "send.log");
  }
  std::filesystem::path manifest() const { return base_ / "sent.jsonl"; }
  std::string tx_log() const { return read_file(base_ / "send.log"); }

  // Checks that each of `paths` (relative to src_) was delivered byte for byte or named by
  // exactly one record, and that nothing else was: logs are the receive logs, oldest first.
  Outcome account(const std::vector<std::string>& paths,
                  const std::vector<std::filesystem::path>& logs) {
    Outcome o;
    const std::set<std::string> sent(paths.begin(), paths.end());
    std::map<std::string, int> passed;
    for (const std::filesystem::path& l : logs) {
      for (const std::string& p : passed_paths(read_file(l))) {
        ++passed[p];
        ++o.passed_lines;
      }
    }
    std::map<std::string, std::vector<Record>> named;
    for (Record& r : read_records(out_)) {
      ++o.records;
      if (r.name.empty()) {
        o.problems.push_back(r.file.string() + ": a record that names no file");
        continue;
      }
      named[r.name].push_back(std::move(r));
    }
    for (const auto& [p, n] : passed) {
      if (!sent.count(p)) o.problems.push_back(p + ": logged Passed, but never sent");
    }
    for (const auto& [name, recs] : named) {
      if (!sent.count(name)) o.problems.push_back(name + ": named by a record, but never sent");
    }
    for (const std::string& p : paths) {
      const int times_passed = passed.count(p) ? passed[p] : 0;
      const size_t times_named = named.count(p) ? named[p].size() : 0;
      if (times_passed + times_named != 1) {
        std::string what = p + ": logged Passed " + std::to_string(times_passed) +
                           " time(s), named by " + std::to_string(times_named) + " record(s)";
        if (times_named) {
          for (const Record& r : named[p]) what += "; \"" + r.reason + "\"";
        }
        o.problems.push_back(what);
        continue;
      }
      if (times_passed == 1) {
        if (same_content(src_ / p, out_ / p)) {
          o.delivered.insert(p);
        } else {
          o.problems.push_back(p + ": logged Passed, but the output differs from its source");
        }
      } else {
        o.failed.emplace(p, named[p].front());
        if (std::filesystem::exists(out_ / p))
          o.problems.push_back(p + ": named as failed, yet in place");
      }
    }
    return o;
  }
  static std::string first_problems(const Outcome& o) {
    std::string s;
    for (size_t i = 0; i < std::min<size_t>(o.problems.size(), 20); ++i) {
      s += o.problems[i] + "\n";
    }
    if (o.problems.size() > 20)
      s += "... and " + std::to_string(o.problems.size() - 20) + " more\n";
    return s;
  }

  // dd_reconcile over the sender's manifest and `logs`.
  Reconciled reconcile(const std::vector<std::filesystem::path>& logs) {
    std::vector<std::string> argv = {DDFT_RECONCILE, manifest().string()};
    for (const std::filesystem::path& l : logs) argv.push_back(l.string());
    const std::filesystem::path report = base_ / "reconcile.txt";
    std::filesystem::remove(report);
    Reconciled r;
    r.exit_code = run(argv, report, std::chrono::seconds(60));
    r.report = read_file(report);
    static const std::regex count(
        R"(^  (delivered|delivered on resend|already delivered|key mismatch|failed|refused|filtered|unfinished|never seen|not sent|not in manifest) +(\d+)$)");
    std::istringstream in(r.report);
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (std::regex_match(line, m, count)) r.counts[m[1]] = std::stoi(m[2]);
    }
    return r;
  }
  // dd_reconcile says every manifest line was delivered or failed, as `o` says.
  void expect_reconciled(const Reconciled& r, const Outcome& o, size_t files) {
    EXPECT_EQ(r.exit_code, o.failed.empty() ? 0 : 1) << r.report;
    EXPECT_EQ(r.counts.at("delivered"), static_cast<int>(o.delivered.size())) << r.report;
    EXPECT_EQ(r.counts.at("failed"), static_cast<int>(o.failed.size())) << r.report;
    EXPECT_EQ(r.counts.at("delivered") + r.counts.at("failed"), static_cast<int>(files));
    for (const char* none : {"unfinished", "never seen", "key mismatch", "refused", "filtered",
                             "not sent", "not in manifest"}) {
      EXPECT_EQ(r.counts.at(none), 0) << none << "\n" << r.report;
    }
  }

  std::filesystem::path src_, out_;
  std::unique_ptr<Process> sender_;
  std::unique_ptr<Process> link_;
};

}  // namespace ddft::testing
