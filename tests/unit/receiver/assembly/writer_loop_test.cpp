// The "dd-write" loop on a real ring, assembler and output folder: GRO bundles are cut into their
// datagrams, a datagram over --max-packet-size is counted as truncated (not decoded), the ring
// is given back, and with --once the loop ends when the session does.
#include "receiver/assembly/writer_loop.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/scratch_fs.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::read_file;
using testing::Datagram;

class WriterLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(base_ / "out");
    cfg_.output = (base_ / "out").string();
    cfg_.failed_dir = (base_ / "out/.failed").string();
    cfg_.write_block_kb = 64;
    cfg_.write_buffers = 8;
    cfg_.write_mode = WriteMode::kBuffered;
    cfg_.once = true;
    out_ = std::make_unique<OutputDir>(cfg_.output, cfg_.failed_dir, cfg_.on_collision);
    common::BlockIoOptions io;
    io.engine = common::IoEngine::kPwrite;
    io.queue_depth = 4;
    io.fixed = mem_.span();
    writer_ = common::make_block_io(io, nullptr);
    asm_ = std::make_unique<Assembler>(cfg_, *out_, *writer_, mem_, clock_);
  }
  void TearDown() override { asm_.reset(); }
  // Puts `ds` in the ring as one record each, or as one bundle when `bundle` (all of one size
  // but the last, as the kernel's GRO makes them).
  void put(const std::vector<Datagram>& ds, bool bundle) {
    if (!bundle) {
      for (const auto& d : ds) put_record(d, 0);
      return;
    }
    Datagram all;
    for (const auto& d : ds) all.insert(all.end(), d.begin(), d.end());
    put_record(all, ds.front().size());
  }
  void put_record(const Datagram& bytes, size_t segment) {
    ASSERT_EQ(ring_.reserve(1, 65535), 1u);
    std::memcpy(ring_.buffer(0).data(), bytes.data(), bytes.size());
    const size_t len = bytes.size();
    ring_.commit(1, &len, &segment);
  }
  // Runs the loop on what the ring holds; true when it ended on its own at the session's end
  // (--once), having stopped the ingest and published its counters.
  bool run_loop(uint64_t* by_helpers = nullptr) {
    bool published = false;
    WriterLoop loop(cfg_, ring_, drops_, *asm_, clock_,
                    {.on_pass = nullptr,
                     .publish = [&](const Assembler&) { published = true; },
                     .on_interval = nullptr});
    bool upstream_stopped = false;
    // Only a bound on a broken loop (the fake clock never times a file out): it stops the loop
    // after 30 s, and the checks then fail.
    std::stop_source bound;
    std::jthread watchdog([&](std::stop_token done) {
      std::mutex mu;
      std::condition_variable_any cv;
      std::unique_lock lock(mu);
      cv.wait_for(lock, done, std::chrono::seconds(30), [] { return false; });
      if (!done.stop_requested()) bound.request_stop();
    });
    loop.run(bound.get_token(), [&] { upstream_stopped = true; });
    if (by_helpers != nullptr) *by_helpers = loop.pool().items_by_helpers();
    watchdog.request_stop();
    watchdog.join();
    EXPECT_FALSE(bound.stop_requested()) << "the loop ended on its own, at the session's end";
    EXPECT_TRUE(upstream_stopped) << "--once: the session's end stops the loop and the ingest";
    EXPECT_TRUE(published);
    return !bound.stop_requested() && upstream_stopped && published;
  }

  testing::ScratchDir scratch_{"wl"};
  fs::path base_ = scratch_.path();
  ReceiverConfig cfg_;
  std::unique_ptr<OutputDir> out_;
  common::AlignedBuffer mem_{8 * 64 * 1024};
  std::unique_ptr<common::BlockIo> writer_;
  common::FakeClock clock_;
  std::unique_ptr<Assembler> asm_;
  ByteRing ring_{4 << 20};
  DropLedger drops_;
};

TEST_F(WriterLoopTest, BundlesAreCutIntoDatagramsAndTheSessionEndsTheLoop) {
  testing::FakeSender tx(0x77, 1000);
  std::string content(25'500, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  put({tx.announce(1, "bundled.bin", content.size())}, false);
  put(tx.data(1, content), /*bundle=*/true);  // 25 of one size and a shorter last one
  put({tx.end(1, content)}, false);
  // A datagram longer than --max-packet-size, in a buffer that held it whole: truncated.
  put_record(Datagram(cfg_.max_packet_size + 100, 0x5A), 0);
  put({tx.heartbeat(/*final=*/true)}, false);
  EXPECT_TRUE(run_loop());
  EXPECT_EQ(asm_->counters().files_passed, 1u);
  EXPECT_EQ(read_file(base_ / "out/bundled.bin"), content);
  EXPECT_EQ(asm_->counters().truncated, 1u) << "counted, never decoded";
  EXPECT_EQ(ring_.available(), 0u) << "everything given back to the ring";
  EXPECT_EQ(ring_.consumed(), ring_.produced());
}

// --workers 3 with a key: batches of sealed datagrams are opened side by side and taken in
// order. Bundles of sealed data, two datagrams that fail authentication in the middle of them,
// and small files whose announce, data and end fall in different workers' shares.
TEST_F(WriterLoopTest, OpenWorkersDeliverSealedFilesInOrderAndDropForgeries) {
  common::Key psk{};
  psk.fill(0x3C);
  cfg_.keys = {psk};
  cfg_.workers = 3;
  asm_ = std::make_unique<Assembler>(cfg_, *out_, *writer_, mem_, clock_);
  testing::FakeSender tx(0x78, 1000);
  common::Sealer sealer(psk, tx.session(), common::make_session_salt(), true);
  const auto seal = [&](const Datagram& in) { return testing::sealed(sealer, in); };
  std::string big(300'000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 11);
  put({seal(tx.announce(1, "big.bin", big.size()))}, false);
  std::vector<Datagram> data;
  for (const Datagram& d : tx.data(1, big)) data.push_back(seal(d));
  Datagram forged = data[5];
  forged[forged.size() - 1] ^= 0x01;  // its tag
  for (size_t i = 0; i < data.size(); i += 25) {
    put(std::vector<Datagram>(data.begin() + i, data.begin() + std::min(i + 25, data.size())),
        /*bundle=*/true);
    if (i == 50) put({forged, forged}, false);  // a copy of a taken seq, forged: never written
  }
  put({seal(tx.end(1, big))}, false);
  for (uint32_t id = 2; id < 40; ++id) {
    for (const Datagram& d : tx.file(id, "small/" + std::to_string(id), std::to_string(id * id))) {
      put({seal(d)}, false);
    }
  }
  put({seal(tx.heartbeat(/*final=*/true))}, false);
  uint64_t by_helpers = 0;
  EXPECT_TRUE(run_loop(&by_helpers));
  EXPECT_GT(by_helpers, 100u) << "the two dd-open threads opened their shares";
  EXPECT_EQ(asm_->counters().files_passed, 39u);
  EXPECT_EQ(read_file(base_ / "out/big.bin"), big);
  for (uint32_t id = 2; id < 40; ++id) {
    EXPECT_EQ(read_file(base_ / "out/small" / std::to_string(id)), std::to_string(id * id));
  }
  EXPECT_EQ(asm_->counters().auth_rejected[static_cast<size_t>(AuthReject::kBadTag)], 2u);
  EXPECT_EQ(ring_.consumed(), ring_.produced());
}

}  // namespace
}  // namespace ddft::receiver
