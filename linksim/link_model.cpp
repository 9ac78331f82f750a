#include "linksim/link_model.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddft::linksim {

std::optional<std::string> Impairments::check() const {
  const auto pct = [](double v) { return v >= 0 && v <= 100; };
  if (!pct(loss_pct)) return fmt::format("--loss {} is outside 0..100", loss_pct);
  if (!pct(burst_loss_pct) || burst_loss_pct >= 100) {
    return fmt::format("--burst-loss {} is outside 0..100 (100 excluded)", burst_loss_pct);
  }
  if (burst_loss_pct > 0 && burst_len < 1) {
    return "--burst-loss needs --burst-len of at least 1 packet";
  }
  if (!pct(duplicate_pct)) return fmt::format("--duplicate {} is outside 0..100", duplicate_pct);
  if (!pct(corrupt_pct)) return fmt::format("--corrupt {} is outside 0..100", corrupt_pct);
  if (!pct(reorder_pct)) return fmt::format("--reorder {} is outside 0..100", reorder_pct);
  if (reorder_pct > 0 && reorder_depth < 1) return "--reorder-depth must be at least 1";
  return std::nullopt;
}

LinkModel::LinkModel(const Impairments& imp) : imp_(imp), rng_(imp.seed) {
  if (imp.burst_loss_pct > 0) {
    // Long-run share in the bad state: pi = p_gb / (p_gb + p_bg); mean stay: 1 / p_bg.
    const double pi = imp.burst_loss_pct / 100.0;
    p_bg_ = 1.0 / imp.burst_len;
    p_gb_ = std::min(1.0, p_bg_ * pi / (1.0 - pi));
  }
}

Verdict LinkModel::next(size_t length) {
  Verdict v;
  ++stats_.packets;
  // The state the packet meets; a capped burst ends at its cap.
  if (bad_) {
    if (uniform_(rng_) < p_bg_ || (imp_.burst_max > 0 && burst_run_ >= imp_.burst_max)) {
      bad_ = false;
    }
  } else if (p_gb_ > 0 && uniform_(rng_) < p_gb_) {
    bad_ = true;
    burst_run_ = 0;
    ++stats_.bursts;
  }
  if (bad_) {
    ++burst_run_;
    stats_.longest_burst = std::max(stats_.longest_burst, burst_run_);
    ++stats_.dropped_burst;
    v.drop = v.burst = true;
    return v;
  }
  if (chance(imp_.loss_pct)) {
    ++stats_.dropped_random;
    v.drop = true;
    return v;
  }
  if (chance(imp_.corrupt_pct) && length > 0) {
    v.flip_bit = static_cast<int64_t>(rng_() % (length * 8));
    ++stats_.corrupted;
  }
  if (chance(imp_.duplicate_pct)) {
    v.duplicate = true;
    ++stats_.duplicated;
  }
  if (chance(imp_.reorder_pct)) {
    v.reorder = true;
    ++stats_.reordered;
  }
  return v;
}

}  // namespace ddft::linksim
