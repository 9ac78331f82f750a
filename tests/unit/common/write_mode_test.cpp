// --write-mode's three values parse to their enum and print back as given; anything else is
// refused and leaves the value as it was.
#include "common/write_mode.hpp"

#include <gtest/gtest.h>

namespace ddft::common {
namespace {

TEST(WriteMode, EachNameParsesAndPrintsBack) {
  for (const char* name : {"rw", "rwd", "rws"}) {
    WriteMode m = WriteMode::kBuffered;
    ASSERT_TRUE(parse_write_mode(name, &m)) << name;
    EXPECT_EQ(write_mode_name(m), name);
  }
  WriteMode m = WriteMode::kBuffered;
  ASSERT_TRUE(parse_write_mode("rwd", &m));
  EXPECT_EQ(m, WriteMode::kDataSync);
  ASSERT_TRUE(parse_write_mode("rws", &m));
  EXPECT_EQ(m, WriteMode::kFullSync);
}

TEST(WriteMode, AnythingElseIsRefusedAndChangesNothing) {
  WriteMode m = WriteMode::kDataSync;
  for (const char* bad : {"", "RW", "rwx", "rw ", "sync"}) {
    EXPECT_FALSE(parse_write_mode(bad, &m)) << bad;
    EXPECT_EQ(m, WriteMode::kDataSync);
  }
}

}  // namespace
}  // namespace ddft::common
