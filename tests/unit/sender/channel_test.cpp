// A channel as --channel gives it: its name, its source or hot folder, its class, weight, cap and
// minimum share; every bad value refused in one line naming the channel and the key; the
// channels checked together.
#include "sender/channel.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ddft::sender {
namespace {
using ::testing::HasSubstr;

ChannelSpec parsed(const std::string& text) {
  ChannelSpec c;
  const auto why = parse_channel(text, &c);
  EXPECT_FALSE(why.has_value()) << text << ": " << why.value_or("");
  return c;
}

std::string refusal(const std::string& text) {
  ChannelSpec c;
  return parse_channel(text, &c).value_or("(taken)");
}

TEST(ChannelSpec, EverySettingIsTaken) {
  const ChannelSpec c = parsed("bulk:watch=/in/bulk,class=2,weight=3,rate=12.5,min-share=10%");
  EXPECT_EQ(c.name, "bulk");
  EXPECT_EQ(c.watch_dir, "/in/bulk");
  EXPECT_TRUE(c.sources.empty());
  EXPECT_EQ(c.policy.priority, 2u);
  EXPECT_EQ(c.policy.weight, 3u);
  EXPECT_DOUBLE_EQ(c.policy.rate_cap, 12.5 * 1024 * 1024) << "MB/s as --rate: MiB";
  EXPECT_DOUBLE_EQ(c.policy.min_share, 0.10);
  const ChannelSpec once = parsed("urgent:source=/a,source=/b/dir/");
  EXPECT_EQ(once.sources, (std::vector<std::string>{"/a", "/b/dir/"}));
  EXPECT_EQ(once.policy.priority, 0u);
  EXPECT_EQ(once.policy.weight, 1u);
  EXPECT_EQ(once.policy.rate_cap, 0.0);
  EXPECT_EQ(parsed("x:source=/a,min-share=5").policy.min_share, 0.05) << "the % is optional";
}

TEST(ChannelSpec, ABadValueIsOneLineNamingTheChannelAndTheKey) {
  EXPECT_EQ(refusal(":source=/a"), "a channel's name is 1 to 64 characters");
  EXPECT_EQ(refusal("a/b:source=/a"), "channel 'a/b': a name takes only A-Z a-z 0-9 . _ -");
  EXPECT_EQ(refusal("..:source=/a"), "'..' cannot name a channel");
  EXPECT_EQ(refusal("bulk"), "channel 'bulk': expected NAME:watch=DIR or NAME:source=PATH");
  EXPECT_EQ(refusal("bulk:class=1"), "channel 'bulk': give either watch=DIR or source=PATH");
  EXPECT_EQ(refusal("bulk:watch=/a,source=/b"),
            "channel 'bulk': give either watch=DIR or source=PATH");
  EXPECT_EQ(refusal("bulk:watch=/a,watch=/b"), "channel 'bulk': watch= given twice");
  EXPECT_EQ(refusal("bulk:source="), "channel 'bulk': source= needs a path");
  EXPECT_EQ(refusal("bulk:source=/a,class=8"),
            "channel 'bulk': class=8: expected a whole number from 0 to 7");
  EXPECT_EQ(refusal("bulk:source=/a,weight=0"),
            "channel 'bulk': weight=0: expected a whole number from 1 to 1000");
  EXPECT_EQ(refusal("bulk:source=/a,rate=0"), "channel 'bulk': rate=0: expected MB/s above 0");
  EXPECT_EQ(refusal("bulk:source=/a,rate=fast"),
            "channel 'bulk': rate=fast: expected MB/s above 0");
  EXPECT_EQ(refusal("bulk:source=/a,min-share=100%"),
            "channel 'bulk': min-share=100%: expected a percentage below 100");
  EXPECT_EQ(refusal("bulk:source=/a,speed=1"),
            "channel 'bulk': unknown setting 'speed' (watch, source, class, weight, rate, "
            "min-share)");
  EXPECT_EQ(refusal("bulk:source=/a,class"), "channel 'bulk': 'class' is not KEY=VALUE");
  for (const std::string bad : {"bulk:source=/a,class=-1", "bulk:source=/a,weight=2x"}) {
    EXPECT_EQ(refusal(bad).find('\n'), std::string::npos) << bad;
    EXPECT_THAT(refusal(bad), HasSubstr("channel 'bulk': ")) << bad;
  }
}

TEST(ChannelSpec, TheChannelsAreCheckedTogether) {
  EXPECT_FALSE(channels_refusal({parsed("a:source=/a"), parsed("b:source=/b")}).has_value());
  EXPECT_EQ(channels_refusal({parsed("a:source=/a"), parsed("a:source=/b")}),
            "channel 'a' given twice");
  EXPECT_EQ(
      channels_refusal({parsed("a:source=/a,min-share=60%"), parsed("b:source=/b,min-share=40%")}),
      "the channels' min-share settings add up to 100%: they must leave room");
  EXPECT_EQ(channels_refusal({parsed("a:watch=/a"), parsed("b:source=/b")}),
            "channels are either all hot folders (watch=) or all sent once (source=)");
}

}  // namespace
}  // namespace ddft::sender
