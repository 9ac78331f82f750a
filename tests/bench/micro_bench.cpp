// Micro-benchmarks of the hot pieces (Google Benchmark): header encode/decode, the receive ring,
// hashing, and packetising a read block. Speed targets live here and in scripts/bench.sh, never
// in the unit tests.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "receiver/byte_ring.hpp"
#include "receiver/open_pool.hpp"

namespace ddft {
namespace {
using namespace common;

constexpr size_t kPacket = kDefaultPacketSize;
constexpr size_t kChunk = kPacket - kHeaderSize - kDataHeaderSize;

void BM_EncodeData(benchmark::State& state) {
  std::vector<uint8_t> buf(kPacket, 0x5A);
  Header h;
  h.session_id = 1;
  for (auto _ : state) {
    ++h.seq;
    benchmark::DoNotOptimize(encode_data_in_place(h, {1, h.seq * kChunk}, kChunk, buf));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
}
BENCHMARK(BM_EncodeData);

void BM_DecodePacket(benchmark::State& state) {
  std::vector<uint8_t> buf(kPacket, 0x5A);
  Header h;
  h.session_id = 1;
  encode_data_in_place(h, {1, 0}, kChunk, buf);
  Packet p;
  DataHeader d;
  std::span<const uint8_t> data;
  for (auto _ : state) {
    benchmark::DoNotOptimize(decode_packet(buf, &p));
    benchmark::DoNotOptimize(decode_data(p.payload, &d, &data));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
}
BENCHMARK(BM_DecodePacket);

// --key-file: sealing a whole data datagram on the sender, opening it on the receiver (AES-256-GCM;
// arg 1: encrypted, 0: --auth-only).
void BM_Seal(benchmark::State& state) {
  Key psk{};
  psk.fill(7);
  Sealer sealer(psk, 1, make_session_salt(), state.range(0) != 0);
  std::vector<uint8_t> buf(kPacket + kSealOverhead, 0x5A);
  Header h;
  h.session_id = 1;
  for (auto _ : state) {
    ++h.seq;
    const size_t n = encode_data_in_place(h, {1, 0}, kChunk, buf);
    benchmark::DoNotOptimize(sealer.seal(buf, n));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
}
BENCHMARK(BM_Seal)->Arg(1)->Arg(0);

void BM_Open(benchmark::State& state) {
  Key psk{};
  psk.fill(7);
  Sealer sealer(psk, 1, make_session_salt(), state.range(0) != 0);
  std::vector<uint8_t> buf(kPacket + kSealOverhead, 0x5A);
  Header h;
  h.session_id = 1;
  h.seq = 1;
  const size_t sealed = sealer.seal(buf, encode_data_in_place(h, {1, 0}, kChunk, buf));
  buf.resize(sealed);
  Packet p;
  decode_packet(buf, &p);
  Opener opener({psk});
  std::vector<uint8_t> out(buf.size());
  size_t n = 0;
  Salt salt{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(opener.open(buf, p.header, out, &n, &salt));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
}
BENCHMARK(BM_Open)->Arg(1)->Arg(0);

// The receiver's open workers (--workers N, arg): a batch of 128 sealed data datagrams decoded
// and opened side by side, as WriterLoop hands them over. Bytes per second of wall time: with
// the cores free, N workers should come near N times one.
void BM_OpenPool(benchmark::State& state) {
  Key psk{};
  psk.fill(7);
  Sealer sealer(psk, 1, make_session_salt(), true);
  constexpr size_t kBatch = 128;
  std::vector<std::vector<uint8_t>> sealed;
  Header h;
  h.session_id = 1;
  for (size_t i = 0; i < kBatch; ++i) {
    std::vector<uint8_t> buf(kPacket + kSealOverhead, static_cast<uint8_t>(i));
    h.seq = i + 1;
    buf.resize(sealer.seal(buf, encode_data_in_place(h, {1, 0}, kChunk, buf)));
    sealed.push_back(std::move(buf));
  }
  receiver::OpenPool pool(static_cast<unsigned>(state.range(0)), {psk}, kPacket + kSealOverhead,
                          kBatch);
  std::vector<receiver::Prechecked> items(kBatch);
  for (auto _ : state) {
    for (size_t i = 0; i < kBatch; ++i) {
      items[i] = receiver::Prechecked{};
      items[i].data = sealed[i];
      items[i].real_len = sealed[i].size();
    }
    pool.run(items);
    benchmark::DoNotOptimize(items.back().opened);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBatch * kPacket));
}
BENCHMARK(BM_OpenPool)->Arg(1)->Arg(2)->UseRealTime();

void BM_ByteRingCommitRelease(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  receiver::ByteRing ring(size_t{64} << 20);
  std::vector<size_t> lens(batch, kPacket), segs(batch, 0);
  for (auto _ : state) {
    const size_t n = ring.reserve(batch, 9216);
    ring.commit(n, lens.data(), segs.data());
    uint64_t pos = ring.consumed();
    while (pos < ring.produced()) {
      const auto rec = ring.next(pos);
      benchmark::DoNotOptimize(rec.bytes.data());
      pos = rec.next;
    }
    ring.release(pos);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_ByteRingCommitRelease)->Arg(1)->Arg(64);

void BM_Hash(benchmark::State& state) {
  const auto type = static_cast<VerifyType>(state.range(0));
  std::vector<uint8_t> block(1 << 20, 0xA5);
  auto h = make_hasher(type);
  for (auto _ : state) h->update(block);
  benchmark::DoNotOptimize(h->finish());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * block.size()));
  state.SetLabel(std::string(verify_type_name(type)));
}
BENCHMARK(BM_Hash)
    ->Arg(static_cast<int>(VerifyType::kB2B))
    ->Arg(static_cast<int>(VerifyType::kSha256));

// What the transmit thread does per read block: copy each chunk into a batch slot and seal it.
void BM_Packetise1MiB(benchmark::State& state) {
  std::vector<uint8_t> block(kChunk * 117, 0x3C);  // the reader's 1 MiB block, in whole chunks
  std::vector<uint8_t> arena(32 * kPacket);
  Header h;
  h.session_id = 1;
  for (auto _ : state) {
    size_t slot = 0;
    for (size_t pos = 0; pos < block.size(); pos += kChunk) {
      auto out = std::span(arena).subspan((slot++ % 32) * kPacket, kPacket);
      std::memcpy(data_bytes_of(out.data()), block.data() + pos, kChunk);
      ++h.seq;
      benchmark::DoNotOptimize(encode_data_in_place(h, {1, pos}, kChunk, out));
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * block.size()));
}
BENCHMARK(BM_Packetise1MiB);

}  // namespace
}  // namespace ddft

BENCHMARK_MAIN();
