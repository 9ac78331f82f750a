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

TEST(ReplayGuard, TakesEachNumberOnceInAnyOrder) {
  ReplayGuard g;
  const auto s = salt_at(1000);
  EXPECT_EQ(g.check(s, 1, 10), V::kNewSession);
  EXPECT_EQ(g.check(s, 1, 12), V::kFresh);
  EXPECT_EQ(g.check(s, 1, 11), V::kFresh) << "late but new";
  EXPECT_EQ(g.check(s, 1, 12), V::kDuplicate);
  EXPECT_EQ(g.check(s, 1, 10), V::kDuplicate);
  EXPECT_EQ(g.mark()->max_seq, 12u);
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

TEST(ReplayGuard, OnlyANewerSessionTakesOver) {
  ReplayGuard g;
  EXPECT_EQ(g.check(salt_at(2000), 1, 0), V::kNewSession);
  EXPECT_EQ(g.check(salt_at(1999), 2, 0), V::kStaleSession) << "started before";
  EXPECT_EQ(g.check(salt_at(2000, 8), 3, 0), V::kStaleSession) << "started at the same time";
  EXPECT_EQ(g.check(salt_at(2000), 9, 0), V::kStaleSession) << "same salt, other session id";
  EXPECT_EQ(g.check(salt_at(2001), 4, 50), V::kNewSession);
  EXPECT_EQ(g.check(salt_at(2000), 1, 1), V::kStaleSession) << "the old one is gone for good";
  EXPECT_EQ(g.mark()->session_id, 4u);
  EXPECT_EQ(g.mark()->max_seq, 50u);
}

TEST(ReplayGuard, ARestoredMarkRefusesWhatWasTakenBeforeTheRestart) {
  const SessionMark before{salt_at(5000), 77, 1000};
  ReplayGuard g(before);
  EXPECT_EQ(g.check(before.salt, 77, 0), V::kReplayed);
  EXPECT_EQ(g.check(before.salt, 77, 1000), V::kReplayed);
  EXPECT_EQ(g.check(before.salt, 77, 1001), V::kFresh) << "the session goes on";
  EXPECT_EQ(g.check(before.salt, 77, 1001), V::kDuplicate);
  EXPECT_EQ(g.check(salt_at(4000), 5, 0), V::kStaleSession);
  EXPECT_EQ(g.check(salt_at(6000), 6, 0), V::kNewSession);
}

TEST(ReplayGuard, SaysWhenTheMarkMoved) {
  ReplayGuard g;
  EXPECT_FALSE(g.take_changed());
  g.check(salt_at(1), 1, 0);
  EXPECT_TRUE(g.take_changed());
  EXPECT_FALSE(g.take_changed());
  g.check(salt_at(1), 1, 0);  // a duplicate moves nothing
  EXPECT_FALSE(g.take_changed());
  g.check(salt_at(1), 1, 1);
  EXPECT_TRUE(g.take_changed());
}

TEST(SessionMark, RoundTripsThroughItsLine) {
  const SessionMark m{salt_at(1'763'800'000'000'000'000, 0xdeadbeefcafef00d), 0x1234abcd5678ef90,
                      987654321};
  const std::string line = format_session_mark(m);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  std::string error;
  const auto back = parse_session_mark(line, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->salt, m.salt);
  EXPECT_EQ(back->session_id, m.session_id);
  EXPECT_EQ(back->max_seq, m.max_seq);
}

TEST(SessionMark, RefusesDamagedLines) {
  const std::string good = format_session_mark({salt_at(1), 2, 3});
  std::string error;
  for (const std::string& bad :
       {std::string(""), std::string("garbage"), good.substr(0, good.size() / 2),
        std::string("ddft-session-state v1 salt=zz session=1 max_seq=2"),
        std::string("ddft-session-state v1 salt=00000000000000000000000000000000 session=1"),
        std::string("ddft-session-state v1 salt=00000000000000000000000000000000 session=1 "
                    "max_seq=-2")}) {
    EXPECT_FALSE(parse_session_mark(bad, &error)) << bad;
  }
}

}  // namespace
}  // namespace ddft::receiver
