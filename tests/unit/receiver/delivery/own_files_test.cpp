// The names of the receiver's own files beside the files it receives (own_files.hpp).
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
  EXPECT_TRUE(sidecar_name(t).starts_with(kTempPrefix));
}

}  // namespace
}  // namespace ddft::receiver
