// The device transport over a FIFO standing in for the card driver's node: frames survive any
// read boundaries, garbage between frames is skipped and counted, a full buffer is reported.
#include "common/device_transport.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/protocol.hpp"
#include "common/seal.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::common {
namespace {
namespace fs = std::filesystem;

std::vector<uint8_t> frame(uint64_t seq, size_t data_len) {
  std::vector<uint8_t> b(data_datagram_size(data_len));
  for (size_t i = 0; i < data_len; ++i) data_bytes_of(b.data())[i] = uint8_t(seq + i);
  Header h;
  h.session_id = 5;
  h.seq = seq;
  b.resize(encode_data_in_place(h, {1, seq * 1000}, data_len, b));
  return b;
}

class DeviceTransportTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkfifo(node_.c_str(), 0600), 0); }
  // Receives until `want` datagrams arrived or nothing more comes.
  std::vector<std::vector<uint8_t>> receive_all(DeviceSource& src, size_t want) {
    std::vector<std::vector<uint8_t>> out;
    std::vector<std::vector<uint8_t>> store(8, std::vector<uint8_t>(9216));
    std::vector<std::span<uint8_t>> bufs(store.begin(), store.end());
    std::vector<size_t> lens(8);
    for (int idle = 0; out.size() < want && idle < 20;) {
      size_t n = 0;
      EXPECT_FALSE(src.receive(bufs, lens, &n, std::chrono::milliseconds(20)));
      if (n == 0) ++idle;
      for (size_t i = 0; i < n; ++i) out.emplace_back(store[i].begin(), store[i].begin() + lens[i]);
    }
    return out;
  }
  testing::ScratchDir scratch_{"dev"};
  fs::path dir_ = scratch_.path();
  fs::path node_ = dir_ / "node";
};

TEST_F(DeviceTransportTest, FramesSurviveArbitraryReadBoundariesAndGarbage) {
  DeviceSource src(node_.string());
  const int raw = ::open(node_.c_str(), O_WRONLY);
  ASSERT_GE(raw, 0);
  std::vector<uint8_t> stream;
  std::vector<std::vector<uint8_t>> frames;
  for (uint64_t i = 0; i < 20; ++i) {
    frames.push_back(frame(i, 100 + i * 37));
    stream.insert(stream.end(), frames.back().begin(), frames.back().end());
    if (i == 7) stream.insert(stream.end(), {'j', 'u', 'n', 'k', 'D', 'D'});  // garbage
    if (i == 12) {  // a damaged frame: right magic, bad checksum
      auto bad = frame(99, 50);
      payload_of(bad.data())[3] ^= 0xFF;
      stream.insert(stream.end(), bad.begin(), bad.end());
    }
  }
  // Write in odd pieces so frames straddle read() boundaries.
  for (size_t pos = 0; pos < stream.size();) {
    const size_t n = std::min<size_t>(333, stream.size() - pos);
    ASSERT_EQ(::write(raw, stream.data() + pos, n), ssize_t(n));
    pos += n;
  }
  const auto got = receive_all(src, frames.size());
  ::close(raw);
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(got[i], frames[i]) << i;
  EXPECT_EQ(src.link_drops(), long(6 + frame(99, 50).size()));
}

// FEC parity (the last packet type) and sealed datagrams (--key-file) are frames like any other.
TEST_F(DeviceTransportTest, ParityAndSealedFramesPassThrough) {
  DeviceSource src(node_.string());
  const int raw = ::open(node_.c_str(), O_WRONLY);
  ASSERT_GE(raw, 0);
  std::vector<std::vector<uint8_t>> frames;
  Header h;
  h.session_id = 5;
  h.seq = 1;
  const std::vector<uint8_t> shard(300, 0xAB);
  std::vector<uint8_t> parity(kFecOverhead + shard.size());
  parity.resize(encode_parity(h, Parity{0, 4, 4, 2, 1, 0, 1}, shard, parity));
  ASSERT_GT(parity.size(), 0u);
  frames.push_back(parity);
  Key key{};
  key.fill(9);
  Sealer sealer(key, 5, make_session_salt(), true);
  auto sealed = frame(2, 200);
  poke_session_id(sealed.data(), 5);
  const size_t n = sealed.size();
  sealed.resize(n + kSealOverhead);
  sealed.resize(sealer.seal(sealed, n));
  frames.push_back(sealed);
  for (const auto& f : frames) ASSERT_EQ(::write(raw, f.data(), f.size()), ssize_t(f.size()));
  const auto got = receive_all(src, frames.size());
  ::close(raw);
  EXPECT_EQ(got, frames);
  EXPECT_EQ(src.link_drops(), 0);
}

TEST_F(DeviceTransportTest, DamagedLengthDoesNotHoldBackTheFramesBehindIt) {
  DeviceSource src(node_.string());
  const int raw = ::open(node_.c_str(), O_WRONLY);
  ASSERT_GE(raw, 0);
  auto bad = frame(0, 200);
  poke_payload_len(bad.data(), 0xFFFF);  // claims 64 KiB that will never come
  ASSERT_EQ(::write(raw, bad.data(), bad.size()), ssize_t(bad.size()));
  std::vector<std::vector<uint8_t>> good;
  for (uint64_t i = 1; i <= 5; ++i) {
    good.push_back(frame(i, 1000));
    ASSERT_EQ(::write(raw, good.back().data(), good.back().size()), ssize_t(good.back().size()));
  }
  // Nothing else arrives (the end of a session): the good frames must still come out.
  const auto got = receive_all(src, good.size());
  ::close(raw);
  ASSERT_EQ(got.size(), good.size());
  for (size_t i = 0; i < good.size(); ++i) EXPECT_EQ(got[i], good[i]);
  EXPECT_EQ(src.link_drops(), long(bad.size()));
}

TEST_F(DeviceTransportTest, SinkWritesOneFramePerPacketAndReportsAFullBuffer) {
  DeviceSource src(node_.string());
  DeviceSink sink(node_.string());
  std::vector<std::vector<uint8_t>> frames;
  for (uint64_t i = 0; i < 200; ++i) frames.push_back(frame(i, 8000));
  std::vector<std::span<const uint8_t>> views(frames.begin(), frames.end());
  // 200 x 8 KB is far more than a pipe holds: the sink must stop with "buffer full".
  size_t sent = 0;
  const auto ec = sink.send(views, &sent);
  EXPECT_EQ(ec, std::errc::no_buffer_space);
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, frames.size());
  // Drain, then send the rest: every frame arrives whole and in order.
  auto got = receive_all(src, sent);
  size_t more = 0;
  while (sent < frames.size()) {
    const auto e = sink.send(std::span(views).subspan(sent), &more);
    sent += more;
    if (e) {
      auto part = receive_all(src, 1);
      got.insert(got.end(), part.begin(), part.end());
    }
  }
  auto rest = receive_all(src, frames.size() - got.size());
  got.insert(got.end(), rest.begin(), rest.end());
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(got[i], frames[i]) << i;
  EXPECT_EQ(src.link_drops(), 0);
}

TEST_F(DeviceTransportTest, OpeningErrorsAreOneLine) {
  try {
    DeviceSink sink(node_.string());  // a FIFO with no reader
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no reader has it open"), std::string::npos);
  }
  try {
    DeviceSource src((dir_ / "missing").string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos);
  }
}

}  // namespace
}  // namespace ddft::common
