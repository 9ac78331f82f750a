#include "receiver/link/fec_decoder.hpp"

#include <algorithm>
#include <cstring>

namespace ddft::receiver {
namespace {
constexpr size_t kFinishedKept = 256;
}

FecDecoder::FecDecoder(size_t slot_size, size_t memory_bytes)
    : slot_size_(slot_size), memory_bytes_(memory_bytes), zeros_(slot_size, 0) {}

FecDecoder::~FecDecoder() = default;

void FecDecoder::reset() {
  for (const auto& [seq, w] : windows_) free_slots(w);
  windows_.clear();
  finished_.clear();
  finished_order_.clear();
}

common::RsCodec& FecDecoder::codec(unsigned k, unsigned m) {
  // A sender uses one geometry; a few are kept (each holds up to a few MiB of tables), the one
  // used longest ago makes room, so windows of ever new geometries cannot grow memory.
  auto it = codecs_.find({k, m});
  if (it == codecs_.end()) {
    if (codecs_.size() >= kMaxCodecs) {
      auto oldest = codecs_.begin();
      for (auto c = codecs_.begin(); c != codecs_.end(); ++c) {
        if (c->second.used < oldest->second.used) oldest = c;
      }
      codecs_.erase(oldest);
    }
    it = codecs_
             .emplace(std::make_pair(k, m), CodecEntry{std::make_unique<common::RsCodec>(k, m), 0})
             .first;
  }
  it->second.used = ++codec_clock_;
  return *it->second.codec;
}

FecDecoder::Window* FecDecoder::open_window(uint64_t seq) {
  auto it = windows_.find(seq);
  if (it != windows_.end()) return &it->second;
  // As for memory: a window older than every open one never pushes a newer one out.
  while (windows_.size() >= kMaxWindows) {
    if (windows_.begin()->first > seq) return nullptr;
    give_up(windows_.begin());
  }
  return &windows_[seq];
}

int32_t FecDecoder::take_slot(uint64_t keep) {
  if (!pool_) {
    const size_t slots = std::max<size_t>(2, memory_bytes_ / slot_size_);
    pool_ = std::make_unique<uint8_t[]>(slots * slot_size_);
    for (size_t i = slots; i-- > 0;) free_.push_back(static_cast<int32_t>(i));
  }
  // Out of memory: give up the oldest window but the one being filled.
  // Never a window newer than the one being filled: it is still arriving.
  while (free_.empty()) {
    auto it = windows_.begin();
    if (it == windows_.end() || it->first >= keep) return -1;
    give_up(it);
  }
  const int32_t s = free_.back();
  free_.pop_back();
  return s;
}

void FecDecoder::give_up(std::map<uint64_t, Window>::iterator it) {
  const Window& w = it->second;
  if (!w.geometry) {
    ++counters_.windows_no_parity;
  } else {
    // Groups left with a place missing: what the parity could not make up for.
    for (unsigned g = 0; g < std::min<unsigned>(w.d, w.count); ++g) {
      if (!w.done[g]) ++counters_.groups_lost;
    }
  }
  // Not recorded as finished: its late packets are new, not rebuilt ones, and must go on.
  free_slots(it->second);
  windows_.erase(it);
}

void FecDecoder::free_slots(const Window& w) {
  for (int32_t s : w.src) {
    if (s >= 0) free_.push_back(s);
  }
  for (int32_t s : w.par) {
    if (s >= 0) free_.push_back(s);
  }
}

void FecDecoder::finish(std::map<uint64_t, Window>::iterator it) {
  free_slots(it->second);
  finished_.insert(it->first);
  finished_order_.push_back(it->first);
  if (finished_order_.size() > kFinishedKept) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
  windows_.erase(it);
}

bool FecDecoder::add_source(const common::Header& h, std::span<const uint8_t> datagram,
                            const Deliver& deliver) {
  if (h.fec_pos > h.seq || datagram.size() > slot_size_) return true;
  const uint64_t seq = h.seq - h.fec_pos;
  // A finished window had every place filled: this one came after its rebuild.
  if (finished_.count(seq) != 0) return false;
  Window* wp = open_window(seq);
  if (wp == nullptr) return true;  // too old to keep: handled unprotected
  Window& w = *wp;
  if (w.geometry && h.fec_pos >= w.count) return true;  // disagrees with the parity: not kept
  if (w.src.size() <= h.fec_pos) {
    w.src.resize(h.fec_pos + 1u, -1);
    w.src_len.resize(h.fec_pos + 1u, 0);
    w.src_rebuilt.resize(h.fec_pos + 1u, 0);
  }
  if (w.src[h.fec_pos] >= 0) return false;
  const int32_t s = take_slot(seq);
  if (s < 0) return true;
  // take_slot() may have given up other windows, never this one: `w` is still valid.
  std::memcpy(slot(s), datagram.data(), datagram.size());
  w.src[h.fec_pos] = s;
  w.src_len[h.fec_pos] = static_cast<uint16_t>(datagram.size());
  if (w.geometry) {
    const unsigned group = h.fec_pos % w.d;
    try_group(seq, w, group, deliver);
  }
  return true;
}

void FecDecoder::add_parity(const common::Parity& pa, std::span<const uint8_t> shard,
                            const Deliver& deliver) {
  if (shard.size() > slot_size_ || finished_.count(pa.window_seq) != 0) return;
  Window* wp = open_window(pa.window_seq);
  if (wp == nullptr) return;
  Window& w = *wp;
  if (!w.geometry) {
    // Sources already kept beyond the window's end would contradict it.
    if (w.src.size() > pa.count) {
      for (size_t p = pa.count; p < w.src.size(); ++p) {
        if (w.src[p] >= 0) {
          ++counters_.bad_parity;
          return;
        }
      }
    }
    w.geometry = true;
    w.count = pa.count;
    w.k = pa.k;
    w.m = pa.m;
    w.d = pa.interleave;
    w.src.resize(pa.count, -1);
    w.src_len.resize(pa.count, 0);
    w.src_rebuilt.resize(pa.count, 0);
    w.par.assign(static_cast<size_t>(w.d) * w.m, -1);
    w.shard_len.assign(w.d, 0);
    w.done.assign(w.d, 0);
  } else if (pa.count != w.count || pa.k != w.k || pa.m != w.m || pa.interleave != w.d) {
    ++counters_.bad_parity;
    return;
  }
  if (w.done[pa.group]) return;
  if (w.shard_len[pa.group] == 0) {
    w.shard_len[pa.group] = static_cast<uint16_t>(shard.size());
  } else if (w.shard_len[pa.group] != shard.size()) {
    ++counters_.bad_parity;
    return;
  }
  if (w.par[static_cast<size_t>(pa.group) * w.m + pa.index] >= 0) return;
  const uint64_t seq = pa.window_seq;
  const int32_t s = take_slot(seq);
  if (s < 0) return;
  std::memcpy(slot(s), shard.data(), shard.size());
  // Taking a slot never gives up the window it is for: `w` is still valid.
  w.par[static_cast<size_t>(pa.group) * w.m + pa.index] = s;
  // Every group whose sources are all here is done at once, so finished windows free early.
  const unsigned groups = std::min<unsigned>(w.d, w.count);
  for (unsigned g = 0; g < groups; ++g) {
    try_group(seq, w, g, deliver);
    if (windows_.count(seq) == 0) return;  // finished
  }
}

uint64_t FecDecoder::unrepaired_open() const {
  uint64_t n = 0;
  for (const auto& [seq, w] : windows_) {
    if (!w.geometry) continue;
    for (unsigned g = 0; g < std::min<unsigned>(w.d, w.count); ++g) n += !w.done[g];
  }
  return n;
}

void FecDecoder::replay(uint64_t window_seq, const Replay& fn) {
  auto it = windows_.find(window_seq);
  if (it == windows_.end()) return;
  const Window& w = it->second;
  for (size_t p = 0; p < w.src.size(); ++p) {
    if (w.src[p] >= 0) fn({slot(w.src[p]), w.src_len[p]}, w.src_rebuilt[p] != 0);
  }
}

void FecDecoder::try_group(uint64_t seq, Window& w, unsigned group, const Deliver& deliver) {
  if (group >= w.count || w.done[group]) return;
  std::vector<unsigned> missing;
  for (unsigned p = group; p < w.count; p += w.d) {
    if (w.src[p] < 0) missing.push_back(p);
  }
  unsigned parity = 0;
  for (unsigned j = 0; j < w.m; ++j) parity += w.par[group * w.m + j] >= 0;
  if (!missing.empty()) {
    const size_t len = w.shard_len[group];
    if (parity < missing.size() || len == 0) return;
    std::vector<uint8_t*> shards(static_cast<size_t>(w.k) + w.m);
    std::vector<bool> present(shards.size(), false);
    std::vector<int32_t> taken;
    for (unsigned i = 0; i < w.k; ++i) {
      const unsigned p = group + i * w.d;
      if (p >= w.count) {
        // Places past the window's end are zeros; present, and never written by the rebuild.
        shards[i] = zeros_.data();
        present[i] = true;
      } else if (w.src[p] >= 0) {
        if (w.src_len[p] > len) {
          ++counters_.bad_parity;  // a source longer than its group's parity: not from this sender
          return;
        }
        std::memset(slot(w.src[p]) + w.src_len[p], 0, len - w.src_len[p]);
        shards[i] = slot(w.src[p]);
        present[i] = true;
      }
    }
    for (unsigned j = 0; j < w.m; ++j) {
      const int32_t s = w.par[group * w.m + j];
      if (s >= 0) {
        shards[w.k + j] = slot(s);
        present[w.k + j] = true;
      }
    }
    for (unsigned p : missing) {
      const int32_t s = take_slot(seq);
      if (s < 0) {
        for (int32_t t : taken) free_.push_back(t);
        return;
      }
      taken.push_back(s);
      shards[p / w.d] = slot(s);
    }
    if (!codec(w.k, w.m).rebuild(len, present, shards.data())) {
      for (int32_t t : taken) free_.push_back(t);
      return;
    }
    ++counters_.groups_repaired;
    for (size_t i = 0; i < missing.size(); ++i) {
      const unsigned p = missing[i];
      const uint8_t* d = slot(taken[i]);
      // The rebuilt datagram's header says how long it is; its checksum is checked downstream.
      const size_t n = std::min(len, common::peek_datagram_size(d));
      w.src[p] = taken[i];
      w.src_len[p] = static_cast<uint16_t>(n);
      w.src_rebuilt[p] = 1;
      ++counters_.rebuilt;
      deliver({d, n});
    }
  }
  w.done[group] = 1;
  if (++w.groups_done == std::min<unsigned>(w.d, w.count)) finish(windows_.find(seq));
}

}  // namespace ddft::receiver
