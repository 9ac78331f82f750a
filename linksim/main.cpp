// dd_linksim: a UDP relay that misbehaves like a real one-way link, for tests and rehearsals.
// Kernel netem is not available everywhere; this stands on its own.
//
//   dd_file_send --dest 127.0.0.1:47556  ->  dd_linksim --listen 127.0.0.1:47556
//                                             --forward 127.0.0.1:47555 --loss 1 --seed 7
//                                        ->  dd_file_receive --listen 127.0.0.1:47555
//
// It runs until SIGINT/SIGTERM (or --idle-exit seconds without a datagram once one has come),
// then prints what it did, one line, on stdout.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <thread>
#include <vector>

#include "common/cli_exit.hpp"
#include "common/clock.hpp"
#include "common/logging.hpp"
#include "common/protocol.hpp"
#include "common/rate_limiter.hpp"
#include "common/signals.hpp"
#include "common/udp_transport.hpp"
#include "common/version.hpp"
#include "linksim/link_model.hpp"

namespace {
using namespace ddft;
using namespace std::chrono;

constexpr size_t kBatch = 64;
constexpr size_t kMaxHeld = 4096;

struct Options {
  std::string listen_text;
  std::string forward_text;
  linksim::Impairments imp;
  double rate_mb = 0;
  size_t socket_buffer_mb = 64;
  double idle_exit_s = 0;
  // --outage START SECONDS: from START seconds after the first datagram, every datagram is
  // lost for SECONDS (a cable pulled and put back).
  std::vector<double> outage;
  common::LogConfig log;
};

std::string summary(const linksim::LinkStats& s, uint64_t forwarded, uint64_t outage_drops) {
  const auto pct = [&](uint64_t n) {
    return s.packets ? 100.0 * static_cast<double>(n) / static_cast<double>(s.packets) : 0.0;
  };
  return fmt::format(
      "dd_linksim: {} packets in, {} out; dropped {} ({:.3f}%: {} at random, {} in {} burst(s), "
      "longest {}); duplicated {}, corrupted {}, reordered {}{}",
      s.packets, forwarded, s.dropped(), pct(s.dropped()), s.dropped_random, s.dropped_burst,
      s.bursts, s.longest_burst, s.duplicated, s.corrupted, s.reordered,
      outage_drops > 0 ? fmt::format("; {} lost in the outage", outage_drops) : "");
}

// Declares dd_linksim's options on `app`, stored into `o`.
void add_options(CLI::App& app, Options& o) {
  app.set_version_flag("--version", std::string("dd_linksim ") + common::kVersion);
  app.add_option("--listen,-l", o.listen_text, "Receive on HOST:PORT")->required();
  app.add_option("--forward,-f", o.forward_text, "Send on to HOST:PORT")->required();
  app.add_option("--loss", o.imp.loss_pct, "Random loss, percent of packets")
      ->capture_default_str();
  app.add_option("--burst-loss", o.imp.burst_loss_pct,
                 "Share of packets lost in bursts (Gilbert-Elliott), percent")
      ->capture_default_str();
  app.add_option("--burst-len", o.imp.burst_len, "Mean burst length, packets")
      ->capture_default_str();
  app.add_option("--burst-max", o.imp.burst_max, "Longest burst, packets; 0 = no cap")
      ->capture_default_str();
  app.add_option("--duplicate", o.imp.duplicate_pct, "Packets sent twice, percent")
      ->capture_default_str();
  app.add_option("--corrupt", o.imp.corrupt_pct, "Packets with one bit flipped, percent")
      ->capture_default_str();
  app.add_option("--reorder", o.imp.reorder_pct, "Packets held back, percent")
      ->capture_default_str();
  app.add_option("--reorder-depth", o.imp.reorder_depth,
                 "A held-back packet goes out after this many later ones")
      ->capture_default_str();
  app.add_option("--rate", o.rate_mb, "Rate cap in MB/s (2^20 bytes); 0 = none")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", o.imp.seed, "Random seed: the same seed and input give the same run")
      ->capture_default_str();
  app.add_option("--socket-buffer-mb", o.socket_buffer_mb, "Socket buffers to ask for, MiB")
      ->check(CLI::Range(size_t{0}, size_t{1024}))
      ->capture_default_str();
  app.add_option("--idle-exit", o.idle_exit_s,
                 "Exit after this many seconds without a datagram, once one has come; 0 = never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--outage", o.outage,
                 "START SECONDS: lose every datagram for SECONDS, from START seconds after the "
                 "first one")
      ->expected(2)
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quiet,-q", o.log.quiet, "No log lines (the summary is still printed)");
}

// The relay loop: takes batches of datagrams from a source, passes each through the link model
// (drop, flip a bit, hold back, duplicate) and sends what survives to the sink under the rate
// cap. Runs on the calling thread; every reference must outlive it.
class Relay {
 public:
  // `forwarded` counts the datagrams sent on (duplicates included), for the summary.
  Relay(const Options& o, linksim::LinkModel& model, common::UdpSink& sink,
        common::RateLimiter& limiter, const std::stop_source& stop, uint64_t& forwarded,
        uint64_t& outage_drops)
      : o_(o),
        outage_drops_(outage_drops),
        model_(model),
        sink_(sink),
        limiter_(limiter),
        stop_(stop),
        forwarded_(forwarded),
        slab_(kBatch * common::kMaxDatagramSize),
        bufs_(kBatch),
        lens_(kBatch) {
    for (size_t i = 0; i < kBatch; ++i) {
      bufs_[i] = {slab_.data() + i * common::kMaxDatagramSize, common::kMaxDatagramSize};
    }
  }

  // Relays until stop is requested or, with --idle-exit, the link has been idle that long after
  // a first datagram. Throws std::system_error if receiving fails.
  void run(common::UdpSource& source) {
    auto last_packet = steady_clock::now();
    bool any = false;
    while (!stop_.stop_requested()) {
      size_t got = 0;
      const auto ec = source.receive(bufs_, lens_, &got, milliseconds(20));
      if (ec) throw std::system_error(ec, "receive failed");
      if (got == 0) {
        // Idle: whatever is held back goes out now (a real link does not keep packets forever).
        while (!held_.empty()) release_front();
        if (!out_.empty()) send();
        if (any && o_.idle_exit_s > 0 &&
            steady_clock::now() - last_packet > duration<double>(o_.idle_exit_s)) {
          break;
        }
        continue;
      }
      if (!any) first_packet_ = steady_clock::now();
      any = true;
      last_packet = steady_clock::now();
      if (in_outage(last_packet)) {
        outage_drops_ += got;
        continue;
      }
      relay_batch(got);
      send();
    }
  }

 private:
  struct Held {
    std::vector<uint8_t> data;
    uint64_t release_after = 0;  // `forwarded` count at which it goes out
  };

  // Whether --outage loses what arrives at `now`.
  bool in_outage(steady_clock::time_point now) const {
    if (o_.outage.size() != 2) return false;
    const double t = duration<double>(now - first_packet_).count();
    return t >= o_.outage[0] && t < o_.outage[0] + o_.outage[1];
  }

  // The model's verdict on each of the first `got` datagrams in bufs_, queued into out_.
  void relay_batch(size_t got) {
    for (size_t i = 0; i < got; ++i) {
      const size_t len = std::min(lens_[i], bufs_[i].size());
      uint8_t* d = bufs_[i].data();
      const linksim::Verdict v = model_.next(len);
      if (v.drop) continue;
      if (v.flip_bit >= 0) d[v.flip_bit / 8] ^= static_cast<uint8_t>(1u << (v.flip_bit % 8));
      if (v.reorder) {
        if (held_.size() >= kMaxHeld) release_front();
        held_.push_back({std::vector<uint8_t>(d, d + len), forwarded_ + o_.imp.reorder_depth});
        continue;
      }
      pass_on({d, len});
      if (v.duplicate) pass_on({d, len});
      while (!held_.empty() && held_.front().release_after <= forwarded_) release_front();
    }
  }

  void pass_on(std::span<const uint8_t> d) {
    out_.push_back(d);
    ++forwarded_;
  }

  // The oldest held-back packet goes out with this batch (its buffer moves, it is not copied).
  void release_front() {
    released_.push_back(std::move(held_.front().data));
    held_.pop_front();
    pass_on(released_.back());
  }

  // Sends out_ under the rate cap, then empties it.
  void send() {
    size_t bytes = 0;
    for (const auto& d : out_) bytes += d.size();
    limiter_.acquire(bytes);
    size_t done = 0;
    while (done < out_.size() && !stop_.stop_requested()) {
      size_t sent = 0;
      const auto ec = sink_.send(std::span(out_).subspan(done), &sent);
      done += sent;
      if (ec == std::errc::no_buffer_space) {
        std::this_thread::sleep_for(microseconds(200));
      } else if (ec) {
        // Like a link: what cannot be delivered is gone. Say so once a second at most.
        if (steady_clock::now() - last_failure_log_ > seconds(1)) {
          spdlog::warn("Warn: forwarding failed: {}", ec.message());
          last_failure_log_ = steady_clock::now();
        }
        ++done;
      }
    }
    out_.clear();
    released_.clear();
  }

  const Options& o_;
  uint64_t& outage_drops_;
  steady_clock::time_point first_packet_{};
  linksim::LinkModel& model_;
  common::UdpSink& sink_;
  common::RateLimiter& limiter_;
  const std::stop_source& stop_;
  uint64_t& forwarded_;
  std::vector<uint8_t> slab_;
  std::vector<std::span<uint8_t>> bufs_;  // kBatch receive buffers in slab_
  std::vector<size_t> lens_;
  std::deque<Held> held_;
  std::vector<std::span<const uint8_t>> out_;   // going out with this batch
  std::vector<std::vector<uint8_t>> released_;  // held packets going out in this batch
  steady_clock::time_point last_failure_log_ = steady_clock::now() - seconds(2);
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "dd_linksim: a UDP relay that loses, bursts, reorders, duplicates, corrupts and "
      "rate-caps datagrams, repeatably (--seed)"};
  add_options(app, o);
  try {
    app.parse(argc, argv);
    if (const auto why = o.imp.check()) throw CLI::ValidationError(*why);
  } catch (const CLI::ParseError& e) {
    return common::usage_exit(app, e);
  }
  common::Endpoint listen;
  common::Endpoint forward;
  std::string why;
  if (!common::parse_endpoint(o.listen_text, &listen, &why) ||
      !common::parse_endpoint(o.forward_text, &forward, &why)) {
    std::fprintf(stderr, "dd_linksim: error: %s\n", why.c_str());
    return 2;
  }
  common::setup_logging(o.log, "dd_linksim");

  linksim::LinkModel model(o.imp);
  uint64_t forwarded = 0;
  uint64_t outage_drops = 0;
  try {
    common::UdpSource source(listen, o.socket_buffer_mb << 20);
    common::UdpSink sink(forward, o.socket_buffer_mb << 20);
    common::RateLimiter limiter(common::SteadyClock::instance(), o.rate_mb * 1024.0 * 1024.0);
    std::stop_source stop;
    common::StopOnSignals on_signal(stop);
    spdlog::info("Info: relaying {} -> {}", listen.to_string(), forward.to_string());
    Relay(o, model, sink, limiter, stop, forwarded, outage_drops).run(source);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dd_linksim: error: %s\n", e.what());
    std::printf("%s\n", summary(model.stats(), forwarded, outage_drops).c_str());
    return 1;
  }
  std::printf("%s\n", summary(model.stats(), forwarded, outage_drops).c_str());
  std::fflush(stdout);
  return 0;
}
