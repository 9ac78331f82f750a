#include "sender/transmit/fec_encoder.hpp"

#include <cstring>
#include <stdexcept>

namespace ddft::sender {

FecEncoder::FecEncoder(const common::FecParams& params, size_t max_source)
    : params_(params),
      max_source_(max_source),
      codec_(params.k, params.m),
      parity_(static_cast<size_t>(params.interleave) * params.m * max_source),
      group_len_(params.interleave, 0),
      ptrs_(params.m) {
  std::memset(parity_.data(), 0, parity_.size());
}

bool FecEncoder::add(uint64_t seq, std::span<const uint8_t> datagram) {
  if (datagram.size() > max_source_) {
    throw std::logic_error("FEC source datagram longer than the packet size allows");
  }
  if (count_ == 0) window_seq_ = seq;
  const unsigned group = count_ % params_.interleave;
  const unsigned member = count_ / params_.interleave;
  for (unsigned j = 0; j < params_.m; ++j) ptrs_[j] = parity(group, j);
  codec_.accumulate(member, datagram, ptrs_.data());
  group_len_[group] = std::max(group_len_[group], datagram.size());
  ++count_;
  return count_ == params_.window();
}

size_t FecEncoder::pending_parity() const {
  return static_cast<size_t>(std::min<unsigned>(count_, params_.interleave)) * params_.m;
}

void FecEncoder::close(const Emit& emit) {
  if (count_ == 0) return;
  const unsigned groups = std::min<unsigned>(count_, params_.interleave);
  common::Parity pa;
  pa.window_seq = window_seq_;
  pa.count = count_;
  pa.k = static_cast<uint8_t>(params_.k);
  pa.m = static_cast<uint8_t>(params_.m);
  pa.interleave = static_cast<uint8_t>(params_.interleave);
  for (unsigned j = 0; j < params_.m; ++j) {
    for (unsigned g = 0; g < groups; ++g) {
      pa.group = static_cast<uint8_t>(g);
      pa.index = static_cast<uint8_t>(j);
      emit(pa, {parity(g, j), group_len_[g]});
    }
  }
  for (unsigned g = 0; g < groups; ++g) {
    for (unsigned j = 0; j < params_.m; ++j) std::memset(parity(g, j), 0, group_len_[g]);
    group_len_[g] = 0;
  }
  count_ = 0;
}

}  // namespace ddft::sender
