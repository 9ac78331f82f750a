// Compressor (--compress): blocks compressed on the workers, handed on in the reader's order.
#include "sender/read/compressor.hpp"

#include <gtest/gtest.h>
#include <zstd.h>

#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace ddft::sender {
namespace {

constexpr size_t kBlock = 256 * 1024;

// Records what the compressor hands on, as the lanes would get it; refuses from item
// `refuse_from` on.
class RecordingSink final : public WorkSink {
 public:
  RecordingSink(BufferPool& pool, size_t refuse_from = SIZE_MAX)
      : pool_(pool), refuse_from_(refuse_from) {}
  bool push(WorkItem&& item) override {
    std::lock_guard lock(mu_);
    if (items_.size() >= refuse_from_) return false;
    Got g{item.kind, item.offset, item.compressed, item.raw_len, {}};
    if (item.kind == WorkItem::Kind::kBlock) {
      g.bytes.assign(pool_.data(item.buffer), pool_.data(item.buffer) + item.len);
      pool_.release(item.buffer);
    }
    items_.push_back(std::move(g));
    return true;
  }
  void close() override { closed_ = true; }

  struct Got {
    WorkItem::Kind kind;
    uint64_t offset;
    bool compressed;
    uint32_t raw_len;
    std::vector<uint8_t> bytes;
  };
  std::vector<Got> items_;
  bool closed_ = false;

 private:
  BufferPool& pool_;
  size_t refuse_from_;
  std::mutex mu_;
};

std::vector<uint8_t> block_bytes(bool text, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(kBlock);
  if (!text) {
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
  }
  std::string s;
  while (s.size() < kBlock) s += "2026-11-26 INFO sample " + std::to_string(rng() % 100000) + "\n";
  std::copy(s.begin(), s.begin() + kBlock, b.begin());
  return b;
}

SenderConfig config(CompressMode mode, unsigned workers) {
  SenderConfig cfg;
  cfg.compress = mode;
  cfg.compress_workers = workers;
  return cfg;
}

// Pushes a file of `blocks` (text where `text[i]`) and returns what came out, in order.
std::vector<RecordingSink::Got> run(const SenderConfig& cfg, const std::vector<bool>& text,
                                    std::vector<std::vector<uint8_t>>* sent) {
  BufferPool pool(4, kBlock);
  RecordingSink sink(pool);
  {
    Compressor c(cfg, pool, sink);
    auto meta = std::make_shared<FileMeta>();
    meta->rel_path = "f";
    EXPECT_TRUE(c.push(WorkItem{WorkItem::Kind::kBegin, meta}));
    for (size_t i = 0; i < text.size(); ++i) {
      sent->push_back(block_bytes(text[i], static_cast<unsigned>(i)));
      const int buf = pool.acquire();
      std::copy(sent->back().begin(), sent->back().end(), pool.data(buf));
      EXPECT_TRUE(c.push(WorkItem{WorkItem::Kind::kBlock, meta, buf, i * kBlock, kBlock}));
    }
    EXPECT_TRUE(c.push(WorkItem{WorkItem::Kind::kEnd, meta}));
    c.close();
    EXPECT_TRUE(sink.closed_);
    const CompressTotals t = c.totals();
    EXPECT_EQ(t.blocks, text.size());
    EXPECT_EQ(t.raw_bytes, text.size() * kBlock);
  }
  return sink.items_;
}

std::vector<uint8_t> decompress(const RecordingSink::Got& g) {
  std::vector<uint8_t> out(g.raw_len);
  const size_t n = ZSTD_decompress(out.data(), out.size(), g.bytes.data(), g.bytes.size());
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

TEST(Compressor, CompressesTextKeepsRandomRawAndKeepsTheOrder) {
  for (CompressMode mode : {CompressMode::kZstd, CompressMode::kAuto}) {
    for (unsigned workers : {1u, 3u}) {
      SCOPED_TRACE(::testing::Message()
                   << "workers " << workers << " auto " << (mode == CompressMode::kAuto));
      std::vector<bool> text;
      for (int i = 0; i < 24; ++i) text.push_back(i % 3 != 1);
      std::vector<std::vector<uint8_t>> sent;
      const auto got = run(config(mode, workers), text, &sent);
      ASSERT_EQ(got.size(), text.size() + 2);
      EXPECT_EQ(got.front().kind, WorkItem::Kind::kBegin);
      EXPECT_EQ(got.back().kind, WorkItem::Kind::kEnd);
      for (size_t i = 0; i < text.size(); ++i) {
        const auto& g = got[i + 1];
        ASSERT_EQ(g.kind, WorkItem::Kind::kBlock);
        EXPECT_EQ(g.offset, i * kBlock);  // the reader's order
        EXPECT_EQ(g.compressed, text[i]) << "block " << i;
        if (g.compressed) {
          EXPECT_EQ(g.raw_len, kBlock);
          EXPECT_LE(g.bytes.size(), common::zdata_frame_limit(kBlock));
          EXPECT_EQ(decompress(g), sent[i]) << "block " << i;
        } else {
          EXPECT_EQ(g.bytes, sent[i]) << "block " << i;  // untouched
        }
      }
    }
  }
}

TEST(Compressor, ALevelIsAppliedAndFramesCarryTheirChecksum) {
  std::vector<std::vector<uint8_t>> sent;
  SenderConfig cfg = config(CompressMode::kZstd, 1);
  cfg.compress_level = 19;
  const auto got19 = run(cfg, {true}, &sent);
  cfg.compress_level = 1;
  const auto got1 = run(cfg, {true}, &sent);
  ASSERT_TRUE(got19[1].compressed && got1[1].compressed);
  EXPECT_LT(got19[1].bytes.size(), got1[1].bytes.size());
  EXPECT_EQ(ZSTD_getFrameContentSize(got1[1].bytes.data(), got1[1].bytes.size()), kBlock);
  // The frame ends with its content checksum: a change to it is caught.
  auto damaged = got1[1];
  damaged.bytes.back() ^= 1;
  std::vector<uint8_t> out(kBlock);
  const size_t n =
      ZSTD_decompress(out.data(), out.size(), damaged.bytes.data(), damaged.bytes.size());
  ASSERT_TRUE(ZSTD_isError(n));
  EXPECT_STREQ(ZSTD_getErrorName(n), "Restored data doesn't match checksum");
}

TEST(Compressor, ARefusingDownstreamEndsTheStreamAndReturnsEveryBuffer) {
  BufferPool pool(3, kBlock);
  RecordingSink sink(pool, /*refuse_from=*/2);
  Compressor c(config(CompressMode::kZstd, 2), pool, sink);
  auto meta = std::make_shared<FileMeta>();
  meta->rel_path = "f";
  bool refused = false;
  for (int i = 0; i < 50 && !refused; ++i) {
    const int buf = pool.acquire();
    ASSERT_GE(buf, 0);
    const auto b = block_bytes(true, 9);
    std::copy(b.begin(), b.end(), pool.data(buf));
    WorkItem item{WorkItem::Kind::kBlock, meta, buf, i * kBlock, kBlock};
    if (!c.push(std::move(item))) {
      refused = true;
      EXPECT_EQ(item.buffer, buf);  // untouched: still the caller's
      pool.release(buf);
    }
  }
  EXPECT_TRUE(refused);
  c.close();
  // Every buffer is back: three acquire at once without blocking.
  for (int i = 0; i < 3; ++i) EXPECT_GE(pool.try_acquire(), 0);
  EXPECT_EQ(sink.items_.size(), 2u);
}

TEST(Compressor, CountsIntoTheSendStatusForTheMetrics) {
  BufferPool pool(4, kBlock);
  RecordingSink sink(pool);
  SendStatus status;
  Compressor c(config(CompressMode::kAuto, 2), pool, sink);
  c.set_status(&status);
  auto meta = std::make_shared<FileMeta>();
  meta->rel_path = "f";
  for (int i = 0; i < 6; ++i) {
    const auto b = block_bytes(i % 2 == 0, static_cast<unsigned>(i));
    const int buf = pool.acquire();
    std::copy(b.begin(), b.end(), pool.data(buf));
    ASSERT_TRUE(c.push(WorkItem{WorkItem::Kind::kBlock, meta, buf, i * kBlock, kBlock}));
  }
  c.close();
  const CompressTotals t = c.totals();
  EXPECT_EQ(status.compress_blocks.load(), 6u);
  EXPECT_EQ(status.compress_blocks_compressed.load(), 3u);  // the text ones
  EXPECT_EQ(status.compress_in_bytes.load(), 6 * kBlock);
  EXPECT_EQ(status.compress_out_bytes.load(), t.sent_bytes);
  EXPECT_LT(t.sent_bytes, 4 * kBlock);  // three random blocks as they are, three frames
}

}  // namespace
}  // namespace ddft::sender
