#include "receiver/assembly/file.hpp"

#include <algorithm>

namespace ddft::receiver {

common::Digest sent_key(const File& f) {
  common::Digest d;
  d.type = f.verify;
  d.size = f.end.key_len;
  d.bytes = f.end.key;
  return d;
}

common::FileIdentity identity_of(const File& f) {
  common::FileIdentity id;
  id.session = f.session;
  id.file_id = f.id;
  id.path = f.path;
  id.size = f.size;
  id.verify = f.verify;
  if (f.verify != common::VerifyType::kNone) id.digest = sent_key(f).hex();
  return id;
}

std::vector<std::pair<uint64_t, uint64_t>> missing_ranges(const File& f, size_t limit,
                                                          uint64_t* total) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  *total = 0;
  uint64_t i = 0;
  while (i < f.chunks_total) {
    // Skip whole words of received chunks quickly.
    if (i % 64 == 0 && f.bitmap[i / 64] == ~uint64_t{0}) {
      i += 64;
      continue;
    }
    if (f.has_chunk(i)) {
      ++i;
      continue;
    }
    const uint64_t start = i;
    while (i < f.chunks_total && !f.has_chunk(i)) ++i;
    ++*total;
    if (out.size() < limit) {
      out.emplace_back(start * f.chunk_size, std::min(i * f.chunk_size, f.size));
    }
  }
  return out;
}

}  // namespace ddft::receiver
