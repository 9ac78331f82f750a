#include "iotest/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <numeric>
#include <stdexcept>

#include "common/block_io.hpp"
#include "common/json.hpp"

namespace ddft::iotest {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const char* kind_name(Kind k) { return k == Kind::kWrite ? "write" : "read"; }

unsigned default_depth(Kind k) {
  return k == Kind::kWrite ? common::kDefaultWriteQueueDepth : common::kDefaultReadQueueDepth;
}

// A cell's figure as printed: one decimal, and a mark when a run hit its timeout.
std::string cell_text(const Cell& c) {
  if (c.runs_mbps.empty()) return "-";
  return fmt::format("{:.1f}{}", c.mean, c.timeouts > 0 ? "*" : "");
}

}  // namespace

unsigned queue_depth_of(const Params& p) {
  return p.queue_depth != 0 ? p.queue_depth : default_depth(p.kind);
}

common::WriteMode parse_mode(std::string_view mode) {
  common::WriteMode m{};
  if (!common::parse_write_mode(mode, &m)) {
    throw std::invalid_argument(fmt::format("file mode '{}' is not rw, rwd or rws", mode));
  }
  return m;
}

size_t write_buffers_for(unsigned block_kb) {
  return std::clamp<size_t>((size_t{1} << 20) / block_kb, 4, kDefaultWriteBuffers);
}

std::vector<unsigned> parse_list(std::string_view text, std::string_view what, unsigned lo,
                                 unsigned hi) {
  std::vector<unsigned> out;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      throw std::invalid_argument(
          fmt::format("{}: '{}' is not a number (give a comma-separated "
                      "list such as {},{})",
                      what, item, lo, std::min(hi, lo * 2)));
    }
    if (v < lo || v > hi) {
      throw std::invalid_argument(fmt::format("{}: {} is outside {}..{}", what, v, lo, hi));
    }
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void check_block_sizes(const std::vector<unsigned>& block_kb) {
  for (unsigned b : block_kb) {
    if (b < kMinBlockKb || b > kMaxBlockKb || b % 4 != 0) {
      throw std::invalid_argument(
          fmt::format("buffer size {} KB: the programs take {}..{} KB in whole 4 KB pages", b,
                      kMinBlockKb, kMaxBlockKb));
    }
  }
}

void validate(const Params& p) {
  if (p.path.empty()) throw std::invalid_argument("no path to test given (--path)");
  if (p.size_mb < 1 || p.size_mb > (uint64_t{1} << 24)) {
    throw std::invalid_argument(fmt::format("file size {} MB is outside 1..16777216", p.size_mb));
  }
  if (!(p.timeout_s >= 0.1 && p.timeout_s <= 86400)) {
    throw std::invalid_argument(fmt::format("timeout {} s is outside 0.1..86400", p.timeout_s));
  }
  if (p.runs < 1 || p.runs > 100) {
    throw std::invalid_argument(fmt::format("runs per setting {} is outside 1..100", p.runs));
  }
  if (p.block_kb.empty() || p.threads.empty()) {
    throw std::invalid_argument("the buffer size and thread lists must not be empty");
  }
  check_block_sizes(p.block_kb);
  for (unsigned t : p.threads) {
    if (t < 1 || t > kMaxThreads) {
      throw std::invalid_argument(fmt::format("thread count {} is outside 1..{}", t, kMaxThreads));
    }
  }
  if (p.files < 1 || p.files > kMaxThreads) {
    throw std::invalid_argument(
        fmt::format("files at once {} is outside 1..{}", p.files, kMaxThreads));
  }
  if (p.kind == Kind::kRead && p.files != 1) {
    throw std::invalid_argument(
        "files at once applies to the write test only: the sender reads "
        "one file at a time");
  }
  const unsigned max_depth = p.kind == Kind::kWrite ? kMaxWriteQueueDepth : kMaxReadQueueDepth;
  if (p.queue_depth > max_depth) {
    throw std::invalid_argument(
        fmt::format("queue depth {} is outside 1..{}", p.queue_depth, max_depth));
  }
}

double mb_per_s(const RunOutcome& r) {
  if (r.seconds <= 0) return 0;
  return static_cast<double>(r.bytes) / (1024.0 * 1024.0) / r.seconds;
}

Sweep run_sweep(const Params& p, const Runner& runner, const std::function<bool()>& stop_requested,
                const Progress& progress) {
  Sweep s;
  s.params = p;
  for (unsigned b : p.block_kb) {
    for (unsigned t : p.threads) {
      Cell c;
      c.block_kb = b;
      c.threads = t;
      c.files = std::min(p.files, t);
      s.cells.push_back(c);
    }
  }
  for (Cell& c : s.cells) {
    for (unsigned run = 0; run < p.runs; ++run) {
      if (stop_requested && stop_requested()) {
        s.interrupted = true;
        return s;
      }
      const RunOutcome o = runner(c.block_kb, c.threads, c.files);
      if (stop_requested && stop_requested()) {  // a run cut short by the stop is not a figure
        s.interrupted = true;
        return s;
      }
      c.runs_mbps.push_back(mb_per_s(o));
      if (o.timed_out) ++c.timeouts;
      c.mean = std::accumulate(c.runs_mbps.begin(), c.runs_mbps.end(), 0.0) /
               static_cast<double>(c.runs_mbps.size());
      if (progress) progress(c, run, o);
    }
  }
  return s;
}

Recommendation recommend(const Sweep& s) {
  Recommendation r;
  std::vector<const Cell*> measured;
  for (const Cell& c : s.cells) {
    if (!c.runs_mbps.empty()) measured.push_back(&c);
  }
  // Cells that ran into their timeout are only candidates when nothing else is.
  std::vector<const Cell*> pool;
  for (const Cell* c : measured) {
    if (c->timeouts == 0) pool.push_back(c);
  }
  if (pool.empty()) pool = measured;
  if (pool.empty()) return r;
  const Cell* best = *std::max_element(
      pool.begin(), pool.end(), [](const Cell* a, const Cell* b) { return a->mean < b->mean; });
  const Cell* pick = best;
  for (const Cell* c : pool) {
    if (c->mean < best->mean * (1 - kTolerance)) continue;
    if (c->threads < pick->threads || (c->threads == pick->threads && c->mean > pick->mean)) {
      pick = c;
    }
  }
  r.valid = true;
  r.block_kb = pick->block_kb;
  r.threads = pick->threads;
  r.mbps = pick->mean;
  r.best_block_kb = best->block_kb;
  r.best_threads = best->threads;
  r.best_mbps = best->mean;
  return r;
}

std::string format_params(const Params& p) {
  std::string out =
      fmt::format("Tests run with the following parameters ({} test):\n", kind_name(p.kind));
  out += fmt::format("        path:  {}\n", p.path);
  out += fmt::format("        size:  {} MB ({} bytes) per run\n", p.size_mb, p.size_mb << 20);
  out += fmt::format("        timeout:  {} s per run\n", p.timeout_s);
  out += fmt::format("        runs per setting:  {}\n", p.runs);
  out += fmt::format("        queue depth:  {} per thread (io_uring)\n", queue_depth_of(p));
  if (p.kind == Kind::kWrite) {
    out += fmt::format("        directIO:  {}\n", p.direct ? "true" : "false");
    out += fmt::format("        file mode:  {}\n", common::write_mode_name(p.mode));
    out += fmt::format("        Max # files to use:  {}\n", p.files);
  } else {
    out +=
        "        directIO:  false (the sender reads through the page cache, dropped before "
        "each run)\n";
    out +=
        "        files:  1 (the sender reads one file at a time; blocks are hashed as it does)\n";
  }
  return out;
}

std::string format_table(const Sweep& s) {
  constexpr int kWidth = 8;
  std::string out = "  # of THREADS  ";
  for (unsigned t : s.params.threads) out += fmt::format("|{:<{}}", t, kWidth - 1);
  while (out.back() == ' ') out.pop_back();
  out += "\nBuffer size KB  ";
  for (size_t i = 0; i < s.params.threads.size(); ++i) out += "+" + std::string(kWidth - 1, '=');
  out += "+\n";
  bool any_timeout = false;
  for (size_t row = 0; row < s.params.block_kb.size(); ++row) {
    out += fmt::format("{:<16}", s.params.block_kb[row]);
    for (size_t col = 0; col < s.params.threads.size(); ++col) {
      const Cell& c = s.at(row, col);
      any_timeout = any_timeout || c.timeouts > 0;
      out += fmt::format("|{:<{}}", cell_text(c), kWidth - 1);
    }
    while (out.back() == ' ') out.pop_back();
    out += "\n";
  }
  out += "(MB/s, MB = 2^20 bytes, average of the runs";
  if (any_timeout) out += "; * a run hit its timeout: the figure covers what it moved until then";
  if (s.interrupted) out += "; - not measured: the test was interrupted";
  out += ")\n";
  return out;
}

namespace {

// The settings that reproduce what was measured, as (option, value) pairs: the swept ones, and
// those the test had to change from the programs' defaults.
std::vector<std::pair<std::string, std::string>> recommended_settings(const Params& p,
                                                                      const Recommendation& r) {
  std::vector<std::pair<std::string, std::string>> out;
  if (p.kind == Kind::kWrite) {
    out.emplace_back("writers", std::to_string(r.threads));
    out.emplace_back("write-block-kb", std::to_string(r.block_kb));
    out.emplace_back("write-mode", std::string(common::write_mode_name(p.mode)));
    out.emplace_back("direct-io", p.direct ? "on" : "off");
    const size_t buffers = write_buffers_for(r.block_kb);
    const size_t pool_mb = buffers * r.block_kb / 1024;
    if (buffers != kDefaultWriteBuffers) out.emplace_back("write-buffers", std::to_string(buffers));
    // The receiver needs its ring beside the write pool: keep the default ring's room.
    if (pool_mb + 8 > kDefaultBufferMb) {
      out.emplace_back("buffer-mb", std::to_string(kDefaultBufferMb + pool_mb));
    }
    if (queue_depth_of(p) != default_depth(p.kind)) {
      out.emplace_back("queue-depth", std::to_string(p.queue_depth));
    }
  } else {
    out.emplace_back("readers", std::to_string(r.threads));
    out.emplace_back("read-block-kb", std::to_string(r.block_kb));
    if (queue_depth_of(p) != default_depth(p.kind)) {
      out.emplace_back("read-queue-depth", std::to_string(p.queue_depth));
    }
  }
  return out;
}

bool is_text_setting(const std::string& key) { return key == "write-mode" || key == "direct-io"; }

}  // namespace

std::string recommended_flags(const Params& p, const Recommendation& r) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : recommended_settings(p, r))
    parts.push_back("--" + key + " " + value);
  return fmt::format("{}", fmt::join(parts, " "));
}

std::vector<std::string> recommended_config_lines(const Params& p, const Recommendation& r) {
  std::vector<std::string> lines;
  for (const auto& [key, value] : recommended_settings(p, r)) {
    lines.push_back(is_text_setting(key) ? fmt::format("{} = \"{}\"", key, value)
                                         : fmt::format("{} = {}", key, value));
  }
  return lines;
}

std::string format_recommendation(const Sweep& s, const Recommendation& r) {
  if (!r.valid) return "No setting was measured: no recommendation.\n";
  const bool write = s.params.kind == Kind::kWrite;
  std::string why =
      r.block_kb == r.best_block_kb && r.threads == r.best_threads
          ? "the fastest setting"
          : fmt::format(
                "within {:.0f}% of the fastest, {} KB x {} thread(s) at {:.1f} MB/s, with "
                "fewer threads",
                kTolerance * 100, r.best_block_kb, r.best_threads, r.best_mbps);
  std::string out = fmt::format("Recommended: {} KB blocks, {} {} thread(s): {:.1f} MB/s ({}).\n",
                                r.block_kb, r.threads, write ? "writer" : "reader", r.mbps, why);
  out += fmt::format("  {} flags:  {}\n", write ? "dd_file_receive" : "dd_file_send",
                     recommended_flags(s.params, r));
  out +=
      fmt::format("  config file lines ({}.conf):\n", write ? "dd_file_receive" : "dd_file_send");
  for (const std::string& line : recommended_config_lines(s.params, r)) out += "    " + line + "\n";
  return out;
}

std::string to_json(const Sweep& s, const Recommendation& r,
                    const std::vector<std::string>& warnings) {
  const Params& p = s.params;
  const auto list = [](const std::vector<unsigned>& v) {
    return fmt::format("[{}]", fmt::join(v, ","));
  };
  std::string out = "{\n";
  out += fmt::format("  \"test\": \"{}\",\n", kind_name(p.kind));
  out += "  \"parameters\": {";
  out += fmt::format("\"path\": {}, \"size_mb\": {}, \"timeout_s\": {}, \"runs\": {}, ",
                     common::json_quote(p.path), p.size_mb, p.timeout_s, p.runs);
  out += fmt::format("\"block_kb\": {}, \"threads\": {}, \"files\": {}, \"direct_io\": {}, ",
                     list(p.block_kb), list(p.threads), p.files,
                     p.kind == Kind::kWrite && p.direct ? "true" : "false");
  out += fmt::format(
      "\"mode\": {}, \"queue_depth\": {}}},\n",
      p.kind == Kind::kWrite ? common::json_quote(common::write_mode_name(p.mode)) : "null",
      queue_depth_of(p));
  out += "  \"unit\": \"MB/s (MB = 2^20 bytes)\",\n";
  out += "  \"cells\": [\n";
  for (size_t i = 0; i < s.cells.size(); ++i) {
    const Cell& c = s.cells[i];
    std::vector<std::string> runs;
    for (double v : c.runs_mbps) runs.push_back(fmt::format("{:.3f}", v));
    out += fmt::format(
        "    {{\"block_kb\": {}, \"threads\": {}, \"files\": {}, \"runs_mbps\": [{}], "
        "\"mean_mbps\": {}, \"timeouts\": {}}}{}\n",
        c.block_kb, c.threads, c.files, fmt::join(runs, ", "),
        c.runs_mbps.empty() ? "null" : fmt::format("{:.3f}", c.mean), c.timeouts,
        i + 1 < s.cells.size() ? "," : "");
  }
  out += "  ],\n";
  if (r.valid) {
    std::vector<std::string> conf;
    for (const std::string& line : recommended_config_lines(p, r))
      conf.push_back(common::json_quote(line));
    out += fmt::format(
        "  \"recommendation\": {{\"block_kb\": {}, \"threads\": {}, \"mbps\": {:.3f}, "
        "\"fastest\": {{\"block_kb\": {}, \"threads\": {}, \"mbps\": {:.3f}}}, "
        "\"flags\": {}, \"config_lines\": [{}]}},\n",
        r.block_kb, r.threads, r.mbps, r.best_block_kb, r.best_threads, r.best_mbps,
        common::json_quote(recommended_flags(p, r)), fmt::join(conf, ", "));
  } else {
    out += "  \"recommendation\": null,\n";
  }
  std::vector<std::string> w;
  for (const std::string& x : warnings) w.push_back(common::json_quote(x));
  out += fmt::format("  \"warnings\": [{}],\n", fmt::join(w, ", "));
  out += fmt::format("  \"interrupted\": {}\n", s.interrupted ? "true" : "false");
  out += "}\n";
  return out;
}

}  // namespace ddft::iotest
