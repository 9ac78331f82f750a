// The transmit stage against a recording sink and a fake clock: what goes on the wire, in which
// order, with which pauses.
#include "sender/transmitter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "common/hash.hpp"
#include "sender/config.hpp"

namespace ddft::sender {
namespace {
using namespace std::chrono;

struct Sent {
  common::PacketType type;
  uint64_t seq;
  common::Clock::time_point at;
  size_t call;  // which send() call carried it
  uint8_t pause_s = 0;
};

// Records every datagram with the fake time it left. Can refuse the first N calls as "full".
class RecordingSink final : public common::DatagramSink {
 public:
  explicit RecordingSink(common::FakeClock& clock, int refuse_first = 0)
      : clock_(clock), refuse_(refuse_first) {}
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams,
                       size_t* sent) override {
    ++calls;
    if (refuse_ > 0) {
      --refuse_;
      *sent = 0;
      return std::make_error_code(std::errc::no_buffer_space);
    }
    for (const auto& d : datagrams) {
      common::Packet p;
      EXPECT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
      Sent s{p.header.type, p.header.seq, clock_.now(), calls};
      if (p.header.type == common::PacketType::kAnnounce) {
        common::Announce a;
        common::decode_announce(p.payload, &a);
        s.pause_s = a.pause_s;
      }
      log.push_back(s);
    }
    *sent = datagrams.size();
    return {};
  }
  std::vector<Sent> log;
  size_t calls = 0;

 private:
  common::FakeClock& clock_;
  int refuse_;
};

// Records the observer callbacks as one line each.
class RecordingObserver final : public SendObserver {
 public:
  void session_started(uint64_t id) override { events.push_back("session " + std::to_string(id)); }
  void file_started(const FileMeta& f) override { events.push_back("start " + f.rel_path); }
  void file_progress(const FileMeta& f, uint64_t sent) override {
    events.push_back("progress " + f.rel_path + " " + std::to_string(sent));
  }
  void file_sent(const FileMeta& f, const common::Digest& d) override {
    events.push_back("sent " + f.rel_path + " key " + std::to_string(d.key32()));
  }
  void file_failed(const FileMeta& f, const std::string& reason) override {
    events.push_back("failed " + f.rel_path + " id " + std::to_string(f.file_id) + ": " + reason);
  }
  void session_finished(uint64_t id) override { events.push_back("done " + std::to_string(id)); }
  void idle() override { ++idles; }
  std::vector<std::string> events;
  std::atomic<int> idles{0};
};

class TransmitterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_.packet_size = 1048;  // 1000 data bytes per packet
    cfg_.rate_mb = 0;
    cfg_.batch = 32;
  }
  // Runs the transmitter over files of the given sizes (content is irrelevant here).
  void run(std::vector<uint64_t> sizes, RecordingSink& sink) {
    BufferPool pool(4, 10000);
    common::BoundedQueue<WorkItem> q(1000);
    Transmitter tx(cfg_, 77, sink, clock_, pool, q, observer_);
    std::thread producer([&] {
      uint32_t id = 1;
      for (uint64_t size : sizes) {
        auto meta = std::make_shared<FileMeta>();
        meta->file_id = id++;
        meta->rel_path = "f" + std::to_string(meta->file_id);
        meta->size = size;
        q.push(WorkItem{WorkItem::Kind::kBegin, meta});
        for (uint64_t off = 0; off < size; off += 10000) {
          const int b = pool.acquire();
          const size_t len = static_cast<size_t>(std::min<uint64_t>(10000, size - off));
          std::memset(pool.data(b), 'x', len);
          q.push(WorkItem{WorkItem::Kind::kBlock, meta, b, off, len});
        }
        WorkItem end{WorkItem::Kind::kEnd, meta};
        end.digest = common::hash_buffer(common::VerifyType::kB2B, {});
        q.push(std::move(end));
      }
      q.close();
    });
    tx.run(std::stop_token{});
    producer.join();
  }
  size_t count(const RecordingSink& s, common::PacketType t) {
    return static_cast<size_t>(std::count_if(s.log.begin(), s.log.end(),
                                             [&](const Sent& x) { return x.type == t; }));
  }

  SenderConfig cfg_;
  common::FakeClock clock_;
  RecordingObserver observer_;
};

TEST_F(TransmitterTest, ObserversHearOfEveryFileInWireOrder) {
  cfg_.repeat = 2;
  RecordingSink sink(clock_);
  BufferPool pool(4, 10000);
  common::BoundedQueue<WorkItem> q(100);
  Transmitter tx(cfg_, 77, sink, clock_, pool, q, observer_);
  auto meta = std::make_shared<FileMeta>();
  meta->file_id = 1;
  meta->rel_path = "a";
  meta->size = 15000;
  const common::Digest digest = common::hash_buffer(common::VerifyType::kB2B, {});
  for (uint8_t copy = 0; copy < 2; ++copy) {
    WorkItem begin{WorkItem::Kind::kBegin, meta};
    begin.copy = copy;
    q.push(std::move(begin));
    for (uint64_t off = 0; off < meta->size; off += 10000) {
      const int b = pool.acquire();
      WorkItem block{WorkItem::Kind::kBlock, meta, b, off,
                     static_cast<size_t>(std::min<uint64_t>(10000, meta->size - off))};
      block.copy = copy;
      q.push(std::move(block));
    }
    WorkItem end{WorkItem::Kind::kEnd, meta};
    end.digest = digest;
    end.copy = copy;
    q.push(std::move(end));
  }
  auto missing = std::make_shared<FileMeta>();
  missing->rel_path = "b";
  WorkItem skip{WorkItem::Kind::kSkip, missing};
  skip.reason = "cannot read 'b': No such file or directory";
  q.push(std::move(skip));
  auto torn = std::make_shared<FileMeta>();
  torn->file_id = 2;
  torn->rel_path = "c";
  torn->size = 100;
  q.push(WorkItem{WorkItem::Kind::kBegin, torn});
  WorkItem abort{WorkItem::Kind::kAbort, torn};
  abort.reason = "read error: Input/output error";
  q.push(std::move(abort));
  q.close();
  tx.run(std::stop_token{});

  const std::vector<std::string> want = {
      "session 77",
      "start a",  // once, not per copy
      "progress a 10000",
      "progress a 15000",
      "progress a 25000",  // the second copy counts on
      "progress a 30000",
      "sent a key " + std::to_string(digest.key32()),  // after the last copy only
      "failed b id 0: cannot read 'b': No such file or directory",
      "start c",
      "failed c id 2: read error: Input/output error",
      "done 77",
  };
  EXPECT_EQ(observer_.events, want);
  // The skipped file put nothing on the wire: two announces x 3 copies for a, 3 for c.
  EXPECT_EQ(count(sink, common::PacketType::kAnnounce), 9u);
  EXPECT_EQ(tx.totals().files_sent, 1u);
  EXPECT_EQ(tx.totals().files_failed, 2u);  // the skip and the abort
}

TEST_F(TransmitterTest, ObserversHearWhenNothingComesForAHeartbeatInterval) {
  cfg_.heartbeat_ms = 10;
  RecordingSink sink(clock_);
  BufferPool pool(4, 10000);
  common::BoundedQueue<WorkItem> q(100);
  Transmitter tx(cfg_, 77, sink, clock_, pool, q, observer_);
  std::thread run([&] { tx.run(std::stop_token{}); });
  // The queue stays empty: each heartbeat interval without work sends a heartbeat and says so.
  for (int i = 0; i < 500 && observer_.idles.load() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  q.close();
  run.join();
  EXPECT_GE(observer_.idles.load(), 2);
  EXPECT_GE(count(sink, common::PacketType::kHeartbeat), 3u * (2 + 1));  // the idle ones and the final
}

TEST_F(TransmitterTest, SessionShapeAndSequenceNumbers) {
  RecordingSink sink(clock_);
  run({2500, 0}, sink);
  using T = common::PacketType;
  EXPECT_EQ(count(sink, T::kAnnounce), 6u);  // 3 copies per file
  EXPECT_EQ(count(sink, T::kData), 3u);
  EXPECT_EQ(count(sink, T::kEnd), 6u);
  EXPECT_EQ(count(sink, T::kHeartbeat), 3u);  // the final heartbeat, 3 copies
  for (size_t i = 0; i < sink.log.size(); ++i) EXPECT_EQ(sink.log[i].seq, i);
  EXPECT_EQ(sink.log.back().type, T::kHeartbeat);
}

TEST_F(TransmitterTest, IntraPacketIntervalSplitsBatchesExactly) {
  cfg_.intra_pkt_interval = 10;
  cfg_.intra_pkt_delay_ms = 7;
  RecordingSink sink(clock_);
  run({100'000}, sink);  // 100 data packets
  // No send() call ever carries more than 10 packets, and consecutive groups of 10 are 7 ms
  // apart.
  std::map<size_t, size_t> per_call;
  for (const auto& s : sink.log) ++per_call[s.call];
  for (const auto& [call, n] : per_call) EXPECT_LE(n, 10u) << call;
  const size_t total = sink.log.size();  // 3 + 100 + 3 + 3 = 109 packets
  EXPECT_EQ(total, 109u);
  EXPECT_EQ(clock_.slept(), milliseconds(7) * (total / 10));
}

TEST_F(TransmitterTest, SleepAlgorithmPausesBetweenAnnounceAndData) {
  cfg_.sleep_alg = true;
  cfg_.eof_delay_ms = 50;
  RecordingSink sink(clock_);
  const uint64_t big = 100ull << 20;  // 100 MiB: a 3 s pause
  run({big, 1000}, sink);
  const auto first_data = std::find_if(sink.log.begin(), sink.log.end(), [](const Sent& s) {
    return s.type == common::PacketType::kData;
  });
  ASSERT_NE(first_data, sink.log.end());
  EXPECT_EQ(sink.log[0].pause_s, 3);  // the announce tells the receiver
  EXPECT_EQ(first_data->at - sink.log[0].at, seconds(3));
  // EOF_DELAY: the second file's announce leaves 50 ms after the first file's last end packet.
  size_t second = 0;
  for (size_t i = 0; i < sink.log.size(); ++i) {
    if (sink.log[i].type == common::PacketType::kAnnounce && sink.log[i].pause_s == 0) {
      second = i;
      break;
    }
  }
  ASSERT_GT(second, 0u);
  // Between them only the first file's end packets and the heartbeat a 3 s file is followed by.
  size_t last_end = second - 1;
  while (last_end > 0 && sink.log[last_end].type == common::PacketType::kHeartbeat) --last_end;
  EXPECT_EQ(sink.log[last_end].type, common::PacketType::kEnd);
  EXPECT_EQ(second - last_end, 1u + cfg_.control_repeat);
  EXPECT_EQ(sink.log[second].at - sink.log[last_end].at, milliseconds(50));
}

TEST_F(TransmitterTest, FullLinkBufferWaitsAndLosesNothing) {
  cfg_.buff_full_delay_ms = 20;
  RecordingSink sink(clock_, /*refuse_first=*/3);
  run({5000}, sink);
  EXPECT_EQ(sink.log.size(), 3u + 5u + 3u + 3u);  // every packet, once
  for (size_t i = 0; i < sink.log.size(); ++i) EXPECT_EQ(sink.log[i].seq, i);
  EXPECT_EQ(clock_.slept(), milliseconds(60));
}

TEST(DftsArgs, SingleDashSpellingsAreTranslated) {
  const char* argv[] = {"dd_file_send", "-fsinterval", "100", "-fsdelay", "0", "-NOSLEEPALG",
                        "-fsinternal", "5", "--", "-NOSLEEPALG"};
  const auto out = translate_dfts_args(10, argv);
  EXPECT_EQ(out, (std::vector<std::string>{"dd_file_send", "--fsinterval", "100", "--fsdelay", "0",
                                           "--no-sleep-alg", "--fsinterval", "5", "--",
                                           "-NOSLEEPALG"}));
}

TEST(DftsArgs, ParsedIntoTheConfig) {
  SenderConfig cfg;
  CLI::App app;
  add_sender_options(app, cfg);
  const char* argv[] = {"dd_file_send", "x", "--dest", "127.0.0.1:1", "-fsinterval", "100",
                        "-fsdelay", "0", "--sleep-alg", "-NOSLEEPALG", "--file-lock", "Y",
                        "--report", "v"};
  const auto args = translate_dfts_args(14, argv);
  std::vector<const char*> ptrs;
  for (const auto& a : args) ptrs.push_back(a.c_str());
  app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  finalize_sender_config(cfg);
  EXPECT_EQ(cfg.fs_interval_mb, 100u);
  EXPECT_EQ(cfg.fs_delay_ms, 0u);
  EXPECT_FALSE(cfg.sleep_alg);  // the later -NOSLEEPALG wins
  EXPECT_TRUE(cfg.file_lock);
  EXPECT_EQ(cfg.report, ReportOption::kVerbose);
}

}  // namespace
}  // namespace ddft::sender
