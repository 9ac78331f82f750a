#include "common/hash.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ddft::common {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Reference values: xxhsum -H2 (XXH3-128) and the FIPS 180-2 SHA-256 test vectors.
TEST(Hash, Xxh3KnownVectors) {
  EXPECT_EQ(hash_buffer(VerifyType::kB2B, {}).hex(), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(hash_buffer(VerifyType::kB2B, bytes("abc")).hex(), "06b05ab6733a618578af5f94892f3950");
  const std::string million(1000000, 'a');
  EXPECT_EQ(hash_buffer(VerifyType::kB2B, bytes(million)).hex(),
            "a545df8e384a9579b1fd6fae5285c4eb");
}

// Reference values: printf %s DATA | xxhsum -H3 (xxHash 0.8.1's command line, not this library).
TEST(Hash, Xxh3Of64BitsKnownVectors) {
  EXPECT_EQ(xxh3_64(""), 0x2d06800538d394c2u);
  EXPECT_EQ(xxh3_64("abc"), 0x78af5f94892f3950u);
  EXPECT_EQ(xxh3_64("sub/deeper/b.txt"), 0xcf5a8bea833815e4u);
}

TEST(Hash, Sha256KnownVectors) {
  EXPECT_EQ(hash_buffer(VerifyType::kSha256, {}).hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hash_buffer(VerifyType::kSha256, bytes("abc")).hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string million(1000000, 'a');
  EXPECT_EQ(hash_buffer(VerifyType::kSha256, bytes(million)).hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Hash, StreamingEqualsOneShot) {
  std::vector<uint8_t> data(3 * 1024 * 1024 + 17);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 2654435761u >> 13);
  for (VerifyType t : {VerifyType::kB2B, VerifyType::kSha256}) {
    auto h = make_hasher(t);
    size_t pos = 0;
    size_t step = 1;
    while (pos < data.size()) {
      const size_t n = std::min(step, data.size() - pos);
      h->update({data.data() + pos, n});
      pos += n;
      step = step * 3 + 1;
    }
    EXPECT_EQ(h->finish(), hash_buffer(t, data)) << verify_type_name(t);
  }
}

TEST(Hash, KeyIsFirst32BitsAndFinishResets) {
  const Digest d = hash_buffer(VerifyType::kB2B, {});
  EXPECT_EQ(d.key32(), 0x99AA06D3u);
  auto h = make_hasher(VerifyType::kB2B);
  h->update(bytes("abc"));
  (void)h->finish();
  EXPECT_EQ(h->finish().hex(), d.hex());  // after finish() it hashes from scratch again
}

TEST(Hash, NoneHasNoDigest) {
  const Digest d = hash_buffer(VerifyType::kNone, bytes("abc"));
  EXPECT_EQ(d.size, 0);
  EXPECT_EQ(d.key32(), 0u);
  EXPECT_EQ(d.hex(), "");
}

}  // namespace
}  // namespace ddft::common
