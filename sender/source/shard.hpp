// --shard K/N: N sender hosts, each with its own diode and receiver ("host pairs"), share one hot
// folder (an NFS export, say) or one list of sources, and each sends only the files of its shard.
//
// A file's shard is XXH3-64 (seed 0) of its relative path, the '/'-separated bytes the receiver is
// told, modulo N. Every host computes the same split on any machine, with no word between hosts:
// each file is in exactly one shard, so none is sent twice and none is left out. By hand:
//   printf %s 'photos/a.jpg' | xxhsum -H3      then the hex value modulo N.
//
// Pure: any thread; parse_shard() returns false with a reason; nothing throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ddft::sender {

// The shard (0 .. n-1) of `rel_path` among `n` shards; `n` must be at least 1.
uint32_t shard_of(std::string_view rel_path, uint32_t n);

// This host's shard. Copyable value; any thread.
struct Shard {
  uint32_t index = 0;  // K: 0 <= K < count
  uint32_t count = 0;  // N; 0 = not sharded (every file is this host's)

  bool enabled() const { return count > 0; }
  // True when `rel_path` is this host's to send (always when not sharded).
  bool takes(std::string_view rel_path) const {
    return !enabled() || shard_of(rel_path, count) == index;
  }
  // "K/N"; "" when not sharded.
  std::string to_string() const;
};

// Parses --shard's "K/N" (decimal, 0 <= K < N) into *out. Returns false with a one-line reason in
// *why ("'1' is not K/N ...", "3/3: K counts from 0 ...").
[[nodiscard]] bool parse_shard(std::string_view text, Shard* out, std::string* why);

}  // namespace ddft::sender
