#include "receiver/counters.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddft::receiver {

void SeqCounter::reset() { *this = SeqCounter(); }

bool SeqCounter::record(uint64_t seq) {
  const bool first = !window_.started();
  switch (window_.take(seq)) {
    case Window::Take::kTooOld:
      ++received_;  // too old to tell a late packet from a duplicate; count it as late
      return true;
    case Window::Take::kSeen:
      return false;
    case Window::Take::kNew:
      break;
  }
  if (first || seq < first_) first_ = seq;
  ++received_;
  return true;
}

uint64_t SeqCounter::lost() const {
  if (!window_.started()) return 0;
  const uint64_t expected = window_.max() - first_ + 1;
  return expected > received_ ? expected - received_ : 0;
}

std::string IntervalStat::format() const {
  const double avg = count ? static_cast<double>(sum_ns) / static_cast<double>(count) / 1e6 : 0.0;
  const auto peak = std::max<uint64_t>(1, (max_ns + 999'999) / 1'000'000);
  return fmt::format("{:.2f}/{}", avg, peak);
}

std::string_view auth_reject_name(AuthReject r) {
  switch (r) {
    case AuthReject::kNoKey:
      return "sealed but this receiver has no --key-file";
    case AuthReject::kNotSealed:
      return "not sealed";
    case AuthReject::kMalformed:
      return "malformed seal";
    case AuthReject::kBadTag:
      return "bad tag";
    case AuthReject::kReplayed:
      return "replayed";
    case AuthReject::kStaleSession:
      return "of an earlier session";
    case AuthReject::kUnidentified:
      return "of a session older than the newest, whose sender is not known yet";
  }
  return "?";
}

void count_bad_payload(AssemblerCounters& c) {
  ++c.rejected[static_cast<size_t>(common::DecodeStatus::kBadPayload)];
}

}  // namespace ddft::receiver
