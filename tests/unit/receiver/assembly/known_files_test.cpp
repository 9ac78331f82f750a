// What the receiver knows of file ids (known_files.hpp): the session's ids start afresh, the
// settled files stay, and "while receiving" counts from the first file heard, across the wrap.
#include "receiver/assembly/known_files.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace ddft::receiver {
namespace {

const common::Clock::time_point kNow{std::chrono::seconds(5)};

TEST(KnownFilesTest, ANewSessionForgetsItsIdsButNotTheSettledFiles) {
  KnownFiles k(std::chrono::hours(1));
  k.start_session(1);
  k.note_announced(5);
  k.remember_seen(5, kNow);
  k.remember_filtered(6);
  ASSERT_TRUE(k.seen(5));
  ASSERT_TRUE(k.filtered(6));
  ASSERT_TRUE(k.known_earlier(5));
  k.start_session(2);
  EXPECT_EQ(k.session(), 2u);
  EXPECT_FALSE(k.seen(5));
  EXPECT_FALSE(k.filtered(6));
  EXPECT_FALSE(k.while_receiving(5)) << "no file of the new session heard yet";
  EXPECT_FALSE(k.known_earlier(5)) << "file 5 of the new session is another file";
  EXPECT_TRUE(k.settled().contains(1, 5));
}

TEST(KnownFilesTest, WhileReceivingCountsFromTheFirstFileHeardAcrossTheIdWrap) {
  KnownFiles k(std::chrono::hours(1));
  k.start_session(1);
  EXPECT_FALSE(k.while_receiving(1));
  k.note_announced(0xfffffffe);
  k.note_announced(3);  // not the first any more
  EXPECT_TRUE(k.while_receiving(0xfffffffe));
  EXPECT_TRUE(k.while_receiving(0xffffffff));
  EXPECT_TRUE(k.while_receiving(2)) << "after the wrap";
  EXPECT_FALSE(k.while_receiving(0xfffffff0)) << "sent before the first file heard";
}

TEST(KnownFilesTest, AFileNamedOfAnotherSessionIsSettledButNotSeen) {
  KnownFiles k(std::chrono::hours(1));
  k.start_session(2);
  k.remember_named(1, 3, kNow);
  EXPECT_TRUE(k.settled().contains(1, 3));
  EXPECT_FALSE(k.seen(3));
  k.remember_named(2, 4, kNow);
  EXPECT_TRUE(k.seen(4));
  EXPECT_TRUE(k.known_earlier(4));
}

// A sender's channels interleave, each in the order of its ids: a file is weighed against the
// first file heard of its own channel. The bulk channel's reader runs ahead, so its first file
// heard has a lower id than urgent files sent before this receiver came up.
TEST(KnownFilesTest, WithChannelsAFileIsWeighedAgainstTheFirstFileOfItsChannel) {
  using Sent = KnownFiles::Sent;
  KnownFiles k(std::chrono::hours(1));
  k.start_session(2);
  EXPECT_EQ(k.sent_when(5, "g03/a.dat"), Sent::kBefore) << "nothing heard yet";
  k.note_announced(166, "bulk");
  k.note_announced(194, "urgent");
  k.note_announced(170, "bulk");  // not the first of bulk
  EXPECT_EQ(k.sent_when(173, "urgent/g03/vuka06.dat"), Sent::kBefore);
  EXPECT_EQ(k.sent_when(200, "urgent/x"), Sent::kWhileReceiving);
  EXPECT_EQ(k.sent_when(167, "bulk/y"), Sent::kWhileReceiving);
  EXPECT_EQ(k.sent_when(165, "bulk/y"), Sent::kBefore);
  EXPECT_EQ(k.sent_when(400, "alarms/z"), Sent::kUnknown) << "no file of its channel heard yet";
  k.start_session(3);
  k.note_announced(10);
  EXPECT_EQ(k.sent_when(11, "g03/a.dat"), Sent::kWhileReceiving) << "no channels: as before";
  EXPECT_EQ(k.sent_when(9, "g03/a.dat"), Sent::kBefore);
}

}  // namespace
}  // namespace ddft::receiver
