// Micro-benchmarks of the hot pieces (Google Benchmark): header encode/decode, the receive ring,
// hashing, and packetising a read block. Speed targets live here and in scripts/bench.sh, never
// in the unit tests. Each benchmark then checks what it computed (the datagram decodes to what was
// encoded, a sealed one opens to its plain text, the digest is the right one) and, when it is
// wrong, ends with state.SkipWithError(): "ERROR OCCURRED" in the output, which fails bench.micro.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/hash.hpp"
#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "receiver/link/byte_ring.hpp"
#include "receiver/link/unseal_pool.hpp"

namespace ddft {
namespace {
using namespace common;

constexpr size_t kPacket = kDefaultPacketSize;
constexpr size_t kChunk = kPacket - kHeaderSize - kDataHeaderSize;

// Empty when datagram `d` decodes as a data datagram of session 1 with sequence number `seq`,
// file 1, offset `offset` and `len` data bytes equal to `want` (when given); else what differs.
const char* data_mismatch(std::span<const uint8_t> d, uint64_t seq, uint64_t offset, size_t len,
                          std::span<const uint8_t> want = {}) {
  Packet p;
  DataHeader dh;
  std::span<const uint8_t> data;
  if (decode_packet(d, &p) != DecodeStatus::kOk) return "the datagram does not decode";
  if (p.header.session_id != 1 || p.header.seq != seq) return "wrong session or sequence number";
  if (decode_data(p.payload, &dh, &data) != DecodeStatus::kOk) return "the data does not decode";
  if (dh.file_id != 1 || dh.offset != offset) return "wrong file id or offset";
  if (data.size() != len) return "wrong data length";
  if (!want.empty() && !std::equal(data.begin(), data.end(), want.begin(), want.end())) {
    return "wrong data bytes";
  }
  return nullptr;
}

// Empty when `inner`, a datagram opened, is the datagram `plain` that was sealed: the same
// length and payload (its header is the sealed one's, as the receiver uses it); else what differs.
const char* opened_mismatch(std::span<const uint8_t> inner, std::span<const uint8_t> plain) {
  if (inner.size() != plain.size()) return "the opened datagram has the wrong length";
  if (!std::equal(inner.begin() + kHeaderSize, inner.end(), plain.begin() + kHeaderSize)) {
    return "the opened datagram differs from the one sealed";
  }
  return nullptr;
}

// Ends the benchmark with `why` as its error when there is one.
void check(benchmark::State& state, const char* why) {
  if (why != nullptr) state.SkipWithError(why);
}

void BM_EncodeData(benchmark::State& state) {
  std::vector<uint8_t> buf(kPacket, 0x5A);
  Header h;
  h.session_id = 1;
  size_t n = 0;
  for (auto _ : state) {
    ++h.seq;
    n = encode_data_in_place(h, {1, h.seq * kChunk}, kChunk, buf);
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
  const std::vector<uint8_t> filler(kChunk, 0x5A);
  check(state, data_mismatch(std::span(buf).first(n), h.seq, h.seq * kChunk, kChunk, filler));
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
  DecodeStatus packet_status = DecodeStatus::kTooShort;
  DecodeStatus data_status = DecodeStatus::kTooShort;
  for (auto _ : state) {
    packet_status = decode_packet(buf, &p);
    data_status = decode_data(p.payload, &d, &data);
    benchmark::DoNotOptimize(packet_status);
    benchmark::DoNotOptimize(data_status);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
  if (packet_status != DecodeStatus::kOk || data_status != DecodeStatus::kOk) {
    check(state, "the datagram does not decode");
  } else if (p.header.session_id != 1 || d.file_id != 1 || d.offset != 0 || data.size() != kChunk ||
             data.front() != 0x5A || data.back() != 0x5A) {
    check(state, "decoded fields differ from the encoded ones");
  }
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
  // The sealer the loop used seals one more datagram of known plain text: it must open to it.
  ++h.seq;
  std::fill(buf.begin(), buf.end(), uint8_t{0x5A});
  const size_t n = encode_data_in_place(h, {1, 0}, kChunk, buf);
  const std::vector<uint8_t> plain(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
  const size_t sealed = sealer.seal(buf, n);
  Packet p;
  if (sealed != n + kSealOverhead ||
      decode_packet(std::span(buf).first(sealed), &p) != DecodeStatus::kOk) {
    check(state, "the sealed datagram has the wrong length or does not decode");
    return;
  }
  Opener opener({psk});
  std::vector<uint8_t> out(sealed);
  size_t inner = 0;
  Salt salt{};
  if (opener.open(std::span(buf).first(sealed), p.header, out, &inner, &salt) != OpenStatus::kOk) {
    check(state, "the sealed datagram does not open with its key");
    return;
  }
  check(state, opened_mismatch(std::span(out).first(inner), plain));
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
  const size_t plain_len = encode_data_in_place(h, {1, 0}, kChunk, buf);
  const std::vector<uint8_t> plain(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(plain_len));
  const size_t sealed = sealer.seal(buf, plain_len);
  buf.resize(sealed);
  Packet p;
  if (decode_packet(buf, &p) != DecodeStatus::kOk) {
    check(state, "the sealed datagram does not decode");
    return;
  }
  Opener opener({psk});
  std::vector<uint8_t> out(buf.size());
  size_t n = 0;
  Salt salt{};
  OpenStatus status = OpenStatus::kMalformed;
  for (auto _ : state) {
    status = opener.open(buf, p.header, out, &n, &salt);
    benchmark::DoNotOptimize(status);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPacket));
  check(state, status != OpenStatus::kOk ? "the sealed datagram does not open"
                                         : opened_mismatch(std::span(out).first(n), plain));
}
BENCHMARK(BM_Open)->Arg(1)->Arg(0);

// The receiver's open workers (--workers N, arg): a batch of 128 sealed data datagrams decoded
// and opened side by side, as WriterLoop hands them over. Bytes per second of wall time: with
// the cores free, N workers should come near N times one.
void BM_UnsealPool(benchmark::State& state) {
  Key psk{};
  psk.fill(7);
  Sealer sealer(psk, 1, make_session_salt(), true);
  constexpr size_t kBatch = 128;
  std::vector<std::vector<uint8_t>> sealed, plain;
  Header h;
  h.session_id = 1;
  for (size_t i = 0; i < kBatch; ++i) {
    std::vector<uint8_t> buf(kPacket + kSealOverhead, static_cast<uint8_t>(i));
    h.seq = i + 1;
    const size_t n = encode_data_in_place(h, {1, i * kChunk}, kChunk, buf);
    plain.emplace_back(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
    buf.resize(sealer.seal(buf, n));
    sealed.push_back(std::move(buf));
  }
  receiver::UnsealPool pool(static_cast<unsigned>(state.range(0)), {psk}, kPacket + kSealOverhead,
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
  // The last run's items: each opened, to the datagram that was sealed.
  for (size_t i = 0; i < kBatch; ++i) {
    const receiver::Prechecked& it = items[i];
    const char* why = it.status != DecodeStatus::kOk || it.opened != OpenStatus::kOk
                          ? "a datagram of the batch was not opened"
                          : opened_mismatch(it.inner.first(it.inner_len), plain[i]);
    if (why != nullptr) {
      check(state, why);
      return;
    }
  }
}
BENCHMARK(BM_UnsealPool)->Arg(1)->Arg(2)->UseRealTime();

void BM_ByteRingCommitRelease(benchmark::State& state) {
  const size_t batch = static_cast<size_t>(state.range(0));
  receiver::ByteRing ring(size_t{64} << 20);
  std::vector<size_t> lens(batch, kPacket), segs(batch, 0);
  // What went in against what came out: every record committed is read back once, in order and
  // whole (each buffer starts with its record's number).
  uint64_t committed = 0, read = 0, wrong = 0, empty_reserves = 0;
  for (auto _ : state) {
    const size_t n = ring.reserve(batch, 9216);
    empty_reserves += n == 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t number = committed + i;
      std::memcpy(ring.buffer(i).data(), &number, sizeof number);
    }
    ring.commit(n, lens.data(), segs.data());
    committed += n;
    uint64_t pos = ring.consumed();
    while (pos < ring.produced()) {
      const auto rec = ring.next(pos);
      benchmark::DoNotOptimize(rec.bytes.data());
      if (!rec.pad) {
        uint64_t number = 0;
        std::memcpy(&number, rec.bytes.data(), sizeof number);
        wrong += number != read++ || rec.bytes.size() != kPacket || rec.real_len != kPacket;
      }
      pos = rec.next;
    }
    ring.release(pos);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  if (read != committed || wrong != 0 || empty_reserves != 0 ||
      ring.consumed() != ring.produced()) {
    check(state, "the ring gave back other records than were committed");
  }
}
BENCHMARK(BM_ByteRingCommitRelease)->Arg(1)->Arg(64);

void BM_Hash(benchmark::State& state) {
  const auto type = static_cast<VerifyType>(state.range(0));
  std::vector<uint8_t> block(1 << 20, 0xA5);
  auto h = make_hasher(type);
  for (auto _ : state) h->update(block);
  const Digest streamed = h->finish();
  benchmark::DoNotOptimize(streamed);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * block.size()));
  state.SetLabel(std::string(verify_type_name(type)));
  // The same bytes fed in other pieces give the same digest, and the hasher is the algorithm it
  // names: its digest of "abc" is the published one.
  auto again = make_hasher(type);
  const auto piece = std::span(block).first(4096 + 17);
  for (size_t left = state.iterations() * block.size(); left > 0;) {
    const size_t n = std::min(left, piece.size());
    again->update(piece.first(n));
    left -= n;
  }
  constexpr std::string_view kAbc = "abc";
  h->update({reinterpret_cast<const uint8_t*>(kAbc.data()), kAbc.size()});
  const std::string abc = h->finish().hex();
  const bool b2b = type == VerifyType::kB2B;
  if (!(again->finish() == streamed)) {
    check(state, "the digest depends on how the bytes were split");
  } else if (abc != (b2b ? "06b05ab6733a618578af5f94892f3950"
                         : "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")) {
    check(state, "the digest of \"abc\" is not the published one");
  }
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
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 131 + 7);
  size_t last = 0, last_len = 0;
  for (auto _ : state) {
    size_t slot = 0;
    for (size_t pos = 0; pos < block.size(); pos += kChunk) {
      last = slot++ % 32;
      auto out = std::span(arena).subspan(last * kPacket, kPacket);
      std::memcpy(data_bytes_of(out.data()), block.data() + pos, kChunk);
      ++h.seq;
      last_len = encode_data_in_place(h, {1, pos}, kChunk, out);
      benchmark::DoNotOptimize(last_len);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * block.size()));
  // The block's last chunk, in the slot it was packetised into.
  const size_t tail = block.size() - kChunk;
  check(state, data_mismatch(std::span(arena).subspan(last * kPacket, last_len), h.seq, tail,
                             kChunk, std::span(block).subspan(tail)));
}
BENCHMARK(BM_Packetise1MiB);

}  // namespace
}  // namespace ddft

BENCHMARK_MAIN();
