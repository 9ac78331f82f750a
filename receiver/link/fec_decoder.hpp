// The receiver's side of FEC: keeps each window's source datagrams until its parity has come,
// and rebuilds what the link lost.
//
// Memory is bounded: window buffers come from one pool of --fec-buffer-mb, allocated at the first
// FEC datagram of the receiver's life; when it runs out, or when more than kMaxWindows windows
// are open, the oldest window is given up (its unrepaired groups are counted as lost; the files
// they belong to then fail with their missing ranges in the usual way).
//
// Writer thread only, one decoder per lane. It owns its window pool; a rebuilt datagram is lent
// to the Deliver callback for that call only. Parity that disagrees with its window is counted
// and dropped; the assembler catches and counts anything else this throws.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "common/fec.hpp"
#include "common/protocol.hpp"

namespace ddft::receiver {

struct FecCounters {
  uint64_t rebuilt = 0;            // datagrams rebuilt from parity
  uint64_t groups_repaired = 0;    // groups that needed and got a rebuild
  uint64_t groups_lost = 0;        // groups given up with sources missing and too little parity
  uint64_t windows_no_parity = 0;  // windows given up before any of their parity arrived
  uint64_t bad_parity = 0;         // parity that disagrees with its window (dropped)

  FecCounters& operator+=(const FecCounters& o) {
    rebuilt += o.rebuilt;
    groups_repaired += o.groups_repaired;
    groups_lost += o.groups_lost;
    windows_no_parity += o.windows_no_parity;
    bad_parity += o.bad_parity;
    return *this;
  }
};

class FecDecoder {
 public:
  static constexpr size_t kMaxWindows = 64;

  // `slot_size`: the longest datagram kept; `memory_bytes`: the bound on all window buffers.
  FecDecoder(size_t slot_size, size_t memory_bytes);
  ~FecDecoder();

  // Forgets every window (a new sender session).
  void reset();

  // Called with each rebuilt datagram (the span is valid during the call only).
  using Deliver = std::function<void(std::span<const uint8_t> datagram)>;
  // A checked source datagram (its header has kFlagFec). Returns false when its place was filled
  // already (it was rebuilt before it came late): the caller drops it as a duplicate.
  bool add_source(const common::Header& h, std::span<const uint8_t> datagram,
                  const Deliver& deliver);
  // A checked parity datagram.
  void add_parity(const common::Parity& pa, std::span<const uint8_t> shard, const Deliver& deliver);

  // Hands every source kept of the window starting at `window_seq` to `fn`, in window order,
  // with whether it was rebuilt here (not received). After a rebuilt announce, its window's data
  // (dropped before as of an unknown file) is offered again.
  using Replay = std::function<void(std::span<const uint8_t> datagram, bool rebuilt)>;
  void replay(uint64_t window_seq, const Replay& fn);

  const FecCounters& counters() const { return counters_; }
  // Groups of open windows with sources missing and too little parity so far.
  uint64_t unrepaired_open() const;
  size_t open_windows() const { return windows_.size(); }
  size_t memory_bytes() const { return memory_bytes_; }

 private:
  struct Window {
    bool geometry = false;  // set by the first parity: count, k, m, interleave
    uint16_t count = 0;
    uint8_t k = 0;
    uint8_t m = 0;
    uint8_t d = 0;
    std::vector<int32_t> src;  // pool slot of each place, -1 while missing
    std::vector<uint16_t> src_len;
    std::vector<uint8_t> src_rebuilt;  // per place: 1 when try_group() rebuilt it
    std::vector<int32_t> par;          // pool slot of parity (group, index) at group * m + index
    std::vector<uint16_t> shard_len;
    std::vector<uint8_t> done;  // per group: every source present or rebuilt
    unsigned groups_done = 0;
  };

  // The window starting at `seq`, opened when new; nullptr when it is older than every open
  // window and no more may be open.
  Window* open_window(uint64_t seq);
  int32_t take_slot(uint64_t keep);
  void give_up(std::map<uint64_t, Window>::iterator it);
  void finish(std::map<uint64_t, Window>::iterator it);
  void free_slots(const Window& w);
  void try_group(uint64_t seq, Window& w, unsigned group, const Deliver& deliver);
  common::RsCodec& codec(unsigned k, unsigned m);

 public:
  // Codecs kept (one per window geometry seen lately, at most kMaxCodecs).
  size_t codecs() const { return codecs_.size(); }

 private:
  uint8_t* slot(int32_t i) { return pool_.get() + static_cast<size_t>(i) * slot_size_; }

  size_t slot_size_;
  size_t memory_bytes_;
  std::unique_ptr<uint8_t[]> pool_;
  std::vector<int32_t> free_;
  std::vector<uint8_t> zeros_;
  std::map<uint64_t, Window> windows_;
  std::set<uint64_t> finished_;
  std::deque<uint64_t> finished_order_;
  struct CodecEntry {
    std::unique_ptr<common::RsCodec> codec;
    uint64_t used = 0;  // LRU stamp
  };
  static constexpr size_t kMaxCodecs = 4;
  std::map<std::pair<unsigned, unsigned>, CodecEntry> codecs_;
  uint64_t codec_clock_ = 0;
  FecCounters counters_;
};

}  // namespace ddft::receiver
