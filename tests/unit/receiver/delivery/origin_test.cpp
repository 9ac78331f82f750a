// A file's origin (origin.hpp): its text form, and written beside a file then read back.
#include "receiver/delivery/origin.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/fd.hpp"
#include "receiver/delivery/own_files.hpp"
#include "support/scratch_fs.hpp"
#include "unit/receiver/delivery/origin_sample.hpp"

namespace ddft::receiver {
namespace {

bool same_origin(const Origin& a, const Origin& b) {
  return a.file.path == b.file.path && a.file.size == b.file.size && a.mtime_ns == b.mtime_ns &&
         a.mode == b.mode && a.file.verify == b.file.verify && a.file.session == b.file.session &&
         a.file.file_id == b.file.file_id && a.chunk_size == b.chunk_size && a.sender == b.sender &&
         a.announced_ns == b.announced_ns;
}

TEST(OriginText, RoundTrips) {
  std::vector<Origin> all = {sample_origin("a.txt", 1, 1, 10)};
  Origin o = sample_origin("dir with spaces/caf\xc3\xa9 = \"quoted\" \\ back/x", UINT64_MAX,
                           UINT32_MAX, UINT64_MAX);
  o.mtime_ns = -1'000'000'001;  // before 1970
  o.mode = 04755;
  o.file.verify = common::VerifyType::kSha256;
  o.chunk_size = 0;
  o.sender = "";  // a device, unnamed
  o.announced_ns = INT64_MAX;
  all.push_back(o);
  Origin zero = sample_origin("z", 0, 0, 0);
  zero.file.verify = common::VerifyType::kNone;
  zero.mode = 0;
  zero.mtime_ns = 0;
  zero.announced_ns = 0;
  all.push_back(zero);
  for (const Origin& in : all) {
    const std::string text = format_origin(in);
    EXPECT_TRUE(text.starts_with("ddft-origin=1\npath=")) << text;
    Origin back;
    ASSERT_TRUE(parse_origin(text, &back)) << text;
    EXPECT_TRUE(same_origin(in, back)) << text << "came back as\n" << format_origin(back);
  }
  EXPECT_EQ(format_origin(all[0]),
            "ddft-origin=1\npath=a.txt\nsize=10\nmtime_ns=1600000000123456789\nmode=640\n"
            "verify=B2B\nsession=0000000000000001\nfile_id=1\nchunk_size=8192\n"
            "sender=127.0.0.1:40000\nannounced_ns=1700000000000000001\n");
}

TEST(OriginText, RefusesGarbage) {
  const std::vector<std::string> bad = {
      "",
      "hello",
      std::string(100, '\0'),
      "\xff\xfe\x00garbage",
      "path=a.txt\nsize=10\n",                 // no magic line
      "ddft-origin=2\npath=a.txt\nsize=10\n",  // a version this build does not know
      "ddft-origin=1\nsize=10\n",              // no path
      "ddft-origin=1\npath=\nsize=10\n",       // empty path
      "ddft-origin=1 path=a.txt",              // not one key per line
      "DDFT-ORIGIN=1\npath=a.txt\n",
  };
  for (const std::string& text : bad) {
    Origin o = sample_origin("untouched", 5, 5, 5);
    EXPECT_FALSE(parse_origin(text, &o)) << "accepted: " << text;
    EXPECT_EQ(o.file.path, "untouched");
  }
}

// Fixed (found by this test): parse_origin() needs only the magic line and a path; it never checks
// the numbers it reads (`end` is set and not looked at) nor that every key came. An origin cut
// short (a sidecar half written when the power went) or with a damaged number is taken as
// whole: the leftover is then named with session 0, file 0, a wrong size, and so missing ranges
// that are wrong too.
TEST(OriginText, RefusesAnOriginCutShortOrWithDamagedNumbers) {
  const std::string full = format_origin(sample_origin("dir/file.bin", 0xabc, 7, 123456789));
  const size_t after_path = full.find("\nsize=");
  // One failure for all the cuts, naming the first accepted.
  size_t accepted = 0;
  std::string first;
  for (size_t len = after_path; len < full.size(); ++len) {
    Origin o;
    if (parse_origin(full.substr(0, len), &o)) {
      if (accepted++ == 0) first = full.substr(0, len);
    }
  }
  EXPECT_EQ(accepted, 0u) << "of " << full.size() - after_path << " cuts, e.g.\n" << first;
  for (const char* damaged : {"size=12x", "size=", "session=zz", "file_id=-1", "mode=9"}) {
    std::string text = full;
    const std::string key = std::string(damaged).substr(0, std::string(damaged).find('=') + 1);
    const size_t at = text.find("\n" + key) + 1;
    text.replace(at, text.find('\n', at) - at, damaged);
    Origin o;
    EXPECT_FALSE(parse_origin(text, &o)) << "accepted:\n" << text;
  }
}

// Whichever way it goes on this file system (an xattr, or a sidecar), it comes back whole; a
// file without one reads as none.
TEST(OriginBeside, WrittenOnANewFileItIsReadBack) {
  testing::ScratchDir scratch("orig");
  const common::UniqueFd dir(::open(scratch.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  const std::string tmp = temp_name(0x42, 3);
  const common::UniqueFd fd(
      ::openat(dir.get(), tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd);
  const Origin in = sample_origin("d/x.bin", 0x42, 3, 1000);
  std::string sidecar;
  std::string why;
  ASSERT_TRUE(write_origin(dir.get(), fd.get(), tmp, in, &sidecar, &why)) << why;
  EXPECT_TRUE(sidecar.empty() || sidecar == sidecar_name(tmp)) << sidecar;
  Origin back;
  ASSERT_TRUE(read_origin_of(dir.get(), tmp, fd.get(), &back));
  EXPECT_TRUE(same_origin(in, back)) << format_origin(back);
  const std::string other = temp_name(0x42, 4);
  const common::UniqueFd bare(
      ::openat(dir.get(), other.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  ASSERT_TRUE(bare);
  EXPECT_FALSE(read_origin_of(dir.get(), other, bare.get(), &back));
}

}  // namespace
}  // namespace ddft::receiver
