// The assembler behind the seal (--key-file): sealed sessions delivered, unsealed and forged
// datagrams dropped and counted, replays of earlier sessions refused across a restart, and the
// replay mark's state file never misread or made to hang the receiver.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "common/seal.hpp"
#include "support/fake_sender.hpp"
#include "support/files.hpp"
#include "support/json_matchers.hpp"
#include "support/log_capture.hpp"
#include "support/packet_builder.hpp"
#include "unit/receiver/assembly/assembler_fixture.hpp"

namespace ddft::receiver {
namespace {
namespace fs = std::filesystem;
using ddft::testing::FakeSender;
using ddft::testing::LogCapture;
using ddft::testing::read_file;
using ddft::testing::seal_all;
using ddft::testing::with_fec;

common::Key test_key(uint8_t fill) {
  common::Key k{};
  k.fill(fill);
  return k;
}

common::Salt salt_at(uint64_t start_ns) {
  common::Salt s{};
  common::store_le64(s.data(), start_ns);
  common::store_le64(s.data() + 8, start_ns * 31 + 1);
  return s;
}

// Regular files below `dir`, but the receiver's own space kept for failure records.
size_t files_below(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    n += e.is_regular_file() && e.path().filename() != kRecordReserveName;
  }
  return n;
}

TEST_P(AssemblerTest, SealedSessionIsDeliveredAndUnsealedDatagramsAreNot) {
  cfg_.keys = {test_key(3)};
  build();
  LogCapture log;
  for (bool encrypt : {true, false}) {
    FakeSender tx(encrypt ? 61 : 62);
    common::Sealer sealer(cfg_.keys[0], encrypt ? 61 : 62, salt_at(encrypt ? 100 : 200), encrypt);
    const std::string content = pattern(150'000, 61);
    const std::string name = encrypt ? "secret.bin" : "inspected.bin";
    feed(seal_all(sealer, tx.file(1, name, content)));
    settle();
    EXPECT_TRUE(read_file(base_ / "out" / name) == content) << name;
  }
  EXPECT_EQ(asm_->counters().files_passed, 2u);
  // The same file unsealed, as anyone on the wire could send it: dropped before it is looked at.
  FakeSender intruder(63);
  feed(intruder.file(1, "planted.bin", "not from the sender"));
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/planted.bin"));
  EXPECT_EQ(asm_->counters().auth_rejected[static_cast<size_t>(AuthReject::kNotSealed)], 3u);
  EXPECT_TRUE(records().empty());
  const std::string text = log.text();
  EXPECT_NE(text.find("datagrams authenticated and encrypted (AES-256-GCM)"), std::string::npos);
  EXPECT_NE(text.find("datagrams authenticated, not encrypted (AES-256-GCM)"), std::string::npos);
  EXPECT_NE(text.find("failed authentication (not sealed;"), std::string::npos) << text;
}

TEST_P(AssemblerTest, ForgedDatagramsAreCountedLoggedAtABoundedRateAndNeverWritten) {
  cfg_.keys = {test_key(3)};
  build();
  LogCapture log;
  FakeSender tx(64);
  common::Sealer forger(test_key(4), 64, salt_at(100), true);  // another key
  for (int i = 0; i < 20; ++i) {
    feed(seal_all(forger, {tx.announce(static_cast<uint32_t>(i + 1), fmt::format("f{}", i), 10)}));
  }
  settle();
  EXPECT_EQ(files_below(base_ / "out"), 0u);
  EXPECT_EQ(asm_->counters().auth_rejected[static_cast<size_t>(AuthReject::kBadTag)], 20u);
  const std::string first = log.text();
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 1) << "one line for the first:\n"
                                                             << first;
  clock_.advance(std::chrono::seconds(11));
  asm_->poll();
  const std::string later = log.text();
  EXPECT_NE(later.find("19 more datagram(s) failed authentication since the last report (19 "
                       "bad tag); none was written"),
            std::string::npos)
      << later;
  // A receiver without a key drops sealed datagrams rather than misread them.
  cfg_.keys.clear();
  build();
  common::Sealer sender(test_key(3), 65, salt_at(100), true);
  FakeSender tx2(65);
  feed(seal_all(sender, tx2.file(1, "sealed.bin", "abc")));
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/sealed.bin"));
  EXPECT_EQ(asm_->counters().auth_rejected[static_cast<size_t>(AuthReject::kNoKey)], 3u);
}

TEST_P(AssemblerTest, ReplaysOfEarlierSessionsAreRefusedAcrossARestart) {
  cfg_.keys = {test_key(3)};
  build();
  FakeSender old_tx(71);
  common::Sealer old_sealer(cfg_.keys[0], 71, salt_at(1000), true);
  const auto old_wire = seal_all(old_sealer, old_tx.file(1, "report.txt", "version 1"));
  feed(old_wire);
  settle();
  ASSERT_EQ(read_file(base_ / "out/report.txt"), "version 1");

  FakeSender new_tx(72);
  common::Sealer new_sealer(cfg_.keys[0], 72, salt_at(2000), true);
  feed(seal_all(new_sealer, new_tx.file(1, "report.txt", "version 2")));
  settle();
  fs::remove(base_ / "out/report.txt");
  fs::remove(base_ / "out/report.1.txt");

  // The receiver restarts; an attacker who recorded the wire plays both sessions back.
  build();
  feed(old_wire);
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/report.txt")) << "an old session is not taken again";
  // Its numbers are all at or below its saved mark.
  EXPECT_EQ(asm_->counters().auth_rejected[static_cast<size_t>(AuthReject::kReplayed)],
            old_wire.size());
  // The newest session's datagrams up to the saved mark: refused too.
  FakeSender replay_tx(72);
  common::Sealer replay_sealer(cfg_.keys[0], 72, salt_at(2000), true);
  const auto replayed = seal_all(replay_sealer, replay_tx.file(1, "report.txt", "version 2"));
  feed(replayed);
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/report.txt"));
  EXPECT_EQ(asm_->counters().auth_rejected[static_cast<size_t>(AuthReject::kReplayed)],
            old_wire.size() + replayed.size());
  // The newest session going on after the restart is taken (its numbers are past the mark).
  feed(seal_all(new_sealer, new_tx.file(2, "next.txt", "more")));
  settle();
  EXPECT_EQ(read_file(base_ / "out/next.txt"), "more");
  // Within a session, a datagram played again is a duplicate and changes nothing.
  const auto once = seal_all(new_sealer, new_tx.file(3, "once.txt", "x"));
  feed(once);
  feed(once);
  settle();
  EXPECT_EQ(asm_->counters().files_passed, 2u);
}

// Two senders share the key, one with an id and one without: each is taken beside the other,
// in either order; the one with an id starting anew fails only its own file in flight, and a
// replay of its earlier session is refused, across a restart of the receiver too.
TEST_P(AssemblerTest, KeyedSendersWithAndWithoutAnIdAreTakenSideBySide) {
  cfg_.keys = {test_key(4)};
  build();
  const std::string content = pattern(30'000, 5);
  FakeSender a(81);  // id 0xa, started first
  common::Sealer a_seal(cfg_.keys[0], 81, salt_at(1000), true);
  FakeSender b(82);  // no id, started later
  common::Sealer b_seal(cfg_.keys[0], 82, salt_at(2000), true);
  const auto a_start =
      seal_all(a_seal, {a.sender_info(0xa, {0}), a.announce(1, "a.bin", content.size())});
  auto a_data = a.data(1, content);
  feed(seal_all(b_seal, {b.sender_info(0, {0})}));
  feed(a_start);  // older than b's session: taken once its kSenderInfo names sender a
  feed(seal_all(a_seal, {a_data[0]}));
  feed(seal_all(b_seal, b.file(1, "b.bin", content)));
  settle();
  EXPECT_EQ(read_file(base_ / "out/b.bin"), content);
  // a starts anew mid-file: only a.bin fails.
  FakeSender a2(83);
  common::Sealer a2_seal(cfg_.keys[0], 83, salt_at(3000), true);
  feed(seal_all(a2_seal, {a2.sender_info(0xa, {0})}));
  feed(seal_all(a2_seal, a2.file(1, "a2.bin", content)));
  feed(seal_all(b_seal, b.file(2, "b2.bin", content)));
  settle();
  EXPECT_EQ(read_file(base_ / "out/a2.bin"), content);
  EXPECT_EQ(read_file(base_ / "out/b2.bin"), content);
  auto recs = records();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_THAT(read_file(recs[0]), ddft::testing::JsonHas("name", "a.bin"));
  EXPECT_EQ(asm_->counters().files_passed, 3u);
  // The rest of a's first session, played again, now or after a restart: refused.
  std::vector<Datagram> rest(a_data.begin() + 1, a_data.end());
  rest.push_back(a.end(1, content));
  const auto replay = seal_all(a_seal, rest);
  feed(replay);
  settle();
  build();
  feed(a_start);
  feed(replay);
  settle();
  EXPECT_FALSE(fs::exists(base_ / "out/a.bin"));
  EXPECT_EQ(asm_->counters().files_passed, 0u) << "nothing taken after the restart";
}

TEST_P(AssemblerTest, ADamagedSessionStateStopsTheReceiverWithOneLine) {
  cfg_.keys = {test_key(3)};
  fs::create_directories(testing::state_folder(base_ / "out"));
  std::ofstream(testing::state_folder(base_ / "out") / kSessionStateName) << "not a state line\n";
  try {
    build();
    FAIL() << "a damaged state file must not be ignored";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is damaged (line 1 is not a ddft session state line): remove it"),
              std::string::npos)
        << what;
  }
}

TEST_P(AssemblerTest, FecRebuildsLostPacketsBehindTheSeal) {
  cfg_.keys = {test_key(3)};
  build();
  FakeSender tx(73, 1000);
  const std::string content = pattern(60'000, 73);
  uint64_t seq = 0;
  common::Sealer sealer(cfg_.keys[0], 73, salt_at(100), true);
  auto wire = seal_all(sealer, with_fec(tx.file(1, "fec.bin", content), {16, 3, 1}, &seq));
  for (size_t i = 0; i < wire.size(); ++i) {
    if (i != 0 && i != 5 && i != 9) feed(wire[i]);  // the announce and two data packets lost
  }
  settle();
  EXPECT_TRUE(read_file(base_ / "out/fec.bin") == content);
  EXPECT_EQ(asm_->fec().rebuilt, 3u);
}

// Planted where the receiver keeps its replay mark: a FIFO under the temporary name is replaced,
// not opened (which would block the writer thread); a FIFO under the state name stops the start
// with one line instead of hanging it.
TEST_P(AssemblerTest, PlantedFifosCannotHangTheReplayMark) {
  cfg_.keys = {test_key(3)};
  fs::create_directories(testing::state_folder(base_ / "out"));
  const fs::path tmp =
      testing::state_folder(base_ / "out") / (std::string(kSessionStateName) + ".new");
  ASSERT_EQ(::mkfifo(tmp.c_str(), 0600), 0);
  build();
  FakeSender tx(78);
  common::Sealer sealer(cfg_.keys[0], 78, salt_at(100), true);
  feed(seal_all(sealer, tx.file(1, "f.txt", "x")));
  settle();
  EXPECT_EQ(read_file(base_ / "out/f.txt"), "x");
  EXPECT_NE(read_file(testing::state_folder(base_ / "out") / kSessionStateName)
                .find("session=000000000000004e"),
            std::string::npos);
  asm_.reset();
  fs::remove(testing::state_folder(base_ / "out") / kSessionStateName);
  ASSERT_EQ(::mkfifo((testing::state_folder(base_ / "out") / kSessionStateName).c_str(), 0600), 0);
  try {
    build();
    FAIL() << "a FIFO is not a state file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddft::receiver
