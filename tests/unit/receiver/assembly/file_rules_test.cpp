// The pure decisions about one file (file_rules.hpp).
#include "receiver/assembly/file_rules.hpp"

#include <gtest/gtest.h>

namespace ddft::receiver {
namespace {
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(FileRules, AnAnnounceMakesAFileWithItsChunkCount) {
  common::Announce a;
  a.file_id = 7;
  a.path = "d/x.bin";
  a.size = 2001;
  a.chunk_size = 1000;
  a.verify = common::VerifyType::kB2B;
  const auto now = common::Clock::time_point(seconds(3));
  auto f = file_from_announce(a, 99, now, 1 << 20);
  EXPECT_EQ(f->session, 99u);
  EXPECT_EQ(f->chunks_total, 3u);
  EXPECT_EQ(f->announced, now);
  EXPECT_EQ(f->next_report, 1u << 20);
  const Origin o = origin_of(*f, "10.0.0.1:4000");
  EXPECT_EQ(o.file.path, "d/x.bin");
  EXPECT_EQ(o.sender, "10.0.0.1:4000");
  EXPECT_EQ(o.file.file_id, 7u);
}

TEST(FileRules, SizeRefusalsInOrder) {
  ReceiverConfig cfg;
  cfg.max_file_size = 1000;
  EXPECT_EQ(size_refusal(cfg, 1001, 2, 0, UINT64_MAX),
            "announced size 1,001 bytes is over --max-file-size 1,000");
  cfg.max_file_size = 0;
  EXPECT_NE(size_refusal(cfg, uint64_t{1} << 61, 1, 0, UINT64_MAX).value_or("").find("larger than"),
            std::string::npos);
  EXPECT_EQ(size_refusal(cfg, 600, 1, 500, 1000),
            "not enough free space: 600 bytes announced, 1,000 free on the output folder's file "
            "system (500 promised to files in flight)");
  EXPECT_EQ(size_refusal(cfg, 500, 1, 500, 1000), std::nullopt);
  EXPECT_EQ(size_refusal(cfg, 0, 0, 5000, 1000), std::nullopt) << "an empty file always fits";
  EXPECT_GE(files_in_flight_bound(10), 160u);
}

TEST(FileRules, RecordsOfRefusedAndUnannouncedFiles) {
  common::FileListEntry e;
  e.file_id = 4;
  e.path = "gone.bin";
  e.size = 300;
  e.verify = common::VerifyType::kB2B;
  e.aborted = true;
  const FailureRecord u = unannounced_record(e, 5);
  EXPECT_EQ(u.reason, "never announced: all its packets were lost (and the sender aborted it)");
  ASSERT_EQ(u.missing.size(), 1u);
  EXPECT_EQ(u.missing[0].second, 300u);
  EXPECT_TRUE(u.file.digest.empty());
  const File f = named_file(u.file);
  EXPECT_EQ(f.session, 5u);
  EXPECT_EQ(f.id, 4u);
  EXPECT_EQ(f.size, 300u);
  const FailureRecord r = refusal_record(f, 5, "bad name");
  EXPECT_EQ(r.reason, "refused: bad name");
  EXPECT_EQ(r.file.path, "gone.bin");
  EXPECT_EQ(r.file.verify_name(), "B2B");
}

// A receiving file of 10 bytes in one copy, its last packet at `t0`.
File silent_since(common::Clock::time_point t0) {
  File f;
  f.size = 10;
  f.end.copies = 1;
  f.last_packet = t0;
  return f;
}

TEST(FileRules, ExpiryReasons) {
  const auto t0 = common::Clock::time_point(seconds(100));
  File f = silent_since(t0);
  EXPECT_EQ(expiry_reason(f, t0 + seconds(1), seconds(5), 5, false), std::nullopt);
  EXPECT_NE(
      expiry_reason(f, t0 + seconds(1), seconds(5), 5, true).value_or("").find("sender finished"),
      std::string::npos);
  EXPECT_EQ(expiry_reason(f, t0 + seconds(6), seconds(5), 5, false),
            "no packet for 5.0 s: the sender stopped or the link went down before the file's end");
  f.pause_s = 3;
  EXPECT_EQ(expiry_reason(f, t0 + seconds(6), seconds(5), 5, false), std::nullopt)
      << "the send pauses";
  f.end_seen = true;
  f.end_seen_at = t0;
  EXPECT_EQ(expiry_reason(f, t0 + milliseconds(499), seconds(5), 5, false), std::nullopt);
  EXPECT_EQ(expiry_reason(f, t0 + kEndGrace, seconds(5), 5, false),
            "incomplete at its end packet: 0 of 10 bytes received (packets lost)");
  f.end_seen = false;
  f.superseded = true;
  f.superseded_at = t0;
  EXPECT_NE(expiry_reason(f, t0 + kEndGrace, seconds(5), 5, false)
                .value_or("")
                .find("end packet was lost"),
            std::string::npos);
}

// A heartbeat saying the sender sleeps, heard after the file's last packet: the file's silence
// counts from it. One heard before the file's last packet changes nothing.
TEST(FileRules, ASleepingHeartbeatAfterTheLastPacketStartsTheSilenceAgain) {
  const auto t0 = common::Clock::time_point(seconds(100));
  const File f = silent_since(t0);
  const auto slept = t0 + seconds(40);
  EXPECT_EQ(expiry_reason(f, t0 + seconds(44), seconds(5), 5, false, slept), std::nullopt)
      << "4 s after the sender last said it sleeps";
  EXPECT_EQ(expiry_reason(f, slept + seconds(5) - milliseconds(1), seconds(5), 5, false, slept),
            std::nullopt);
  EXPECT_EQ(expiry_reason(f, slept + seconds(5), seconds(5), 5, false, slept),
            "no packet for 5.0 s after the sender's last heartbeat saying it was sleeping: the "
            "sender stopped or the link went down before the file's end");
  EXPECT_EQ(expiry_reason(f, t0 + seconds(6), seconds(5), 5, false, t0 - seconds(1)),
            "no packet for 5.0 s: the sender stopped or the link went down before the file's end")
      << "a sleep before the file's last packet holds nothing";
  EXPECT_NE(expiry_reason(f, t0 + seconds(41), seconds(5), 5, true, slept)
                .value_or("")
                .find("sender finished"),
            std::string::npos)
      << "the session's final heartbeat still ends the file";
}

// A file of 2500 bytes in chunks of 1000: blocks start on a chunk and end on one or at the end.
TEST(FileRules, ACompressedPieceFitsOnlyWhereTheFilesBlocksAndPiecesSit) {
  File f;
  f.size = 2500;
  f.chunk_size = 1000;
  const size_t piece = common::zdata_piece_size(f.chunk_size);
  common::ZDataHeader z;
  z.offset = 0;
  z.raw_len = 2000;
  z.frame_len = static_cast<uint32_t>(piece + 10);
  z.frame_off = 0;
  EXPECT_TRUE(zdata_fits(f, z, piece));
  EXPECT_FALSE(zdata_fits(f, z, piece - 1)) << "a first piece is a whole piece";
  z.frame_off = static_cast<uint32_t>(piece);
  EXPECT_TRUE(zdata_fits(f, z, 10)) << "the frame's last piece";
  z.frame_off = 5;
  EXPECT_FALSE(zdata_fits(f, z, 10)) << "a piece off its place";
  z.frame_off = 0;
  z.offset = 2000;
  z.raw_len = 500;
  EXPECT_TRUE(zdata_fits(f, z, piece)) << "the block that ends the file";
  z.raw_len = 600;
  EXPECT_FALSE(zdata_fits(f, z, piece)) << "past the file's end";
  z.offset = 1000;
  z.raw_len = 500;
  EXPECT_FALSE(zdata_fits(f, z, piece)) << "a short block that does not end the file";
  z.offset = 500;
  EXPECT_FALSE(zdata_fits(f, z, piece)) << "not on a chunk";
}

}  // namespace
}  // namespace ddft::receiver
