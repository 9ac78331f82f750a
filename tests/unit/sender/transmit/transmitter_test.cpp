// The transmit stage against a recording sink and a fake clock: what goes on the wire, in which
// order, with which pauses.
#include "sender/transmit/transmitter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "common/hash.hpp"
#include "sender/config.hpp"

namespace ddft::sender {
namespace {
using namespace std::chrono;

// One entry of a kFileList datagram, with its path copied out of the datagram.
struct Listed {
  uint32_t file_id = 0;
  uint64_t size = 0;
  bool aborted = false;
  uint8_t key_len = 0;
  std::array<uint8_t, common::kMaxKeySize> key{};
  std::string path{};
};

struct Sent {
  common::PacketType type;
  uint64_t seq;
  common::Clock::time_point at;
  size_t call;  // which send() call carried it
  uint8_t pause_s = 0;
  uint16_t flags = 0;            // the header's
  size_t bytes = 0;              // the datagram's length
  uint32_t file_id = 0;          // announce, data
  uint64_t offset = 0;           // data
  size_t data_len = 0;           // data
  uint64_t size = 0;             // announce
  std::string path{};            // announce
  uint16_t list_flags = 0;       // file list
  std::vector<Listed> listed{};  // file list
  uint16_t fec_pos = 0;          // the header's
  uint64_t window_seq = 0;       // parity
  uint16_t window_count = 0;     // parity
  uint32_t heartbeat_flags = 0;  // heartbeat
};

// Records every datagram with the fake time it left. Can refuse the first N calls as "full".
class RecordingSink final : public common::DatagramSink {
 public:
  explicit RecordingSink(common::FakeClock& clock, int refuse_first = 0)
      : clock_(clock), refuse_(refuse_first) {}
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) override {
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
      s.flags = p.header.flags;
      s.fec_pos = p.header.fec_pos;
      s.bytes = d.size();
      if (p.header.type == common::PacketType::kAnnounce) {
        common::Announce a;
        EXPECT_EQ(common::decode_announce(p.payload, &a), common::DecodeStatus::kOk);
        s.pause_s = a.pause_s;
        s.file_id = a.file_id;
        s.size = a.size;
        s.path = a.path;
      } else if (p.header.type == common::PacketType::kData) {
        common::DataHeader dh;
        std::span<const uint8_t> data;
        EXPECT_EQ(common::decode_data(p.payload, &dh, &data), common::DecodeStatus::kOk);
        s.file_id = dh.file_id;
        s.offset = dh.offset;
        s.data_len = data.size();
      } else if (p.header.type == common::PacketType::kHeartbeat) {
        common::Heartbeat hb;
        EXPECT_EQ(common::decode_heartbeat(p.payload, &hb), common::DecodeStatus::kOk);
        s.heartbeat_flags = hb.flags;
      } else if (p.header.type == common::PacketType::kParity) {
        common::Parity pa;
        std::span<const uint8_t> shard;
        EXPECT_EQ(common::decode_parity(p.payload, &pa, &shard), common::DecodeStatus::kOk);
        s.window_seq = pa.window_seq;
        s.window_count = pa.count;
      } else if (p.header.type == common::PacketType::kFileList) {
        common::FileList list;
        EXPECT_EQ(common::decode_file_list(p.payload, &list), common::DecodeStatus::kOk);
        s.list_flags = list.flags;
        for (const auto& e : list.entries) {
          s.listed.push_back({e.file_id, e.size, e.aborted, e.key_len, e.key, std::string(e.path)});
        }
      }
      log.push_back(std::move(s));
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
  // A file for run_files(): sent whole, aborted after its first block, or never announced.
  struct FileSpec {
    enum class Fate { kSent, kAborted, kSkipped };
    uint64_t size = 0;
    std::string path{};  // empty: "f<id>"
    Fate fate = Fate::kSent;
  };
  // The digest the end packet of the file at `path` carries (distinct per file).
  static common::Digest digest_of(const std::string& path) {
    return common::hash_buffer(common::VerifyType::kB2B,
                               {reinterpret_cast<const uint8_t*>(path.data()), path.size()});
  }
  // Runs the transmitter over files of the given sizes (content is irrelevant here).
  void run(std::vector<uint64_t> sizes, RecordingSink& sink) {
    std::vector<FileSpec> files;
    for (uint64_t size : sizes) files.push_back({size});
    run_files(files, sink);
  }
  // The same with paths and fates, each file cfg_.repeat times (--repeat). File ids count the
  // announced files from 1; a skipped file gets none, as the reader does.
  void run_files(const std::vector<FileSpec>& files, RecordingSink& sink) {
    BufferPool pool(4, 10000);
    common::BoundedQueue<WorkItem> q(1000);
    Transmitter tx(cfg_, 77, sink, clock_, pool, q, observer_);
    std::thread producer([&] {
      uint32_t id = 1;
      for (const FileSpec& f : files) {
        auto meta = std::make_shared<FileMeta>();
        meta->size = f.size;
        if (f.fate == FileSpec::Fate::kSkipped) {
          meta->rel_path = f.path.empty() ? "skipped" : f.path;
          WorkItem skip{WorkItem::Kind::kSkip, meta};
          skip.reason = "cannot read: No such file or directory";
          q.push(std::move(skip));
          continue;
        }
        meta->file_id = id++;
        meta->rel_path = f.path.empty() ? "f" + std::to_string(meta->file_id) : f.path;
        for (unsigned copy = 0; copy < cfg_.repeat; ++copy) {
          WorkItem begin{WorkItem::Kind::kBegin, meta};
          begin.copy = static_cast<uint8_t>(copy);
          q.push(std::move(begin));
          for (uint64_t off = 0; off < f.size; off += 10000) {
            const int b = pool.acquire();
            const size_t len = static_cast<size_t>(std::min<uint64_t>(10000, f.size - off));
            std::memset(pool.data(b), 'x', len);
            WorkItem block{WorkItem::Kind::kBlock, meta, b, off, len};
            block.copy = static_cast<uint8_t>(copy);
            q.push(std::move(block));
            if (f.fate == FileSpec::Fate::kAborted) break;
          }
          if (f.fate == FileSpec::Fate::kAborted) {
            WorkItem abort{WorkItem::Kind::kAbort, meta};
            abort.reason = "read error: Input/output error";
            q.push(std::move(abort));
            break;
          }
          WorkItem end{WorkItem::Kind::kEnd, meta};
          end.digest = digest_of(meta->rel_path);
          end.copy = static_cast<uint8_t>(copy);
          q.push(std::move(end));
        }
      }
      q.close();
    });
    tx.run(std::stop_token{});
    producer.join();
  }
  size_t count(const RecordingSink& s, common::PacketType t) {
    return static_cast<size_t>(
        std::count_if(s.log.begin(), s.log.end(), [&](const Sent& x) { return x.type == t; }));
  }

  // One file list as the receiver would put it together: consecutive kFileList datagrams, each
  // sent control_repeat times in a row (checked here), their entries in order.
  struct ListSent {
    uint16_t flags = 0;
    std::vector<Listed> entries;
    size_t first = 0;  // index of its first datagram in the sink's log
    common::Clock::time_point at{};
  };
  std::vector<ListSent> lists(const RecordingSink& sink) {
    std::vector<ListSent> out;
    const auto& log = sink.log;
    for (size_t i = 0; i < log.size();) {
      if (log[i].type != common::PacketType::kFileList) {
        ++i;
        continue;
      }
      ListSent l;
      l.flags = log[i].list_flags;
      l.first = i;
      l.at = log[i].at;
      while (i < log.size() && log[i].type == common::PacketType::kFileList) {
        EXPECT_EQ(log[i].list_flags, l.flags) << "datagram " << i;
        for (unsigned c = 1; c < cfg_.control_repeat; ++c) {
          // Copies: the same entries under the next sequence numbers.
          EXPECT_LT(i + c, log.size());
          if (i + c >= log.size()) break;
          EXPECT_EQ(log[i + c].type, common::PacketType::kFileList) << "datagram " << i + c;
          EXPECT_EQ(log[i + c].listed.size(), log[i].listed.size()) << "datagram " << i + c;
          for (size_t e = 0; e < std::min(log[i].listed.size(), log[i + c].listed.size()); ++e) {
            EXPECT_EQ(log[i + c].listed[e].file_id, log[i].listed[e].file_id);
          }
        }
        l.entries.insert(l.entries.end(), log[i].listed.begin(), log[i].listed.end());
        i += cfg_.control_repeat;
      }
      out.push_back(std::move(l));
    }
    return out;
  }
  static std::vector<uint32_t> ids(const ListSent& l) {
    std::vector<uint32_t> v;
    for (const Listed& e : l.entries) v.push_back(e.file_id);
    return v;
  }
  static std::vector<uint32_t> id_range(uint32_t first, uint32_t last) {
    std::vector<uint32_t> v;
    for (uint32_t i = first; i <= last; ++i) v.push_back(i);
    return v;
  }
  static bool is_repeat(const Sent& s) {
    return s.type == common::PacketType::kAnnounce && (s.flags & common::kFlagRepeat) != 0;
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

// Channels interleave their files item by item: a second file begins, and ends, while the first
// is half sent. Each keeps its own progress; each is announced once and ended once, its data
// carrying its own id; the observers hear of each as it ends, and a stop aborts what is open.
TEST_F(TransmitterTest, InterleavedFilesEachKeepTheirOwnProgress) {
  RecordingSink sink(clock_);
  BufferPool pool(8, 10000);
  common::BoundedQueue<WorkItem> q(100);
  Transmitter tx(cfg_, 77, sink, clock_, pool, q, observer_);
  const auto file = [](uint32_t id, const std::string& path, uint64_t size) {
    auto m = std::make_shared<FileMeta>();
    m->file_id = id;
    m->rel_path = path;
    m->size = size;
    return std::shared_ptr<const FileMeta>(m);
  };
  const auto block = [&](const std::shared_ptr<const FileMeta>& m, uint64_t off) {
    const int b = pool.acquire();
    return WorkItem{WorkItem::Kind::kBlock, m, b, off,
                    static_cast<size_t>(std::min<uint64_t>(10000, m->size - off))};
  };
  const auto end = [&](const std::shared_ptr<const FileMeta>& m) {
    WorkItem e{WorkItem::Kind::kEnd, m};
    e.digest = digest_of(m->rel_path);
    return e;
  };
  const auto bulk = file(1, "bulk", 20000), urgent = file(2, "urgent", 5000),
             open = file(3, "open", 20000);
  q.push(WorkItem{WorkItem::Kind::kBegin, bulk});
  q.push(block(bulk, 0));
  q.push(WorkItem{WorkItem::Kind::kBegin, urgent});
  q.push(block(urgent, 0));
  q.push(end(urgent));
  q.push(WorkItem{WorkItem::Kind::kBegin, open});
  q.push(block(open, 0));
  q.push(block(bulk, 10000));
  q.push(end(bulk));
  q.close();  // "open" never ends: the session's end aborts it
  tx.run(std::stop_token{});

  const std::vector<std::string> want = {
      "session 77",
      "start bulk",
      "progress bulk 10000",
      "start urgent",
      "progress urgent 5000",
      "sent urgent key " + std::to_string(digest_of("urgent").key32()),
      "start open",
      "progress open 10000",
      "progress bulk 20000",  // its own count, not the other files'
      "sent bulk key " + std::to_string(digest_of("bulk").key32()),
      "failed open id 3: sender stopped",
      "done 77",
  };
  EXPECT_EQ(observer_.events, want);
  // On the wire: bulk's data at 0 and 10000, then urgent's, each under its own id.
  std::vector<std::pair<uint32_t, uint64_t>> data;
  for (const Sent& x : sink.log) {
    if (x.type == common::PacketType::kData && x.offset % 10000 == 0) {
      data.emplace_back(x.file_id, x.offset);
    }
  }
  EXPECT_EQ(data, (std::vector<std::pair<uint32_t, uint64_t>>{{1, 0}, {2, 0}, {3, 0}, {1, 10000}}));
  EXPECT_EQ(count(sink, common::PacketType::kEnd), 2u * cfg_.control_repeat);
  EXPECT_EQ(count(sink, common::PacketType::kAbort), 1u * cfg_.control_repeat);
  EXPECT_EQ(tx.totals().files_sent, 2u);
  EXPECT_EQ(tx.totals().files_failed, 1u);
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
  EXPECT_GE(count(sink, common::PacketType::kHeartbeat),
            3u * (2 + 1));  // the idle ones and the final
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
  // The sender info x 3, then 3 + 100 + 3, the file list x 3, 3 = 115 packets.
  const size_t total = sink.log.size();
  EXPECT_EQ(total, 115u);
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
  const auto announce = std::find_if(sink.log.begin(), sink.log.end(), [](const Sent& s) {
    return s.type == common::PacketType::kAnnounce;
  });
  ASSERT_NE(announce, sink.log.end());
  EXPECT_EQ(announce->pause_s, 3);  // the announce tells the receiver
  EXPECT_EQ(first_data->at - announce->at, seconds(3));
  // EOF_DELAY: the second file's announce leaves 50 ms after the first file's last end packet.
  size_t second = 0;
  for (size_t i = 0; i < sink.log.size(); ++i) {
    if (sink.log[i].type == common::PacketType::kAnnounce && sink.log[i].file_id == 2) {
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
  // Every packet, once: the sender info, the file, the list, the final heartbeat.
  EXPECT_EQ(sink.log.size(), 3u + 3u + 5u + 3u + 3u + 3u);
  for (size_t i = 0; i < sink.log.size(); ++i) EXPECT_EQ(sink.log[i].seq, i);
  EXPECT_EQ(clock_.slept(), milliseconds(60));
}

TEST_F(TransmitterTest, RepeatedAnnounceAfterEveryIntervalOfData) {
  RecordingSink sink(clock_);
  const uint64_t mib = 1 << 20;
  // 10 MiB + 500 bytes: repeats after 1, 2, ... 10 MiB (the 10th packet crossing 10 MiB is not
  // the last). Exactly 1 MiB and 300 kB: none.
  run({10 * mib + 500, mib, 300'000}, sink);
  // The announce is header + fixed part + "f1": R = max(1 MiB, 1024 x 66 bytes) = 1 MiB.
  ASSERT_EQ(repeat_announce_interval(common::announce_datagram_size(2)), mib);
  const auto& log = sink.log;
  std::vector<size_t> repeats;
  for (size_t i = 0; i < log.size(); ++i) {
    if (is_repeat(log[i])) repeats.push_back(i);
  }
  ASSERT_EQ(repeats.size(), 10u);
  uint64_t repeat_bytes = 0;
  uint64_t data_bytes = 0;
  for (const Sent& s : log) {
    if (s.type == common::PacketType::kData && s.file_id == 1) data_bytes += s.bytes;
  }
  for (size_t k = 0; k < repeats.size(); ++k) {
    const Sent& r = log[repeats[k]];
    // The file's announce again, but for the pause: same id, path and size.
    EXPECT_EQ(r.file_id, 1u);
    EXPECT_EQ(r.path, "f1");
    EXPECT_EQ(r.size, 10 * mib + 500);
    EXPECT_EQ(r.pause_s, 0);
    // Right after the data packet that first reaches (k + 1) MiB of the file.
    const Sent& before = log[repeats[k] - 1];
    ASSERT_EQ(before.type, common::PacketType::kData) << k;
    EXPECT_EQ(before.file_id, 1u);
    EXPECT_LT(before.offset, (k + 1) * mib) << k;
    EXPECT_GE(before.offset + before.data_len, (k + 1) * mib) << k;
    // Once: no copies of it follow.
    EXPECT_EQ(log[repeats[k] + 1].type, common::PacketType::kData) << k;
    repeat_bytes += r.bytes;
  }
  // Never before the first data packet (the three announces are first), never after the end.
  EXPECT_GT(repeats.front(), 3u);
  const auto first_end = std::find_if(
      log.begin(), log.end(), [](const Sent& s) { return s.type == common::PacketType::kEnd; });
  EXPECT_LT(repeats.back(), static_cast<size_t>(first_end - log.begin()));
  // The cost: at most 1/1024 of the file's bytes, under 0.1% of its data packets' bytes.
  EXPECT_LE(repeat_bytes * 1024, 10 * mib + 500);
  EXPECT_LT(static_cast<double>(repeat_bytes), 0.001 * static_cast<double>(data_bytes));
  // The first announces (3 per file) carry no repeat flag.
  size_t plain = 0;
  for (const Sent& s : log) {
    if (s.type == common::PacketType::kAnnounce && !is_repeat(s)) ++plain;
  }
  EXPECT_EQ(plain, 9u);
}

TEST_F(TransmitterTest, RepeatedAnnounceSpacingGrowsWithItsSize) {
  cfg_.packet_size = 2548;  // 2500 data bytes per packet: room for a 2000-byte path
  RecordingSink sink(clock_);
  const std::string path = std::string(1000, 'd') + "/" + std::string(999, 'n');  // 2000 bytes
  const uint64_t size = 10ull << 20;
  run_files({{size, path}}, sink);
  // 1024 x 2064 bytes: about 2 MiB between repeats, so four of them in 10 MiB.
  const uint64_t r = repeat_announce_interval(common::announce_datagram_size(2000));
  EXPECT_EQ(r, 1024u * 2064u);
  uint64_t repeat_bytes = 0;
  std::vector<uint64_t> after;  // the file bytes sent before each repeat
  for (size_t i = 1; i < sink.log.size(); ++i) {
    if (!is_repeat(sink.log[i])) continue;
    repeat_bytes += sink.log[i].bytes;
    after.push_back(sink.log[i - 1].offset + sink.log[i - 1].data_len);
  }
  ASSERT_EQ(after.size(), (size - 1) / r);
  for (size_t k = 0; k < after.size(); ++k) {
    EXPECT_GE(after[k], (k + 1) * r);
    EXPECT_LT(after[k], (k + 1) * r + 2500);  // within one data packet
  }
  EXPECT_LE(repeat_bytes * 1024, size);
}

TEST_F(TransmitterTest, RepeatedAnnouncePerCopy) {
  cfg_.repeat = 2;
  RecordingSink sink(clock_);
  run({3'500'000}, sink);  // 3 repeats in each copy
  std::vector<size_t> repeats, ends;
  for (size_t i = 0; i < sink.log.size(); ++i) {
    if (is_repeat(sink.log[i])) repeats.push_back(i);
    if (sink.log[i].type == common::PacketType::kEnd) ends.push_back(i);
  }
  ASSERT_EQ(repeats.size(), 6u);
  ASSERT_EQ(ends.size(), 6u);  // 2 copies x 3
  EXPECT_LT(repeats[2], ends[0]);
  EXPECT_GT(repeats[3], ends[2]);  // the second copy counts from its own start
  for (size_t k = 0; k < 3; ++k) {
    const Sent& a = sink.log[repeats[k] - 1];
    const Sent& b = sink.log[repeats[k + 3] - 1];
    EXPECT_EQ(a.offset, b.offset) << k;
  }
}

TEST_F(TransmitterTest, FileListAtTheEndNamesEveryAnnouncedFileWithItsKey) {
  RecordingSink sink(clock_);
  using F = FileSpec::Fate;
  run_files({{2500, "dir/a.bin"},
             {100, "missing", F::kSkipped},
             {25'000, "torn.log", F::kAborted},
             {0, "empty"}},
            sink);
  const auto all = lists(sink);
  ASSERT_EQ(all.size(), 1u);  // a short session: only the last list
  const ListSent& l = all[0];
  EXPECT_EQ(l.flags, common::kListComplete);
  ASSERT_EQ(l.entries.size(), 3u);  // the skipped file was never announced
  EXPECT_EQ(l.entries[0].file_id, 1u);
  EXPECT_EQ(l.entries[0].path, "dir/a.bin");
  EXPECT_EQ(l.entries[0].size, 2500u);
  EXPECT_FALSE(l.entries[0].aborted);
  EXPECT_EQ(l.entries[0].key_len, 16);
  EXPECT_EQ(l.entries[0].key, digest_of("dir/a.bin").bytes);  // the full digest of its end
  EXPECT_EQ(l.entries[1].file_id, 2u);
  EXPECT_EQ(l.entries[1].path, "torn.log");
  EXPECT_EQ(l.entries[1].size, 25'000u);
  EXPECT_TRUE(l.entries[1].aborted);
  EXPECT_EQ(l.entries[1].key_len, 0);
  EXPECT_EQ(l.entries[2].path, "empty");
  EXPECT_EQ(l.entries[2].key, digest_of("empty").bytes);
  // After every file's last packet, right before the final heartbeat (x 3), which ends the log.
  const auto& log = sink.log;
  ASSERT_EQ(log.size(), l.first + 3 + 3);
  EXPECT_EQ(log[l.first - 1].type, common::PacketType::kEnd);
  for (size_t i = l.first + 3; i < log.size(); ++i)
    EXPECT_EQ(log[i].type, common::PacketType::kHeartbeat);
}

TEST_F(TransmitterTest, FileListEveryKListBatchFiles) {
  RecordingSink sink(clock_);
  // 600 empty files and no pacing: the fake clock never moves, so only the count triggers.
  run(std::vector<uint64_t>(600, 0), sink);
  const auto all = lists(sink);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].flags, 0);
  EXPECT_EQ(ids(all[0]), id_range(1, 256));
  EXPECT_EQ(all[1].flags, 0);
  EXPECT_EQ(ids(all[1]), id_range(257, 512));
  EXPECT_EQ(all[2].flags, common::kListComplete);
  EXPECT_EQ(ids(all[2]), id_range(1, 600));
  // A list of 256 takes several datagrams of 1048 bytes: each was full or the last.
  size_t datagrams = 0;
  for (size_t i = all[0].first; sink.log[i].type == common::PacketType::kFileList; ++i) {
    EXPECT_LE(sink.log[i].bytes, cfg_.packet_size);
    ++datagrams;
  }
  EXPECT_GT(datagrams / cfg_.control_repeat, 5u);
  // The first list goes right after the 256th file's end packets.
  EXPECT_EQ(sink.log[all[0].first - 1].type, common::PacketType::kEnd);
}

TEST_F(TransmitterTest, FileListEveryKListIntervalOnTheClock) {
  cfg_.eof_delay_ms = 1000;  // the fake clock moves 1 s after every file
  RecordingSink sink(clock_);
  const auto start = clock_.now();
  run(std::vector<uint64_t>(12, 1500), sink);
  const auto all = lists(sink);
  ASSERT_EQ(all.size(), 3u);
  // Files 1-5 end by 4 s; 5 s after the start, after file 5's EOF delay, their list goes.
  EXPECT_EQ(ids(all[0]), id_range(1, 5));
  EXPECT_EQ(all[0].at - start, seconds(5));
  EXPECT_EQ(ids(all[1]), id_range(6, 10));
  EXPECT_EQ(all[1].at - all[0].at, seconds(5));
  EXPECT_EQ(all[2].flags, common::kListComplete);
  EXPECT_EQ(ids(all[2]), id_range(1, 12));
}

TEST_F(TransmitterTest, HotFolderSessionListsOnlyWhatIsNew) {
  cfg_.watch_dir = "/srv/outbox";  // a hot folder: never a complete list
  // On the fake clock: small files about 14 ms apart (more than kListBatch per kListInterval),
  // and every 500th file 6 MiB at 1 MiB/s, which holds the list of the files before it until
  // kListInterval has passed (sent mid-file).
  cfg_.eof_delay_ms = 10;
  cfg_.rate_mb = 1;
  RecordingSink sink(clock_);
  std::vector<FileSpec> files;
  for (int i = 0; i < 3000; ++i) {
    files.push_back({i % 500 == 250 ? 6ull << 20 : static_cast<uint64_t>(i % 7) * 700,
                     "in/" + std::to_string(i),
                     i % 101 == 5 ? FileSpec::Fate::kAborted : FileSpec::Fate::kSent});
  }
  run_files(files, sink);
  const auto all = lists(sink);
  ASSERT_GT(all.size(), 10u);
  std::vector<uint32_t> seen;
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(all[k].flags, 0) << k;
    EXPECT_LE(all[k].entries.size(), kListBatch) << k;
    // A list comes kListInterval after the previous one, or sooner only when kListBatch files
    // were waiting; the last one (the session's end) whenever it ends. The sink sees a list
    // when the rate limit lets its batch out (a batch of 32 datagrams at 1 MiB/s: ~32 ms of fake
    // time), not when it was due, hence the margin.
    if (k > 0 && k + 1 < all.size() && all[k].entries.size() < kListBatch) {
      EXPECT_GE(all[k].at - all[k - 1].at, kListInterval - milliseconds(100)) << k;
    }
    for (const Listed& e : all[k].entries) {
      seen.push_back(e.file_id);
      EXPECT_EQ(e.aborted, (e.file_id - 1) % 101 == 5) << e.file_id;
      EXPECT_EQ(e.path, "in/" + std::to_string(e.file_id - 1));
    }
  }
  EXPECT_EQ(seen, id_range(1, 3000));  // every file once, in order
  const bool by_count = std::any_of(
      all.begin(), all.end(), [](const ListSent& l) { return l.entries.size() == kListBatch; });
  const bool by_time = std::any_of(all.begin(), all.end() - 1,
                                   [](const ListSent& l) { return l.entries.size() < kListBatch; });
  EXPECT_TRUE(by_count);
  EXPECT_TRUE(by_time);
  // Some list went out between two data packets of a big file.
  bool mid_file = false;
  for (const ListSent& l : all) {
    size_t after = l.first;
    while (after < sink.log.size() && sink.log[after].type == common::PacketType::kFileList)
      ++after;
    mid_file =
        mid_file || (sink.log[l.first - 1].type == common::PacketType::kData &&
                     after < sink.log.size() && sink.log[after].type == common::PacketType::kData);
  }
  EXPECT_TRUE(mid_file);
}

TEST_F(TransmitterTest, HotFolderIdleSendsTheListOnTime) {
  cfg_.watch_dir = "/srv/outbox";
  cfg_.heartbeat_ms = 10;  // real time: how long the queue waits before an idle pass
  RecordingSink sink(clock_);
  BufferPool pool(4, 10000);
  common::BoundedQueue<WorkItem> q(100);
  Transmitter tx(cfg_, 77, sink, clock_, pool, q, observer_);
  std::thread run([&] { tx.run(std::stop_token{}); });
  auto wait_idles = [&](int n) {
    for (int i = 0; i < 1000 && observer_.idles.load() < n; ++i) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_GE(observer_.idles.load(), n);
  };
  auto meta = std::make_shared<FileMeta>();
  meta->file_id = 1;
  meta->rel_path = "report.csv";
  q.push(WorkItem{WorkItem::Kind::kBegin, meta});
  WorkItem end{WorkItem::Kind::kEnd, meta};
  end.digest = digest_of(meta->rel_path);
  q.push(std::move(end));
  // Idle passes after the file: the fake clock has not moved, so no list yet.
  wait_idles(observer_.idles.load() + 2);
  const auto before = clock_.now();
  clock_.advance(kListInterval);
  // The pass that began after the clock moved sends it.
  wait_idles(observer_.idles.load() + 2);
  q.close();
  run.join();
  const auto all = lists(sink);
  ASSERT_EQ(all.size(), 1u);  // and nothing more at the end: nothing new
  EXPECT_EQ(all[0].flags, 0);
  EXPECT_EQ(ids(all[0]), std::vector<uint32_t>{1});
  EXPECT_GE(all[0].at, before + kListInterval);
  // Idle heartbeats went before it: it waited for the interval, not for the end.
  EXPECT_EQ(sink.log[all[0].first - 1].type, common::PacketType::kHeartbeat);
}

TEST_F(TransmitterTest, PastKCompleteListMaxTheLastListHasOnlyTheRest) {
  cfg_.control_repeat = 1;  // 100,001 files: keep the log small
  RecordingSink sink(clock_);
  run(std::vector<uint64_t>(kCompleteListMax + 1, 0), sink);
  const auto all = lists(sink);
  ASSERT_FALSE(all.empty());
  std::vector<uint32_t> seen;
  for (const ListSent& l : all) {
    EXPECT_EQ(l.flags, 0);
    for (const Listed& e : l.entries) seen.push_back(e.file_id);
  }
  EXPECT_EQ(seen, id_range(1, static_cast<uint32_t>(kCompleteListMax + 1)));
  // (kCompleteListMax + 1) % 256 files came after the last periodic list.
  EXPECT_EQ(all.back().entries.size(), (kCompleteListMax + 1) % kListBatch);
}

// --- Heartbeats during the DFTS sleeps (the keepalive). The receiver warns after 3 heartbeat
// intervals without a packet; a deliberate pause must never look like that.

// The heartbeats that say the sender sleeps (kHeartbeatSleeping).
size_t sleeping_heartbeats(const RecordingSink& sink) {
  return static_cast<size_t>(std::count_if(sink.log.begin(), sink.log.end(), [](const Sent& s) {
    return s.type == common::PacketType::kHeartbeat &&
           (s.heartbeat_flags & common::kHeartbeatSleeping) != 0;
  }));
}

// The longest time between two consecutive datagrams of the session.
nanoseconds longest_quiet(const RecordingSink& sink) {
  nanoseconds most{0};
  for (size_t i = 1; i < sink.log.size(); ++i) {
    most = std::max<nanoseconds>(most, sink.log[i].at - sink.log[i - 1].at);
  }
  return most;
}

// Every datagram went out in sequence order with no number skipped: a heartbeat never overtook
// one encoded before it (the receiver counts a gap as loss, and a late packet stays counted).
void expect_in_sequence(const RecordingSink& sink) {
  for (size_t i = 0; i < sink.log.size(); ++i) {
    ASSERT_EQ(sink.log[i].seq, i) << "datagram " << i;
  }
}

// Every FEC window as the receiver places its sources (by seq - fec_pos): each window a parity
// names holds exactly its `count` sources, at places 0 .. count - 1, and every source is in a
// window whose parity went out.
void expect_whole_windows(const RecordingSink& sink) {
  std::map<uint64_t, std::vector<uint16_t>> windows;  // window_seq: the places filled
  std::map<uint64_t, uint16_t> parity;                // window_seq: count
  for (const Sent& s : sink.log) {
    if (s.type == common::PacketType::kParity) {
      parity[s.window_seq] = s.window_count;
    } else if (s.flags & common::kFlagFec) {
      ASSERT_LE(s.fec_pos, s.seq);
      windows[s.seq - s.fec_pos].push_back(s.fec_pos);
    }
  }
  for (const auto& [start, places] : windows) {
    ASSERT_EQ(parity.count(start), 1u) << "window at seq " << start << " got no parity";
    std::vector<uint16_t> want(parity[start]);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint16_t>(i);
    EXPECT_EQ(places, want) << "window at seq " << start;
  }
  EXPECT_EQ(windows.size(), parity.size());
}

TEST_F(TransmitterTest, EofDelayKeepsSendingHeartbeats) {
  cfg_.eof_delay_ms = 4500;
  RecordingSink sink(clock_);
  run({5000, 5000}, sink);
  EXPECT_EQ(clock_.slept(), milliseconds(9000));  // both delays, whole
  EXPECT_LE(longest_quiet(sink), milliseconds(cfg_.heartbeat_ms));
  // 4 in each delay, and the final heartbeat's 3 copies.
  EXPECT_EQ(count(sink, common::PacketType::kHeartbeat), 4u + 4u + 3u);
  EXPECT_EQ(sleeping_heartbeats(sink), 4u + 4u) << "those of the delays say the sender sleeps";
  expect_in_sequence(sink);
}

TEST_F(TransmitterTest, ForcedSleepsKeepSendingHeartbeats) {
  cfg_.fs_interval_mb = 1;
  cfg_.fs_delay_ms = 4500;
  RecordingSink sink(clock_);
  run({2'500'000}, sink);  // 2.6 MB on the wire: two forced sleeps
  EXPECT_EQ(clock_.slept(), milliseconds(9000));
  EXPECT_LE(longest_quiet(sink), milliseconds(cfg_.heartbeat_ms));
  EXPECT_EQ(sleeping_heartbeats(sink), 4u + 4u) << "4 in each sleep, each saying so";
  expect_in_sequence(sink);
}

TEST_F(TransmitterTest, IntraPacketSleepsKeepSendingHeartbeats) {
  cfg_.intra_pkt_interval = 40;
  cfg_.intra_pkt_delay_ms = 2500;
  RecordingSink sink(clock_);
  run({100'000}, sink);  // 112 packets: sleeps after 40 and 80 (the heartbeats are not counted)
  EXPECT_EQ(clock_.slept(), milliseconds(5000));
  EXPECT_LE(longest_quiet(sink), milliseconds(cfg_.heartbeat_ms));
  EXPECT_EQ(count(sink, common::PacketType::kHeartbeat), 2u + 2u + 3u);
  EXPECT_EQ(sleeping_heartbeats(sink), 2u + 2u) << "those of the sleeps say the sender sleeps";
  expect_in_sequence(sink);
}

TEST_F(TransmitterTest, SleepAlgorithmPauseKeepsSendingHeartbeats) {
  cfg_.sleep_alg = true;
  cfg_.heartbeat_ms = 700;
  RecordingSink sink(clock_);
  // 100 MiB: a 3 s pause after the announce; one block, then the file is aborted.
  run_files({{100ull << 20, "big", FileSpec::Fate::kAborted}}, sink);
  EXPECT_EQ(clock_.slept(), seconds(3));
  EXPECT_LE(longest_quiet(sink), milliseconds(700));
  // At 0.7, 1.4, 2.1 and 2.8 s of the pause, each once, then the data.
  std::vector<nanoseconds> beats;
  for (const Sent& s : sink.log) {
    if (s.type == common::PacketType::kData) break;
    if (s.type == common::PacketType::kHeartbeat) {
      beats.push_back(s.at - sink.log[0].at);
      EXPECT_EQ(s.heartbeat_flags, common::kHeartbeatSleeping);
    }
  }
  EXPECT_EQ(beats, (std::vector<nanoseconds>{milliseconds(700), milliseconds(1400),
                                             milliseconds(2100), milliseconds(2800)}));
  expect_in_sequence(sink);
}

TEST_F(TransmitterTest, BeforeItsFirstHeartbeatTheLinkKeepsToTheReceiversDefault) {
  // A 5 s interval: until a heartbeat has told the receiver so, it counts 3 x 1 s.
  cfg_.sleep_alg = true;
  cfg_.heartbeat_ms = 5000;
  RecordingSink sink(clock_);
  run_files({{100ull << 20, "big", FileSpec::Fate::kAborted}}, sink);
  std::vector<nanoseconds> beats;
  for (const Sent& s : sink.log) {
    if (s.type == common::PacketType::kData) break;
    if (s.type == common::PacketType::kHeartbeat) beats.push_back(s.at - sink.log[0].at);
  }
  // The first after 1 s; it tells 5 s, which outlasts the pause.
  EXPECT_EQ(beats, (std::vector<nanoseconds>{seconds(1)}));
}

TEST_F(TransmitterTest, HeartbeatsInSleepsKeepFecWindowsWhole) {
  // Small windows, and sleeps falling everywhere in them (and in their parity).
  cfg_.fec = {8, 2, 1};
  cfg_.intra_pkt_interval = 7;
  cfg_.intra_pkt_delay_ms = 1500;
  cfg_.fs_interval_mb = 1;
  cfg_.fs_delay_ms = 2500;
  cfg_.eof_delay_ms = 1200;
  RecordingSink sink(clock_);
  run({1'200'000, 30'000}, sink);
  EXPECT_LE(longest_quiet(sink), milliseconds(cfg_.heartbeat_ms));
  expect_in_sequence(sink);
  expect_whole_windows(sink);
  // Both kinds of keepalive happened: a heartbeat in a window of data (a source right after a
  // data packet; the others come in threes after a file's end), and one while a window's parity
  // was going out (outside any window).
  size_t sources = 0, outside = 0;
  for (size_t i = 1; i < sink.log.size(); ++i) {
    const Sent& s = sink.log[i];
    if (s.type != common::PacketType::kHeartbeat) continue;
    if (!(s.flags & common::kFlagFec)) {
      ++outside;
    } else if (sink.log[i - 1].type == common::PacketType::kData) {
      ++sources;
    }
  }
  EXPECT_GT(sources, 0u);
  EXPECT_GT(outside, 0u);
}

TEST_F(TransmitterTest, AFullLinkBufferIsRetriedAtLeastEveryHeartbeatInterval) {
  cfg_.buff_full_delay_ms = 5000;
  RecordingSink sink(clock_, /*refuse_first=*/3);
  run({5000}, sink);
  EXPECT_EQ(clock_.slept(), seconds(3));  // each wait cut to the 1 s interval
  // Every packet once (the sender info first); the file took 3 s, so a heartbeat (3 copies)
  // follows its end.
  EXPECT_EQ(sink.log.size(), 3u + 3u + 5u + 3u + 3u + 3u + 3u);
  EXPECT_EQ(count(sink, common::PacketType::kHeartbeat), 3u + 3u);
  expect_in_sequence(sink);
}

}  // namespace
}  // namespace ddft::sender
