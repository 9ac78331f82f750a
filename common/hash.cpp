#include "common/hash.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <xxhash.h>
#if defined(__x86_64__)
// Debian's libxxhash picks the widest vector unit at run time (AVX2, AVX-512) behind these names;
// the plain ones are built for the baseline x86-64 (SSE2) and hash at about half the speed.
#include <xxh_x86dispatch.h>
#endif

#include <stdexcept>

namespace ddft::common {

uint32_t Digest::key32() const {
  if (size < 4) return 0;
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

std::string Digest::hex() const {
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_digest(VerifyType type, std::string_view hex, Digest* out) {
  const size_t n = digest_size(type);
  if (hex.size() != 2 * n) return false;
  Digest d;
  d.type = type;
  d.size = static_cast<uint8_t>(n);
  for (size_t i = 0; i < n; ++i) {
    const int hi = hex_digit(hex[2 * i]);
    const int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    d.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  *out = d;
  return true;
}

bool Digest::operator==(const Digest& o) const {
  return type == o.type && size == o.size &&
         std::equal(bytes.begin(), bytes.begin() + size, o.bytes.begin());
}

namespace {

class NoneHasher final : public Hasher {
 public:
  void update(std::span<const uint8_t>) override {}
  Digest finish() override { return Digest{}; }
  void reset() override {}
  VerifyType type() const override { return VerifyType::kNone; }
};

class Xxh3Hasher final : public Hasher {
 public:
  Xxh3Hasher() : state_(XXH3_createState()) {
    if (state_ == nullptr) throw std::runtime_error("cannot allocate an XXH3 state");
    reset();
  }
  ~Xxh3Hasher() override { XXH3_freeState(state_); }
  Xxh3Hasher(const Xxh3Hasher&) = delete;
  Xxh3Hasher& operator=(const Xxh3Hasher&) = delete;

  void update(std::span<const uint8_t> data) override {
    XXH3_128bits_update(state_, data.data(), data.size());
  }
  Digest finish() override {
    const XXH128_hash_t h = XXH3_128bits_digest(state_);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    Digest d;
    d.type = VerifyType::kB2B;
    d.size = sizeof(canon.digest);
    std::copy(std::begin(canon.digest), std::end(canon.digest), d.bytes.begin());
    reset();
    return d;
  }
  void reset() override { XXH3_128bits_reset(state_); }
  VerifyType type() const override { return VerifyType::kB2B; }

 private:
  XXH3_state_t* state_;
};

class Sha256Hasher final : public Hasher {
 public:
  Sha256Hasher() : ctx_(EVP_MD_CTX_new()), md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)) {
    if (ctx_ == nullptr || md_ == nullptr) {
      EVP_MD_free(md_);
      EVP_MD_CTX_free(ctx_);
      throw std::runtime_error("OpenSSL cannot provide SHA-256");
    }
    reset();
  }
  ~Sha256Hasher() override {
    EVP_MD_free(md_);
    EVP_MD_CTX_free(ctx_);
  }
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void update(std::span<const uint8_t> data) override {
    EVP_DigestUpdate(ctx_, data.data(), data.size());
  }
  Digest finish() override {
    Digest d;
    d.type = VerifyType::kSha256;
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_, d.bytes.data(), &len);
    d.size = static_cast<uint8_t>(len);
    reset();
    return d;
  }
  void reset() override {
    if (EVP_DigestInit_ex(ctx_, md_, nullptr) != 1) {
      throw std::runtime_error("OpenSSL SHA-256 init failed");
    }
  }
  VerifyType type() const override { return VerifyType::kSha256; }

 private:
  EVP_MD_CTX* ctx_;
  EVP_MD* md_;
};

}  // namespace

std::unique_ptr<Hasher> make_hasher(VerifyType type) {
  switch (type) {
    case VerifyType::kB2B:
      return std::make_unique<Xxh3Hasher>();
    case VerifyType::kSha256:
      return std::make_unique<Sha256Hasher>();
    case VerifyType::kNone:
      break;
  }
  return std::make_unique<NoneHasher>();
}

Digest hash_buffer(VerifyType type, std::span<const uint8_t> data) {
  auto h = make_hasher(type);
  h->update(data);
  return h->finish();
}

uint64_t xxh3_64(std::string_view data) { return XXH3_64bits(data.data(), data.size()); }

}  // namespace ddft::common
