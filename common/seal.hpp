// Sealed datagrams (--key-file): every datagram authenticated, and by default encrypted, with
// AES-256-GCM under a key of its own sender session.
//
// Keys. Both ends hold the same pre-shared key (32 bytes). Each sender start picks a session salt:
// the sender's wall-clock start time (u64 ns since the epoch) and 8 random bytes. The session key
// is HKDF-SHA256(key = pre-shared key, salt = session salt, info = "ddft-v1 session" | session_id
// as u64 LE). The salt travels in the clear in every datagram, so the receiver can derive the key
// from any one of them; without the pre-shared key nobody can.
//
// A sealed datagram is the datagram the sender would have sent without a key (its "inner"
// datagram) with two changes to the header and a trailer after the payload:
//
//   header (flags |= kFlagAuth [| kFlagEncrypt], payload_len += 32, checksum of the header)
//   body   (the inner payload: encrypted with kFlagEncrypt, in the clear without)
//   salt   (16 bytes: start_ns u64 LE | random u64)
//   tag    (16 bytes: the GCM tag)
//
// Nonce: the header's seq (u64 LE) and four zero bytes. seq grows by one per datagram of a
// session and the key is the session's own, so a nonce never repeats under one key; the sealer
// refuses a seq that does not grow. Associated data: header bytes 0..27 (everything but the
// checksum), then with kFlagAuth alone the body, then the salt. So no bit of a sealed datagram
// can change without the tag failing. The checksum covers the header only (the tag does its work
// on the payload: one pass per datagram on each side, not three); a damaged header is still
// dropped before any key work, and an unsealed datagram whose seal flag a bit error set fails it.
//
// The receiver opens a sealed datagram into its inner datagram: what the sender built, its
// checksum recomputed only for FEC sources (parity is computed over whole inner datagrams, so
// rebuilt ones need no key); without FEC the inner checksum is not needed and left as it came.
//
// A Sealer or an Opener belongs to one thread (OpenSSL contexts are not shared); the caller owns
// every buffer. load_key_file() throws std::runtime_error with one line (start-up); an OpenSSL
// failure (out of memory) throws std::runtime_error; Sealer::seal() throws std::logic_error for a
// datagram that does not fit or a seq that would repeat a nonce (a bug). A datagram that does
// not open is an OpenStatus, never an exception.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/protocol.hpp"

namespace ddft::common {

inline constexpr size_t kKeySize = 32;
// kSaltSize, kTagSize and kSealOverhead (the trailer) are part of the wire format:
// common/protocol.hpp.
inline constexpr uint16_t kSealFlags = kFlagAuth | kFlagEncrypt;

using Key = std::array<uint8_t, kKeySize>;
using Salt = std::array<uint8_t, kSaltSize>;

// Reads a pre-shared key file: exactly 32 bytes, or 64 hex digits with an optional line end.
// Throws std::runtime_error with a one-line reason when the file is missing or unreadable, is not
// a regular file, can be read or written by group or others, has the wrong length or is all
// zeros.
Key load_key_file(const std::string& path);

// HKDF-SHA256 (RFC 5869) through OpenSSL: `out.size()` bytes. Throws std::runtime_error when
// OpenSSL fails.
void hkdf_sha256(std::span<const uint8_t> ikm, std::span<const uint8_t> salt,
                 std::span<const uint8_t> info, std::span<uint8_t> out);
// The session key of the format above.
Key derive_session_key(const Key& psk, const Salt& salt, uint64_t session_id);

// A new session salt: the wall clock now and 8 random bytes (OpenSSL's RAND_bytes).
Salt make_session_salt();
inline uint64_t salt_start_ns(const Salt& s) { return load_le64(s.data()); }

struct CipherCtxDeleter {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxDeleter>;

// Sender side: seals the datagrams of one session. Not thread-safe.
class Sealer {
 public:
  Sealer(const Key& psk, uint64_t session_id, const Salt& salt, bool encrypt);
  // Seals in place the inner datagram of `len` bytes at the start of `buf`; `buf` must hold
  // len + kSealOverhead bytes. Returns the sealed length. Throws std::logic_error when the
  // datagram's seq is not above the last one sealed (a repeated nonce), or it does not fit.
  size_t seal(std::span<uint8_t> buf, size_t len);
  const Salt& salt() const { return salt_; }
  bool encrypts() const { return encrypt_; }

 private:
  uint64_t session_id_;
  Salt salt_;
  bool encrypt_;
  bool any_ = false;
  uint64_t last_seq_ = 0;
  CipherCtx ctx_;
};

enum class OpenStatus : uint8_t {
  kOk = 0,
  kNotSealed,  // no kFlagAuth: sent without a key, or by someone who has none
  kMalformed,  // too short for the trailer
  kBadTag,     // authentication failed: forged, damaged, or another key
};
std::string_view open_status_name(OpenStatus s);

// Receiver side: opens sealed datagrams of any session, deriving each session's key once (a few
// keys are kept for sessions seen lately). It may hold more than one pre-shared key, for a key
// rotation: a session is opened with whichever key its first authentic datagram proves. Not
// thread-safe.
class Opener {
 public:
  explicit Opener(std::vector<Key> psks);
  // `sealed` is a whole datagram that passed decode_packet with header `h`. On kOk the inner
  // datagram is written to `out` (at least sealed.size() bytes; may not overlap `sealed`),
  // *inner_len is its length, *salt its session salt and *key_index which pre-shared key opened it.
  [[nodiscard]] OpenStatus open(std::span<const uint8_t> sealed, const Header& h,
                                std::span<uint8_t> out, size_t* inner_len, Salt* salt,
                                size_t* key_index = nullptr);
  uint64_t keys_derived() const { return derived_; }

 private:
  struct Entry {
    Salt salt{};
    uint64_t session_id = 0;
    size_t key_index = 0;
    CipherCtx ctx;
    uint64_t used = 0;  // LRU stamp
  };
  [[nodiscard]] bool try_open(EVP_CIPHER_CTX* c, std::span<const uint8_t> sealed, const Header& h,
                              uint8_t* out) const;

  std::vector<Key> psks_;
  static constexpr size_t kCached = 4;
  std::array<Entry, kCached> cache_{};
  uint64_t clock_ = 0;
  uint64_t derived_ = 0;
};

}  // namespace ddft::common
