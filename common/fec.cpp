#include "common/fec.hpp"

#include <fmt/format.h>
#include <isa-l/erasure_code.h>

#include <algorithm>
#include <stdexcept>

#include "common/parse_number.hpp"

namespace ddft::common {
namespace {

constexpr size_t kDecodeCacheLimit = 4096;
constexpr size_t kDecodeCacheBytes = size_t{32} << 20;

}  // namespace

bool parse_fec(std::string_view text, FecParams* out, std::string* why) {
  if (text == "off" || text == "0") {
    out->k = out->m = 0;
    return true;
  }
  const size_t colon = text.find(':');
  unsigned k = 0;
  unsigned m = 0;
  if (colon == std::string_view::npos || !parse_whole_number(text.substr(0, colon), &k) ||
      !parse_whole_number(text.substr(colon + 1), &m)) {
    *why = fmt::format("'{}' is not K:M (source and parity packets per group, e.g. 32:4)", text);
    return false;
  }
  if (k < 1 || m < 1 || k + m > 255) {
    *why = fmt::format("'{}': K and M must be at least 1 and K + M at most 255", text);
    return false;
  }
  out->k = k;
  out->m = m;
  return true;
}

bool check_fec_interleave(const FecParams& p, std::string* why) {
  if (p.interleave < 1 || p.interleave > 255) {
    *why = fmt::format("interleave {} is outside 1..255", p.interleave);
    return false;
  }
  if (p.enabled() && p.k * p.interleave > 65535) {
    *why = fmt::format("a window of K x interleave = {} packets is more than 65535", p.window());
    return false;
  }
  return true;
}

std::string format_fec(const FecParams& p) {
  if (!p.enabled()) return "off";
  if (p.interleave == 1) return fmt::format("{}:{}", p.k, p.m);
  return fmt::format("{}:{} x{}", p.k, p.m, p.interleave);
}

RsCodec::RsCodec(unsigned k, unsigned m) : k_(k), m_(m) {
  if (k < 1 || m < 1 || k + m > 255) throw std::invalid_argument("RsCodec: bad k or m");
  matrix_.resize(static_cast<size_t>(k + m) * k);
  gf_gen_cauchy1_matrix(matrix_.data(), static_cast<int>(k + m), static_cast<int>(k));
  parity_tables_.resize(static_cast<size_t>(32) * k * m);
  ec_init_tables(static_cast<int>(k), static_cast<int>(m),
                 matrix_.data() + static_cast<size_t>(k) * k, parity_tables_.data());
}

void RsCodec::accumulate(unsigned index, std::span<const uint8_t> data,
                         uint8_t* const* parity) const {
  if (data.empty()) return;
  // ISA-L does not write through its source pointer; its API is simply not const-qualified.
  ec_encode_data_update(static_cast<int>(data.size()), static_cast<int>(k_), static_cast<int>(m_),
                        static_cast<int>(index), const_cast<uint8_t*>(parity_tables_.data()),
                        const_cast<uint8_t*>(data.data()), const_cast<uint8_t**>(parity));
}

bool RsCodec::rebuild(size_t len, const std::vector<bool>& present, uint8_t* const* shards) {
  std::vector<unsigned> used;     // k present rows, source rows first
  std::vector<unsigned> missing;  // source rows to rebuild
  for (unsigned i = 0; i < k_ + m_ && used.size() < k_; ++i) {
    if (present[i]) used.push_back(i);
  }
  for (unsigned i = 0; i < k_; ++i) {
    if (!present[i]) missing.push_back(i);
  }
  if (missing.empty()) return true;
  if (used.size() < k_) return false;

  std::string key(used.begin(), used.end());
  key.push_back('\xff');
  key.append(missing.begin(), missing.end());
  auto it = decode_cache_.find(key);
  if (it == decode_cache_.end()) {
    // The rows of the encode matrix for the shards we have, inverted, map them back to the
    // sources; the rows of the inverse for the missing sources rebuild them.
    std::vector<uint8_t> sub(static_cast<size_t>(k_) * k_);
    for (unsigned r = 0; r < k_; ++r) {
      std::copy_n(matrix_.data() + static_cast<size_t>(used[r]) * k_, k_,
                  sub.data() + static_cast<size_t>(r) * k_);
    }
    std::vector<uint8_t> inv(sub.size());
    if (gf_invert_matrix(sub.data(), inv.data(), static_cast<int>(k_)) != 0) return false;
    std::vector<uint8_t> rows(static_cast<size_t>(missing.size()) * k_);
    for (size_t j = 0; j < missing.size(); ++j) {
      std::copy_n(inv.data() + static_cast<size_t>(missing[j]) * k_, k_, rows.data() + j * k_);
    }
    std::vector<uint8_t> tables(static_cast<size_t>(32) * k_ * missing.size());
    ec_init_tables(static_cast<int>(k_), static_cast<int>(missing.size()), rows.data(),
                   tables.data());
    // Bounded by count and by bytes (a table is up to 32 x k x m bytes): a sender choosing
    // patterns, or a hostile one, cannot grow it without end.
    if (decode_cache_.size() >= kDecodeCacheLimit ||
        decode_cache_bytes_ + tables.size() + key.size() > kDecodeCacheBytes) {
      decode_cache_.clear();
      decode_cache_bytes_ = 0;
    }
    decode_cache_bytes_ += tables.size() + key.size();
    it = decode_cache_.emplace(std::move(key), std::move(tables)).first;
  }
  std::vector<uint8_t*> in(k_);
  std::vector<uint8_t*> out(missing.size());
  for (unsigned r = 0; r < k_; ++r) in[r] = shards[used[r]];
  for (size_t j = 0; j < missing.size(); ++j) out[j] = shards[missing[j]];
  ec_encode_data(static_cast<int>(len), static_cast<int>(k_), static_cast<int>(missing.size()),
                 it->second.data(), in.data(), out.data());
  return true;
}

}  // namespace ddft::common
