#include "common/seal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string_view>

#include "common/fd.hpp"
#include "common/hash.hpp"

namespace ddft::common {
namespace {

constexpr std::string_view kInfoLabel = "ddft-v1 session";
constexpr std::string_view kMakeKey = "make one with: openssl rand -out FILE 32";

void fill_nonce(uint64_t seq, uint8_t nonce[12]) {
  store_le64(nonce, seq);
  std::memset(nonce + 8, 0, 4);
}

[[noreturn]] void openssl_failed(const char* what) {
  throw std::runtime_error(fmt::format("OpenSSL: {} failed", what));
}

CipherCtx new_gcm_context(const Key& key, bool for_encrypt) {
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) openssl_failed("EVP_CIPHER_CTX_new");
  if (EVP_CipherInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nullptr,
                        for_encrypt ? 1 : 0) != 1) {
    openssl_failed("AES-256-GCM set-up");
  }
  return ctx;
}

// One GCM pass over a sealed datagram, the same on both sides (the context's direction decides
// whether it seals or opens): nonce from seq, then the associated data in the format's order
// (header bytes 0..27; with encryption the salt, then the body through the cipher into `out`;
// without, the body then the salt). The caller finishes with the tag.
bool gcm_pass(EVP_CIPHER_CTX* c, uint64_t seq, bool encrypted, const uint8_t* header,
              const uint8_t* body, size_t body_len, const uint8_t* salt, uint8_t* out) {
  uint8_t nonce[12];
  fill_nonce(seq, nonce);
  int n = 0;
  const int len = static_cast<int>(body_len);
  bool ok = EVP_CipherInit_ex(c, nullptr, nullptr, nullptr, nonce, -1) == 1 &&
            EVP_CipherUpdate(c, nullptr, &n, header, kHeaderSansChecksumSize) == 1;
  if (encrypted) {
    return ok && EVP_CipherUpdate(c, nullptr, &n, salt, kSaltSize) == 1 &&
           (body_len == 0 || EVP_CipherUpdate(c, out, &n, body, len) == 1);
  }
  return ok && (body_len == 0 || EVP_CipherUpdate(c, nullptr, &n, body, len) == 1) &&
         EVP_CipherUpdate(c, nullptr, &n, salt, kSaltSize) == 1;
}

}  // namespace

Key load_key_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) {
    throw std::runtime_error(
        fmt::format("key file '{}' cannot be read: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::runtime_error(fmt::format("key file '{}' is not a regular file", path));
  }
  if ((st.st_mode & 077) != 0) {
    throw std::runtime_error(fmt::format(
        "key file '{}' is open to group or others (mode {:04o}): make it its owner's only "
        "(chmod 600)",
        path, st.st_mode & 07777));
  }
  // Read one byte more than the longest valid file, to tell a long file from a valid one.
  std::array<char, 72> buf{};
  const ssize_t n = read_up_to(fd.get(), buf.data(), buf.size());
  if (n < 0) {
    throw std::runtime_error(
        fmt::format("key file '{}' cannot be read: {}", path, std::strerror(errno)));
  }
  const auto got = static_cast<size_t>(n);
  Key key{};
  std::string_view text(buf.data(), got);
  if (got == kKeySize) {
    std::memcpy(key.data(), buf.data(), kKeySize);
  } else {
    if (text.ends_with('\n')) text.remove_suffix(1);
    if (text.ends_with('\r')) text.remove_suffix(1);
    bool hex = text.size() == 2 * kKeySize;
    for (size_t i = 0; hex && i < kKeySize; ++i) {
      const int hi = hex_digit(text[2 * i]);
      const int lo = hex_digit(text[2 * i + 1]);
      hex = hi >= 0 && lo >= 0;
      key[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    if (!hex) {
      throw std::runtime_error(fmt::format(
          "key file '{}' holds {} bytes: a key is 32 random bytes or 64 hex digits ({})", path,
          got == buf.size() ? fmt::format("more than {}", buf.size() - 1) : fmt::to_string(got),
          kMakeKey));
    }
  }
  if (std::all_of(key.begin(), key.end(), [](uint8_t b) { return b == 0; })) {
    throw std::runtime_error(
        fmt::format("key file '{}' is all zeros: a key must be random ({})", path, kMakeKey));
  }
  return key;
}

void hkdf_sha256(std::span<const uint8_t> ikm, std::span<const uint8_t> salt,
                 std::span<const uint8_t> info, std::span<uint8_t> out) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (kdf == nullptr) openssl_failed("EVP_KDF_fetch(HKDF)");
  EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (kctx == nullptr) openssl_failed("EVP_KDF_CTX_new");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_construct_octet_string(
                             OSSL_KDF_PARAM_KEY, const_cast<uint8_t*>(ikm.data()), ikm.size()),
                         OSSL_PARAM_construct_octet_string(
                             OSSL_KDF_PARAM_SALT, const_cast<uint8_t*>(salt.data()), salt.size()),
                         OSSL_PARAM_construct_octet_string(
                             OSSL_KDF_PARAM_INFO, const_cast<uint8_t*>(info.data()), info.size()),
                         OSSL_PARAM_construct_end()};
  const int ok = EVP_KDF_derive(kctx, out.data(), out.size(), params);
  EVP_KDF_CTX_free(kctx);
  if (ok != 1) openssl_failed("HKDF");
}

Key derive_session_key(const Key& psk, const Salt& salt, uint64_t session_id) {
  std::array<uint8_t, kInfoLabel.size() + 8> info{};
  std::memcpy(info.data(), kInfoLabel.data(), kInfoLabel.size());
  store_le64(info.data() + kInfoLabel.size(), session_id);
  Key key{};
  hkdf_sha256(psk, salt, info, key);
  return key;
}

Salt make_session_salt() {
  Salt s{};
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  store_le64(s.data(),
             static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec));
  if (RAND_bytes(s.data() + 8, 8) != 1) openssl_failed("RAND_bytes");
  return s;
}

Sealer::Sealer(const Key& psk, uint64_t session_id, const Salt& salt, bool encrypt)
    : session_id_(session_id),
      salt_(salt),
      encrypt_(encrypt),
      ctx_(new_gcm_context(derive_session_key(psk, salt, session_id), true)) {}

size_t Sealer::seal(std::span<uint8_t> buf, size_t len) {
  if (len < kHeaderSize || len + kSealOverhead > buf.size() ||
      len + kSealOverhead - kHeaderSize > 0xFFFF) {
    throw std::logic_error("sealed datagram does not fit its buffer");
  }
  uint8_t* p = buf.data();
  const uint64_t seq = peek_seq(p);
  if (any_ && seq <= last_seq_) {
    throw std::logic_error(
        fmt::format("sealing seq {} after seq {} would repeat a GCM nonce", seq, last_seq_));
  }
  if (peek_session_id(p) != session_id_)
    throw std::logic_error("sealing another session's datagram");
  any_ = true;
  last_seq_ = seq;

  const size_t sealed_len = len + kSealOverhead;
  const size_t body_len = sealed_body_len(sealed_len);
  poke_payload_len(p, static_cast<uint16_t>(body_len + kSealOverhead));
  poke_flags(p, static_cast<uint16_t>(peek_flags(p) | kFlagAuth | (encrypt_ ? kFlagEncrypt : 0)));
  uint8_t* body = payload_of(p);
  uint8_t* salt = sealed_salt(p, sealed_len);
  uint8_t* tag = sealed_tag(p, sealed_len);
  std::memcpy(salt, salt_.data(), kSaltSize);

  EVP_CIPHER_CTX* c = ctx_.get();
  int n = 0;
  const bool ok = gcm_pass(c, seq, encrypt_, p, body, body_len, salt, body) &&
                  EVP_CipherFinal_ex(c, body + body_len, &n) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kTagSize, tag) == 1;
  if (!ok) openssl_failed("AES-256-GCM seal");
  reseal_header(buf);  // the tag covers the rest (common/protocol.hpp)
  return sealed_len;
}

std::string_view open_status_name(OpenStatus s) {
  switch (s) {
    case OpenStatus::kOk:
      return "ok";
    case OpenStatus::kNotSealed:
      return "not sealed";
    case OpenStatus::kMalformed:
      return "malformed seal";
    case OpenStatus::kBadTag:
      return "bad tag";
  }
  return "?";
}

Opener::Opener(std::vector<Key> psks) : psks_(std::move(psks)) {
  if (psks_.empty()) throw std::logic_error("an Opener needs a key");
}

bool Opener::try_open(EVP_CIPHER_CTX* c, std::span<const uint8_t> sealed, const Header& h,
                      uint8_t* o) const {
  const size_t body_len = sealed_body_len(sealed.size());
  const uint8_t* p = sealed.data();
  const uint8_t* salt = sealed_salt(p, sealed.size());
  const uint8_t* tag = sealed_tag(p, sealed.size());
  int n = 0;
  return gcm_pass(c, h.seq, (h.flags & kFlagEncrypt) != 0, p, payload_of(p), body_len, salt,
                  payload_of(o)) &&
         EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, kTagSize, const_cast<uint8_t*>(tag)) == 1 &&
         EVP_CipherFinal_ex(c, payload_of(o) + body_len, &n) == 1;
}

OpenStatus Opener::open(std::span<const uint8_t> sealed, const Header& h, std::span<uint8_t> out,
                        size_t* inner_len, Salt* salt, size_t* key_index) {
  if ((h.flags & kFlagAuth) == 0) return OpenStatus::kNotSealed;
  if (sealed.size() < kHeaderSize + kSealOverhead || out.size() < sealed.size()) {
    return OpenStatus::kMalformed;
  }
  const size_t body_len = sealed_body_len(sealed.size());
  std::memcpy(salt->data(), sealed_salt(sealed.data(), sealed.size()), kSaltSize);
  uint8_t* o = out.data();

  // A session seen lately: its key is known, the tag alone decides.
  Entry* hit = nullptr;
  Entry* oldest = &cache_[0];
  for (Entry& e : cache_) {
    if (e.ctx && e.salt == *salt && e.session_id == h.session_id) hit = &e;
    if (e.used < oldest->used) oldest = &e;
  }
  if (hit != nullptr) {
    hit->used = ++clock_;
    if (!try_open(hit->ctx.get(), sealed, h, o)) return OpenStatus::kBadTag;
    if (key_index != nullptr) *key_index = hit->key_index;
  } else {
    // A new session: each pre-shared key in turn; only one that authenticates is kept.
    bool opened = false;
    for (size_t i = 0; i < psks_.size() && !opened; ++i) {
      CipherCtx ctx = new_gcm_context(derive_session_key(psks_[i], *salt, h.session_id), false);
      ++derived_;
      if (!try_open(ctx.get(), sealed, h, o)) continue;
      opened = true;
      *oldest = Entry{*salt, h.session_id, i, std::move(ctx), ++clock_};
      if (key_index != nullptr) *key_index = i;
    }
    if (!opened) return OpenStatus::kBadTag;
  }
  // The inner datagram: the header as the sender built it, the body, its own checksum.
  const uint8_t* p = sealed.data();
  std::memcpy(o, p, kHeaderSize);
  if ((h.flags & kFlagEncrypt) == 0 && body_len > 0) {
    std::memcpy(payload_of(o), payload_of(p), body_len);
  }
  poke_payload_len(o, static_cast<uint16_t>(body_len));
  poke_flags(o, static_cast<uint16_t>(h.flags & ~kSealFlags));
  *inner_len = kHeaderSize + body_len;
  // Its own checksum matters only to FEC, whose parity covers the whole inner datagram.
  if (h.flags & kFlagFec) reseal(out.first(*inner_len));
  return OpenStatus::kOk;
}

}  // namespace ddft::common
