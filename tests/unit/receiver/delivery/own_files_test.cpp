// The names of the receiver's own files in the output folder (own_files.hpp).
#include "receiver/delivery/own_files.hpp"

#include <gtest/gtest.h>

namespace ddft::receiver {
namespace {

TEST(TempName, IsRecognised) {
  const auto t = temp_name(0xabcdef, 7);
  EXPECT_TRUE(is_temp_name(t));
  EXPECT_FALSE(is_temp_name("file.part"));
}

TEST(OwnFiles, EveryOwnNameStartsLikeATemporaryOneAndTheSidecarIsItsTwin) {
  const std::string t = temp_name(0xabcdef, 7);
  EXPECT_EQ(t, ".ddft-0000000000abcdef-7.part");
  EXPECT_EQ(sidecar_name(t), ".ddft-0000000000abcdef-7.meta");
  EXPECT_FALSE(is_temp_name(sidecar_name(t)));
  EXPECT_EQ(state_file_name(0), kStateFileName);
  EXPECT_EQ(state_file_name(2), std::string(kStateFileName) + ".lane2");
  for (const std::string& own : {state_file_name(1), std::string(kLockFileName),
                                 std::string(kRecordReserveName), sidecar_name(t)}) {
    EXPECT_TRUE(own.starts_with(kTempPrefix)) << own;
  }
}

}  // namespace
}  // namespace ddft::receiver
