// Folders compared by path: a folder is at or below itself and its ancestors, never below a
// sibling whose name it merely starts with; "/" holds every absolute path.
#include "common/folder_paths.hpp"

#include <gtest/gtest.h>

namespace ddft::common {
namespace {

TEST(FolderPaths, AtOrBelowGoesByWholeComponents) {
  EXPECT_TRUE(at_or_below("/srv/out", "/srv/out"));
  EXPECT_TRUE(at_or_below("/srv/out/a/b", "/srv/out"));
  EXPECT_FALSE(at_or_below("/srv/outbox", "/srv/out")) << "a sibling, not a subfolder";
  EXPECT_FALSE(at_or_below("/srv", "/srv/out"));
  EXPECT_TRUE(at_or_below("/srv", "/"));
  EXPECT_TRUE(at_or_below("/", "/"));
}

}  // namespace
}  // namespace ddft::common
