// What each channel sent: the counts a session's files add up to, per channel, as --metrics
// renders them (label `channel`); files of no channel of the tally's count nowhere.
#include "sender/operations/channel_tally.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sender/work_item.hpp"

namespace ddft::sender {
namespace {

FileMeta channel_file(const std::string& channel, uint64_t size) {
  FileMeta f;
  f.rel_path = "x.bin";
  f.size = size;
  f.set_channel(channel);
  return f;
}

TEST(ChannelTally, CountsEachChannelsFilesAndRendersThemByChannel) {
  ChannelTally tally({"urgent", "bulk"});
  tally.file_sent(channel_file("urgent", 100), {});
  tally.file_sent(channel_file("urgent", 50), {});
  tally.file_sent(channel_file("bulk", 7), {});
  tally.file_failed(channel_file("bulk", 9), "read error");
  tally.file_sent(channel_file("", 1000), {});  // no channel: counted nowhere
  EXPECT_EQ(tally.files_sent(0), 2u);
  EXPECT_EQ(tally.bytes(0), 150u);
  EXPECT_EQ(tally.files_sent(1), 1u);
  EXPECT_EQ(tally.files_failed(1), 1u);
  EXPECT_EQ(tally.bytes(1), 7u);
  common::MetricsRegistry reg;
  tally.add_metrics(reg);
  const std::string text = reg.render();
  for (const char* line : {R"(ddft_send_channel_files_sent_total{channel="urgent"} 2)",
                           R"(ddft_send_channel_bytes_total{channel="urgent"} 150)",
                           R"(ddft_send_channel_files_failed_total{channel="bulk"} 1)",
                           R"(ddft_send_channel_files_sent_total{channel="bulk"} 1)"}) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
}

TEST(ChannelTally, AChannelsFileIsNamedOnTheWireUnderItsChannel) {
  const FileMeta f = channel_file("urgent", 1);
  EXPECT_EQ(f.path_on_wire(), "urgent/x.bin");
  FileMeta plain;
  plain.rel_path = "a/b";
  EXPECT_EQ(plain.path_on_wire(), "a/b");
}

}  // namespace
}  // namespace ddft::sender
