// The UDP transport on real sockets over loopback: a batch sent by UdpSink arrives whole and in
// order at UdpSource, which names its peer; an oversized datagram is reported as too long; an
// empty socket times out with nothing; a taken port and a bad destination are one-line errors.
#include "common/udp_transport.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddft::common {
namespace {
using namespace std::chrono_literals;

using Bytes = std::vector<uint8_t>;

Bytes bytes(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 3);
  return b;
}

// Receives until `want` datagrams came or 200 empty polls of 10 ms passed (loopback delivers at
// once; the bound only keeps a broken transport from hanging the test).
std::vector<Bytes> receive_n(UdpSource& src, size_t want, size_t buf_size = 2048) {
  std::vector<Bytes> got;
  std::vector<Bytes> store(8, Bytes(buf_size));
  std::vector<std::span<uint8_t>> bufs(store.begin(), store.end());
  std::vector<size_t> lens(store.size());
  for (int idle = 0; got.size() < want && idle < 200;) {
    size_t count = 0;
    EXPECT_FALSE(src.receive(bufs, lens, &count, 10ms));
    if (count == 0) ++idle;
    for (size_t i = 0; i < count; ++i) {
      got.emplace_back(store[i].begin(),
                       store[i].begin() + static_cast<long>(std::min(lens[i], buf_size)));
      if (lens[i] > buf_size) got.back().push_back(0xFF);  // marks "longer than the buffer"
    }
  }
  return got;
}

TEST(UdpTransport, ABatchArrivesWholeAndInOrderAndThePeerIsNamed) {
  UdpSource src(Endpoint{"127.0.0.1", 0}, 1 << 20);
  ASSERT_NE(src.local_port(), 0u);
  EXPECT_EQ(src.peer(), "") << "no datagram yet";
  UdpSink sink(Endpoint{"127.0.0.1", src.local_port()}, 1 << 20);
  const std::vector<Bytes> sent = {bytes(1, 1), bytes(1472, 2), bytes(700, 3), bytes(0, 4)};
  std::vector<std::span<const uint8_t>> batch(sent.begin(), sent.end());
  size_t n = 0;
  ASSERT_FALSE(sink.send(batch, &n));
  EXPECT_EQ(n, sent.size());
  const auto got = receive_n(src, sent.size());
  EXPECT_EQ(got, sent);
  EXPECT_EQ(src.peer().rfind("127.0.0.1:", 0), 0u) << src.peer();
  EXPECT_GE(src.link_drops(), 0) << "the socket's line in /proc/net/udp is found";
}

// Runs of equal datagrams, each run ended by a shorter one, a lone long one and a 0-byte one:
// what a segmented (GSO) send must cut exactly as it was given.
std::vector<Bytes> mixed_batch() {
  std::vector<Bytes> sent;
  for (int i = 0; i < 20; ++i) sent.push_back(bytes(1400, static_cast<uint8_t>(i)));
  sent.push_back(bytes(300, 50));
  for (int i = 0; i < 3; ++i) sent.push_back(bytes(8952, static_cast<uint8_t>(60 + i)));
  sent.push_back(bytes(9000, 70));  // longer than the run before it: a message of its own
  sent.push_back(bytes(0, 71));
  for (int i = 0; i < 70; ++i) sent.push_back(bytes(100, static_cast<uint8_t>(80 + i)));
  return sent;
}

TEST(UdpTransport, SegmentedSendsArriveAsTheSameDatagramsInOrder) {
  UdpSource src(Endpoint{"127.0.0.1", 0}, 8 << 20);
  UdpSink sink(Endpoint{"127.0.0.1", src.local_port()}, 8 << 20, /*gso=*/true);
  ASSERT_TRUE(sink.gso()) << "Linux takes UDP_SEGMENT since 4.18";
  const auto sent = mixed_batch();
  std::vector<std::span<const uint8_t>> batch(sent.begin(), sent.end());
  size_t n = 0;
  ASSERT_FALSE(sink.send(batch, &n));
  EXPECT_EQ(n, sent.size());
  EXPECT_TRUE(sink.gso()) << "loopback takes segmented sends";
  EXPECT_EQ(receive_n(src, sent.size(), 9216), sent);
}

TEST(UdpTransport, ARefusedSegmentedSendSwitchesGsoOffAndLosesNothing) {
  UdpSource src(Endpoint{"127.0.0.1", 0}, 8 << 20);
  UdpSink sink(Endpoint{"127.0.0.1", src.local_port()}, 8 << 20, /*gso=*/true);
  ASSERT_TRUE(sink.gso());
  // Without UDP checksums the kernel refuses segmented sends (EINVAL), as a NIC without checksum
  // offload refuses them (EIO): the same fallback.
  const int off = 1;
  ASSERT_EQ(::setsockopt(sink.fd(), SOL_SOCKET, SO_NO_CHECK, &off, sizeof off), 0);
  const auto sent = mixed_batch();
  std::vector<std::span<const uint8_t>> batch(sent.begin(), sent.end());
  size_t n = 0;
  ASSERT_FALSE(sink.send(batch, &n));
  EXPECT_EQ(n, sent.size());
  EXPECT_FALSE(sink.gso()) << "switched off for good";
  EXPECT_EQ(receive_n(src, sent.size(), 9216), sent) << "every datagram once, in order";
}

TEST(UdpTransport, AGroSocketGetsBundlesThatCutIntoTheSameDatagrams) {
  UdpSource src(Endpoint{"127.0.0.1", 0}, 8 << 20, /*gro=*/true);
  ASSERT_TRUE(src.gro());
  ASSERT_EQ(src.max_bundle(), UdpSource::kMaxBundle);
  UdpSink sink(Endpoint{"127.0.0.1", src.local_port()}, 8 << 20, /*gso=*/true);
  const auto sent = mixed_batch();
  std::vector<std::span<const uint8_t>> batch(sent.begin(), sent.end());
  size_t n = 0;
  ASSERT_FALSE(sink.send(batch, &n));
  std::vector<Bytes> got;
  size_t bundles = 0;
  std::vector<Bytes> store(4, Bytes(UdpSource::kMaxBundle));
  std::vector<std::span<uint8_t>> bufs(store.begin(), store.end());
  std::vector<size_t> lens(store.size()), segs(store.size());
  for (int idle = 0; got.size() < sent.size() && idle < 200;) {
    size_t count = 0;
    EXPECT_FALSE(src.receive_bundles(bufs, lens, segs, &count, 10ms));
    if (count == 0) ++idle;
    for (size_t i = 0; i < count; ++i) {
      bundles += segs[i] != 0;
      for_each_datagram(bufs[i], lens[i], segs[i], [&](std::span<const uint8_t> d, size_t) {
        got.emplace_back(d.begin(), d.end());
      });
    }
  }
  EXPECT_EQ(got, sent);
  EXPECT_GT(bundles, 0u) << "loopback hands a segmented send to a GRO socket as one bundle";
}

TEST(UdpTransport, ADatagramLongerThanTheBufferIsReportedLonger) {
  UdpSource src(Endpoint{"127.0.0.1", 0}, 1 << 20);
  UdpSink sink(Endpoint{"127.0.0.1", src.local_port()}, 1 << 20);
  const Bytes big = bytes(3000, 9);
  const std::span<const uint8_t> batch[] = {big};
  size_t n = 0;
  ASSERT_FALSE(sink.send(batch, &n));
  const auto got = receive_n(src, 1, 1000);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].size(), 1001u) << "len = buffer + 1: a cut datagram is never decoded";
}

TEST(UdpTransport, AnEmptySocketTimesOutWithNothing) {
  UdpSource src(Endpoint{"127.0.0.1", 0}, 1 << 16);
  Bytes buf(100);
  const std::span<uint8_t> bufs[] = {buf};
  size_t lens[1] = {};
  size_t count = 99;
  EXPECT_FALSE(src.receive(bufs, lens, &count, 1ms));
  EXPECT_EQ(count, 0u);
}

TEST(UdpTransport, ATakenPortIsAOneLineError) {
  UdpSource first(Endpoint{"127.0.0.1", 0}, 1 << 16);
  try {
    UdpSource second(Endpoint{"127.0.0.1", first.local_port()}, 1 << 16);
    FAIL() << "bound a taken port";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(first.local_port())), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_THROW(UdpSink(Endpoint{"no-such-host.invalid", 9}, 1 << 16), std::runtime_error);
}

TEST(SocketBufferReport, WarnsOnlyWhenCappedNamingTheSysctl) {
  SocketBufferReport r;
  r.requested = 64 << 20;
  r.granted = 128 << 20;
  EXPECT_EQ(r.warning("receive"), "");
  r.granted = 4 << 20;
  const std::string rx = r.warning("receive");
  EXPECT_NE(rx.find("net.core.rmem_max=67108864"), std::string::npos) << rx;
  EXPECT_NE(rx.find("4194304"), std::string::npos) << rx;
  EXPECT_NE(r.warning("send").find("net.core.wmem_max"), std::string::npos);
  r.requested = 0;
  EXPECT_EQ(r.warning("send"), "") << "nothing asked, nothing to warn about";
}

}  // namespace
}  // namespace ddft::common
