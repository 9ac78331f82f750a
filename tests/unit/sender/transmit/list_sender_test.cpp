// A lane's share of the session's file list (list_sender.hpp): due after kListBatch files or
// kListInterval, the last list complete when it may be, split over datagrams, and a path that
// cannot fit left out.
#include "sender/transmit/list_sender.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/hash.hpp"

namespace ddft::sender {
namespace {

// Each kFileList datagram's flags and entry ids.
class ListLog final : public common::DatagramSink {
 public:
  struct List {
    uint16_t flags = 0;
    std::vector<uint32_t> ids;
  };
  std::error_code send(std::span<const std::span<const uint8_t>> datagrams, size_t* sent) override {
    for (const auto& d : datagrams) {
      common::Packet p;
      EXPECT_EQ(common::decode_packet(d, &p), common::DecodeStatus::kOk);
      if (p.header.type != common::PacketType::kFileList) continue;
      common::FileList list;
      EXPECT_EQ(common::decode_file_list(p.payload, &list), common::DecodeStatus::kOk);
      List l{list.flags, {}};
      for (const auto& e : list.entries) l.ids.push_back(e.file_id);
      lists.push_back(std::move(l));
    }
    *sent = datagrams.size();
    return {};
  }
  std::vector<List> lists;
};

class ListSenderTest : public ::testing::Test {
 protected:
  // A lane's output and lists over `packet_size`-byte datagrams, each control datagram once.
  void make(size_t packet_size = 1048) {
    cfg_.packet_size = packet_size;
    cfg_.control_repeat = 1;
    out_ = std::make_unique<LaneOutput>(cfg_, 1, sink_, clock_, "send failed", totals_,
                                        [] { return common::Heartbeat{}; });
    lists_ = std::make_unique<ListSender>(cfg_, *out_, list_, clock_, 0);
    lists_->start(clock_.now());
  }
  void add(uint32_t first, uint32_t last, const std::string& path = "f") {
    // The key a file of --verify's type ends with.
    const common::Digest key = common::hash_buffer(cfg_.verify, {});
    for (uint32_t id = first; id <= last; ++id) list_.add({id, 10, false, key, path, 0, false});
  }
  std::vector<uint32_t> ids(size_t i) const {
    return i < sink_.lists.size() ? sink_.lists[i].ids : std::vector<uint32_t>{};
  }

  SenderConfig cfg_;
  common::FakeClock clock_;
  ListLog sink_;
  SendTotals totals_;
  SessionList list_{1, true};
  std::unique_ptr<LaneOutput> out_;
  std::unique_ptr<ListSender> lists_;
};

TEST_F(ListSenderTest, AListGoesOutOnceTheIntervalPassedOrABatchWaits) {
  make();
  add(1, 3);
  lists_->send_if_due();
  EXPECT_TRUE(sink_.lists.empty()) << "neither due yet";
  clock_.advance(kListInterval);
  lists_->send_if_due();
  ASSERT_EQ(sink_.lists.size(), 1u);
  EXPECT_EQ(ids(0), (std::vector<uint32_t>{1, 2, 3}));
  add(4, static_cast<uint32_t>(3 + kListBatch));
  lists_->send_if_due();
  size_t entries = 0;
  for (size_t i = 1; i < sink_.lists.size(); ++i) entries += sink_.lists[i].ids.size();
  EXPECT_EQ(entries, kListBatch) << "a batch waited: at once, over as many datagrams as it takes";
  EXPECT_GT(sink_.lists.size(), 2u);
}

TEST_F(ListSenderTest, TheLastListIsTheCompleteOne) {
  make();
  add(1, 2);
  clock_.advance(kListInterval);
  lists_->send_if_due();
  add(3, 3);
  list_.lane_done(0);
  lists_->send_last();
  ASSERT_EQ(sink_.lists.size(), 2u);
  EXPECT_EQ(sink_.lists[1].flags & common::kListComplete, common::kListComplete);
  EXPECT_EQ(ids(1), (std::vector<uint32_t>{1, 2, 3}));
}

TEST_F(ListSenderTest, APathTooLongForADatagramIsLeftOut) {
  make(300);
  add(1, 1, std::string(400, 'p'));
  add(2, 2, "short");
  clock_.advance(kListInterval);
  lists_->send_if_due();
  ASSERT_EQ(sink_.lists.size(), 1u);
  EXPECT_EQ(ids(0), (std::vector<uint32_t>{2}));
}

}  // namespace
}  // namespace ddft::sender
