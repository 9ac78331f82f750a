// Replay protection: which authenticated datagrams are fresh, and what survives a restart.
#include "receiver/link/replay_guard.hpp"

#include <gtest/gtest.h>

namespace ddft::receiver {
namespace {
using V = ReplayGuard::Verdict;

common::Salt salt_at(uint64_t start_ns, uint64_t random = 7) {
  common::Salt s{};
  common::store_le64(s.data(), start_ns);
  common::store_le64(s.data() + 8, random);
  return s;
}

// The mark of the one session a guard follows.
SessionMark only_mark(const ReplayGuard& g) {
  const std::vector<SessionMark> m = g.marks();
  EXPECT_EQ(m.size(), 1u);
  return m.empty() ? SessionMark{} : m.front();
}

TEST(ReplayGuard, TakesEachNumberOnceInAnyOrder) {
  ReplayGuard g;
  const auto s = salt_at(1000);
  EXPECT_EQ(g.check(s, 1, 10), V::kNewSession);
  EXPECT_EQ(g.check(s, 1, 12), V::kFresh);
  EXPECT_EQ(g.check(s, 1, 11), V::kFresh) << "late but new";
  EXPECT_EQ(g.check(s, 1, 12), V::kDuplicate);
  EXPECT_EQ(g.check(s, 1, 10), V::kDuplicate);
  EXPECT_EQ(only_mark(g).max_seq, 12u);
}

TEST(ReplayGuard, RefusesNumbersOlderThanTheWindow) {
  ReplayGuard g;
  const auto s = salt_at(1000);
  EXPECT_EQ(g.check(s, 1, 0), V::kNewSession);
  EXPECT_EQ(g.check(s, 1, 5 * ReplayGuard::kWindow), V::kFresh);
  EXPECT_EQ(g.check(s, 1, 1), V::kReplayed);
  EXPECT_EQ(g.check(s, 1, 4 * ReplayGuard::kWindow), V::kReplayed);
  EXPECT_EQ(g.check(s, 1, 4 * ReplayGuard::kWindow + 1), V::kFresh) << "just inside the window";
  // A jump clears the bits it skips: a number reused by the window is not a duplicate.
  EXPECT_EQ(g.check(s, 1, 5 * ReplayGuard::kWindow + 3), V::kFresh);
  EXPECT_EQ(g.check(s, 1, 5 * ReplayGuard::kWindow + 2), V::kFresh);
}

TEST(ReplayGuard, ANewerSessionIsTakenAtOnceAnOlderOneOnlyOnceItsSenderIsNamed) {
  ReplayGuard g;
  EXPECT_EQ(g.check(salt_at(2000), 1, 0), V::kNewSession);
  EXPECT_EQ(g.check(salt_at(1999), 2, 0), V::kUnidentified) << "started before";
  EXPECT_EQ(g.check(salt_at(2000, 8), 3, 0), V::kUnidentified) << "started at the same time";
  EXPECT_EQ(g.check(salt_at(2000), 9, 0), V::kUnidentified) << "same salt, other session id";
  EXPECT_FALSE(g.identify(salt_at(1999), 2, 1, 0)) << "no sender id: nothing tells it apart";
  EXPECT_EQ(g.check(salt_at(1999), 2, 1), V::kUnidentified);
  EXPECT_TRUE(g.identify(salt_at(1999), 2, 1, 0xb)) << "sender b's, the only one of b here";
  EXPECT_EQ(g.check(salt_at(1999), 2, 1), V::kDuplicate) << "identify() took its number";
  EXPECT_EQ(g.check(salt_at(1999), 2, 2), V::kFresh);
  EXPECT_EQ(g.check(salt_at(2000), 1, 1), V::kFresh) << "the newest goes on beside it";
  EXPECT_EQ(g.check(salt_at(2001), 4, 50), V::kNewSession);
  EXPECT_EQ(g.marks().size(), 3u);
  EXPECT_EQ(g.marks().front().session_id, 4u) << "newest first";
}

TEST(ReplayGuard, ASendersEarlierSessionIsRefusedOnceItsLaterOneIsNamed) {
  ReplayGuard g;
  ASSERT_EQ(g.check(salt_at(100), 1, 0), V::kNewSession);
  ASSERT_TRUE(g.identify(salt_at(100), 1, 0, 0xa));
  ASSERT_EQ(g.check(salt_at(200), 2, 0), V::kNewSession);  // a again, restarted
  EXPECT_TRUE(g.identify(salt_at(200), 2, 0, 0xa));
  EXPECT_EQ(g.check(salt_at(100), 1, 5), V::kUnidentified) << "a's first session is over";
  EXPECT_FALSE(g.identify(salt_at(100), 1, 6, 0xa)) << "and its kSenderInfo cannot bring it back";
  EXPECT_FALSE(g.identify(salt_at(150), 3, 0, 0xa)) << "nor a replay of one a started between";
  EXPECT_TRUE(g.identify(salt_at(150), 3, 0, 0xc)) << "another sender's is taken";
  ASSERT_EQ(g.marks().size(), 2u);
  EXPECT_EQ(g.marks()[0].sender_id, 0xau);
  EXPECT_EQ(g.marks()[1].sender_id, 0xcu);
  // A session taken while newest whose kSenderInfo names a sender with a later one here.
  ASSERT_EQ(g.check(salt_at(300), 4, 0), V::kNewSession);
  ASSERT_TRUE(g.identify(salt_at(300), 4, 0, 0xd));
  ASSERT_EQ(g.check(salt_at(400), 5, 0), V::kNewSession);
  EXPECT_FALSE(g.identify(salt_at(400), 5, 0, 0xa) && g.identify(salt_at(200), 2, 1, 0xa))
      << "a's session at 200 is over once its session at 400 is named";
  EXPECT_EQ(g.check(salt_at(200), 2, 9), V::kUnidentified);
}

// Senders without an id count as one: the session started last is theirs.
TEST(ReplayGuard, SendersWithoutAnIdCountAsOne) {
  ReplayGuard g;
  ASSERT_EQ(g.check(salt_at(100), 1, 0), V::kNewSession);
  ASSERT_TRUE(g.identify(salt_at(100), 1, 0, 0));
  ASSERT_EQ(g.check(salt_at(200), 2, 0), V::kNewSession);
  ASSERT_TRUE(g.identify(salt_at(200), 2, 0, 0));
  EXPECT_EQ(g.check(salt_at(100), 1, 1), V::kUnidentified) << "the earlier one is over";
  ASSERT_EQ(g.check(salt_at(300), 3, 0), V::kNewSession);
  EXPECT_TRUE(g.identify(salt_at(300), 3, 0, 0x5)) << "a sender with an id beside it";
  EXPECT_EQ(g.check(salt_at(200), 2, 1), V::kFresh);
  ASSERT_EQ(g.marks().size(), 2u);
  EXPECT_TRUE(g.marks()[1].named);
  EXPECT_EQ(g.marks()[1].sender_id, 0u);
}

TEST(ReplayGuard, RestoredMarksRefuseWhatWasTakenBeforeTheRestart) {
  const SessionMark before{salt_at(5000), 77, 1000, 0xa, true};
  const SessionMark other{salt_at(4000), 66, 10, 0xb, true};
  ReplayGuard g({before, other});
  EXPECT_FALSE(g.take_changed());
  EXPECT_EQ(g.check(before.salt, 77, 0), V::kReplayed);
  EXPECT_EQ(g.check(before.salt, 77, 1000), V::kReplayed);
  EXPECT_EQ(g.check(before.salt, 77, 1001), V::kFresh) << "the session goes on";
  EXPECT_EQ(g.check(before.salt, 77, 1001), V::kDuplicate);
  EXPECT_EQ(g.check(other.salt, 66, 11), V::kFresh) << "so does the other sender's";
  EXPECT_EQ(g.check(salt_at(3000), 5, 0), V::kUnidentified);
  EXPECT_FALSE(g.identify(salt_at(3000), 5, 0, 0xb)) << "b's session at 4000 is newer";
  EXPECT_EQ(g.check(salt_at(6000), 6, 0), V::kNewSession);
}

TEST(ReplayGuard, KeepsABoundedNumberOfSessions) {
  ReplayGuard g;
  for (uint64_t i = 1; i <= ReplayGuard::kMarksKept + 10; ++i) {
    ASSERT_EQ(g.check(salt_at(i), i, 0), V::kNewSession);
  }
  EXPECT_EQ(g.marks().size(), ReplayGuard::kMarksKept);
  EXPECT_EQ(g.marks().back().session_id, 11u) << "the ones used longest ago go";
}

TEST(ReplayGuard, SaysWhenAMarkMoved) {
  ReplayGuard g;
  EXPECT_FALSE(g.take_changed());
  g.check(salt_at(1), 1, 0);
  EXPECT_TRUE(g.take_changed());
  EXPECT_FALSE(g.take_changed());
  g.check(salt_at(1), 1, 0);  // a duplicate moves nothing
  EXPECT_FALSE(g.take_changed());
  g.check(salt_at(1), 1, 1);
  EXPECT_TRUE(g.take_changed());
  g.identify(salt_at(1), 1, 2, 0xe);
  EXPECT_TRUE(g.take_changed()) << "its sender is named";
}

TEST(SessionMark, RoundTripsThroughItsLines) {
  const std::vector<SessionMark> m{{salt_at(1'763'800'000'000'000'000, 0xdeadbeefcafef00d),
                                    0x1234abcd5678ef90, 987654321, 0, false},
                                   {salt_at(1'763'000'000'000'000'000, 1), 0x42, 7, 0xfeed, true}};
  const std::string text = format_session_marks(m);
  EXPECT_EQ(text.find("sender="), text.rfind("sender=")) << "only the named one has a sender";
  std::string error;
  const auto back = parse_session_marks(text, &error);
  ASSERT_TRUE(back) << error;
  ASSERT_EQ(back->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*back)[i].salt, m[i].salt);
    EXPECT_EQ((*back)[i].session_id, m[i].session_id);
    EXPECT_EQ((*back)[i].max_seq, m[i].max_seq);
    EXPECT_EQ((*back)[i].sender_id, m[i].sender_id);
    EXPECT_EQ((*back)[i].named, m[i].named);
  }
  // The one line an earlier receiver wrote still reads.
  const auto old = parse_session_marks(
      "ddft-session-state v1 salt=00000000000000000000000000000000 session=1 max_seq=2\n", &error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->front().max_seq, 2u);
}

TEST(SessionMark, RefusesDamagedLines) {
  const std::string good = format_session_marks({{salt_at(1), 2, 3, 0, false}});
  std::string error;
  for (const std::string& bad :
       {std::string(""), std::string("garbage"), good.substr(0, good.size() / 2),
        good + "garbage\n", std::string("ddft-session-state v1 salt=zz session=1 max_seq=2"),
        std::string("ddft-session-state v1 salt=00000000000000000000000000000000 session=1"),
        std::string("ddft-session-state v1 salt=00000000000000000000000000000000 session=1 "
                    "max_seq=-2"),
        std::string("ddft-session-state v1 salt=00000000000000000000000000000000 session=1 "
                    "max_seq=2 sender=xyz")}) {
    EXPECT_FALSE(parse_session_marks(bad, &error)) << bad;
  }
}

}  // namespace
}  // namespace ddft::receiver
