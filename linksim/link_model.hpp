// dd_linksim's link: what happens to each datagram, decided by a seeded random stream so that a
// run repeats exactly. Pure logic (no sockets, no clock) so the tests can check its statistics.
//
// Loss: independent random loss (--loss) plus bursts from a two-state Gilbert-Elliott model: in
// the good state packets pass (but for --loss); in the bad state every packet is lost. The model
// is given as the long-run share of packets lost in bursts (--burst-loss) and the mean burst
// length (--burst-len), optionally capped (--burst-max); from them p(good->bad) and p(bad->good)
// follow. Then: duplication, bit flips, and reordering (a packet held back behind the next
// --reorder-depth packets).
//
// One thread uses a LinkModel (dd_linksim's forwarding loop). Impairments::check() names a bad
// setting instead of throwing; nothing here throws.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace ddft::linksim {

struct Impairments {
  double loss_pct = 0;        // independent random loss
  double burst_loss_pct = 0;  // long-run share of packets lost in bursts
  double burst_len = 0;       // mean burst length, packets (>= 1 when burst_loss_pct > 0)
  unsigned burst_max = 0;     // cap on a burst's length, packets; 0 = none
  double duplicate_pct = 0;
  double corrupt_pct = 0;  // one random bit flipped
  double reorder_pct = 0;
  unsigned reorder_depth = 8;  // a reordered packet goes out after this many later ones
  uint64_t seed = 1;
  // One line naming what is wrong, or nullopt when the settings are usable.
  [[nodiscard]] std::optional<std::string> check() const;
};

struct Verdict {
  bool drop = false;
  bool burst = false;  // dropped by a burst (drop is true too)
  bool duplicate = false;
  bool reorder = false;
  int64_t flip_bit = -1;  // bit to flip, < 8 x length; -1: none
};

struct LinkStats {
  uint64_t packets = 0;
  uint64_t dropped_random = 0;
  uint64_t dropped_burst = 0;
  uint64_t bursts = 0;
  uint64_t longest_burst = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t reordered = 0;
  uint64_t dropped() const { return dropped_random + dropped_burst; }
};

class LinkModel {
 public:
  explicit LinkModel(const Impairments& imp);
  // Decides the fate of the next datagram, `length` bytes long.
  Verdict next(size_t length);
  const LinkStats& stats() const { return stats_; }
  double p_good_to_bad() const { return p_gb_; }
  double p_bad_to_good() const { return p_bg_; }

 private:
  bool chance(double pct) { return pct > 0 && uniform_(rng_) * 100.0 < pct; }

  Impairments imp_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  double p_gb_ = 0;
  double p_bg_ = 1;
  bool bad_ = false;
  uint64_t burst_run_ = 0;
  LinkStats stats_;
};

}  // namespace ddft::linksim
