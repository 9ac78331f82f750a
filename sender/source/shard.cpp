#include "sender/source/shard.hpp"

#include <fmt/format.h>

#include "common/hash.hpp"
#include "common/parse_number.hpp"

namespace ddft::sender {

uint32_t shard_of(std::string_view rel_path, uint32_t n) {
  return static_cast<uint32_t>(common::xxh3_64(rel_path) % n);
}

std::string Shard::to_string() const {
  return enabled() ? fmt::format("{}/{}", index, count) : std::string();
}

bool parse_shard(std::string_view text, Shard* out, std::string* why) {
  const size_t slash = text.find('/');
  uint32_t k = 0;
  uint32_t n = 0;
  if (slash == std::string_view::npos || !common::parse_whole_number(text.substr(0, slash), &k) ||
      !common::parse_whole_number(text.substr(slash + 1), &n)) {
    *why = fmt::format(
        "'{}' is not K/N (this host takes shard K of N, counted from 0: 0/2 and 1/2 for two "
        "hosts)",
        text);
    return false;
  }
  if (n == 0) {
    *why = fmt::format("{}: N, the number of shards, must be at least 1", text);
    return false;
  }
  if (k >= n) {
    *why = fmt::format("{}: K counts from 0 and must be below N (the {} shards are 0/{} to {}/{})",
                       text, n, n, n - 1, n);
    return false;
  }
  *out = Shard{k, n};
  return true;
}

}  // namespace ddft::sender
