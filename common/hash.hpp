// File verification digests behind one interface: XXH3-128 (B2B) and SHA-256 (OpenSSL EVP).
//
// A Digest is a plain value. A Hasher is fed by one thread, in file order. make_hasher(),
// hash_buffer() and a SHA-256 hasher's reset() throw std::runtime_error only when the crypto
// library cannot provide the digest (out of memory); hashing bytes never fails.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/protocol.hpp"

namespace ddft::common {

// A finished digest. bytes[0..size) hold it in canonical (big-endian) order, so its first four
// bytes are the 32-bit "Key" of the receive log.
struct Digest {
  VerifyType type = VerifyType::kNone;
  uint8_t size = 0;
  std::array<uint8_t, kMaxKeySize> bytes{};

  // First 32 bits, as printed in the log ("Key: 0x6999CF78"). 0 for kNone.
  uint32_t key32() const;
  // Lowercase hex of the whole digest ("" for kNone).
  std::string hex() const;
  bool operator==(const Digest& o) const;
};

// The value of one hex digit (either case), -1 when `c` is not one.
int hex_digit(char c);
// Parses `hex`, exactly 2 x digest_size(type) hex digits (either case), as a digest of `type`
// (an empty one for kNone). False, *out untouched, when it is not one.
[[nodiscard]] bool parse_digest(VerifyType type, std::string_view hex, Digest* out);

// A streaming hash over one file. Not thread-safe: one owner feeds it in file order.
class Hasher {
 public:
  virtual ~Hasher() = default;
  virtual void update(std::span<const uint8_t> data) = 0;
  // Returns the digest of everything fed since construction or reset(), then resets.
  virtual Digest finish() = 0;
  virtual void reset() = 0;
  virtual VerifyType type() const = 0;
};

// Returns a hasher for `type`, or a hasher that ignores its input for kNone. Throws
// std::runtime_error when the crypto library cannot provide the digest (startup only).
std::unique_ptr<Hasher> make_hasher(VerifyType type);

// One-shot convenience over a whole buffer.
Digest hash_buffer(VerifyType type, std::span<const uint8_t> data);

// XXH3-64 of `data` with seed 0: the same value on every machine, CPU and xxHash release from 0.8
// on (`printf %s DATA | xxhsum -H3` prints it in hex). For splitting work by name (--shard), not
// for verifying files.
uint64_t xxh3_64(std::string_view data);

}  // namespace ddft::common
