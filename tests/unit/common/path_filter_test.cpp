#include "common/path_filter.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ddft::common {
namespace {

TEST(PathFilter, EmptyFilterTakesEverything) {
  PathFilter f;
  EXPECT_TRUE(f.empty());
  EXPECT_TRUE(f.accepts("a/b/c.txt"));
  EXPECT_TRUE(f.accepts(".hidden"));
}

TEST(PathFilter, PatternWithoutSlashMatchesTheBaseNameAtAnyDepth) {
  PathFilter f({}, {"*.tmp"});
  EXPECT_FALSE(f.accepts("x.tmp"));
  EXPECT_FALSE(f.accepts("a/b/x.tmp"));
  EXPECT_TRUE(f.accepts("a/b/x.tmp.done"));
  EXPECT_TRUE(f.accepts("tmp/x.txt"));  // a folder's name is not the base name
  EXPECT_EQ(*f.refusal("a/x.tmp"), "matches --exclude '*.tmp'");
}

TEST(PathFilter, PatternWithSlashMatchesTheWholePathAndStarCrossesFolders) {
  PathFilter f({"reports/*"}, {});
  EXPECT_TRUE(f.accepts("reports/a.pdf"));
  EXPECT_TRUE(f.accepts("reports/2026/11/a.pdf"));
  EXPECT_FALSE(f.accepts("other/reports/a.pdf"));
  EXPECT_FALSE(f.accepts("a.pdf"));
  EXPECT_EQ(*f.refusal("a.pdf"), "matches no --include");
}

TEST(PathFilter, ExcludeWinsOverInclude) {
  PathFilter f({"*.csv", "*.xml"}, {"draft-*"});
  EXPECT_TRUE(f.accepts("d/data.csv"));
  EXPECT_TRUE(f.accepts("d/data.xml"));
  EXPECT_FALSE(f.accepts("d/data.txt"));
  EXPECT_FALSE(f.accepts("d/draft-1.csv"));
  EXPECT_EQ(*f.refusal("draft-1.csv"), "matches --exclude 'draft-*'");
}

TEST(PathFilter, ClassesQuestionMarksAndEscapes) {
  PathFilter f({"[a-c]?.dat", "lit\\*.txt"}, {"[!a]*.dat"});
  EXPECT_TRUE(f.accepts("a1.dat"));
  EXPECT_FALSE(f.accepts("b1.dat"));  // excluded: does not start with a
  EXPECT_FALSE(f.accepts("a12.dat"));
  EXPECT_TRUE(f.accepts("lit*.txt"));
  EXPECT_FALSE(f.accepts("litx.txt"));
}

TEST(PathFilter, BadPatternsAreRefusedWithTheirOption) {
  try {
    PathFilter({"ok", "[abc"}, {});
    FAIL() << "an unclosed class was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--include '[abc': unclosed '['");
  }
  EXPECT_THROW(PathFilter({}, {""}), std::invalid_argument);
  EXPECT_NO_THROW(PathFilter({"[]]x", "\\[x"}, {}));
}

}  // namespace
}  // namespace ddft::common
