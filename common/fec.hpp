// Forward error correction: Reed-Solomon erasure coding over GF(2^8) with Intel ISA-L.
//
// The sender adds M parity shards to every K source shards (--fec K:M); the receiver rebuilds up
// to M lost shards of a group from any K that arrived. The window and group layout on the wire is
// described with kParity in protocol.hpp; this file holds the settings and the codec.
//
// parse_fec() and check_fec_interleave() return false with a reason. An RsCodec is used by one
// thread (it caches decode matrices); its constructor throws std::invalid_argument for k or m out
// of range (a bug: the settings are checked first). The caller owns every shard buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ddft::common {

struct FecParams {
  unsigned k = 0;           // source shards per group; 0: FEC off
  unsigned m = 0;           // parity shards per group
  unsigned interleave = 1;  // groups per window: a burst of up to interleave x m is repaired
  bool enabled() const { return k > 0; }
  unsigned window() const { return k * interleave; }  // source datagrams per full window
};

// Parses "K:M" (1 <= K, 1 <= M, K + M <= 255) or "off". Returns false with a one-line reason in
// *why.
[[nodiscard]] bool parse_fec(std::string_view text, FecParams* out, std::string* why);
// Checks the interleave (1..255) and that a window (K x interleave) fits the wire's 16-bit count.
// Returns false with a one-line reason in *why.
[[nodiscard]] bool check_fec_interleave(const FecParams& p, std::string* why);
// "32:4" or "32:4 x8" with interleave, "off".
std::string format_fec(const FecParams& p);

class RsCodec {
 public:
  // Cauchy matrix: any k of the k + m rows are independent, so any k shards rebuild the rest.
  RsCodec(unsigned k, unsigned m);
  unsigned k() const { return k_; }
  unsigned m() const { return m_; }

  // Adds source shard `index` (< k) to the m parity shards, which the caller zeroed before the
  // first shard of the group. Only data.size() bytes are touched: a shorter shard counts as if
  // padded with zeros. Shards may be added in any order, each once.
  void accumulate(unsigned index, std::span<const uint8_t> data, uint8_t* const* parity) const;

  // Rebuilds the missing source shards. `shards` holds k + m pointers to `len`-byte buffers (the
  // k source shards, then the m parity shards); `present[i]` says which hold received data. The
  // buffers of missing source shards are written. Returns false when fewer than k are present.
  // Decode matrices are cached per loss pattern (inverting one per group is slow).
  [[nodiscard]] bool rebuild(size_t len, const std::vector<bool>& present, uint8_t* const* shards);

 private:
  unsigned k_;
  unsigned m_;
  std::vector<uint8_t> matrix_;         // (k + m) x k; the top k rows are the identity
  std::vector<uint8_t> parity_tables_;  // ISA-L tables of the m parity rows
  std::unordered_map<std::string, std::vector<uint8_t>> decode_cache_;
  size_t decode_cache_bytes_ = 0;
};

}  // namespace ddft::common
