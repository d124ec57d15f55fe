// "Did you mean": typos find their word, unrelated words find nothing.
#include "lib/common/suggest.h"

#include <gtest/gtest.h>

namespace codl {
namespace {

const std::vector<std::string> kVerbs = {"validate", "run",    "submit", "status", "watch",
                                         "results",  "report", "agents", "cancel", "calibrate"};

TEST(EditDistance, CountsEdits) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("status", "statsu"), 1u);  // adjacent swap is one edit
}

TEST(ClosestMatch, FindsTypos) {
  EXPECT_EQ(ClosestMatch("reslts", kVerbs), "results");
  EXPECT_EQ(ClosestMatch("statsu", kVerbs), "status");
  EXPECT_EQ(ClosestMatch("submti", kVerbs), "submit");
  EXPECT_EQ(ClosestMatch("iouring", {"io_uring", "memcpy", "noop"}), "io_uring");
}

TEST(ClosestMatch, IgnoresUnrelatedWordsAndExactMatches) {
  EXPECT_EQ(ClosestMatch("foo", kVerbs), "");
  EXPECT_EQ(ClosestMatch("deploy", kVerbs), "");
  EXPECT_EQ(ClosestMatch("run", kVerbs), "");
  EXPECT_EQ(ClosestMatch("x", {}), "");
  EXPECT_EQ(ClosestMatch("m", {"n"}), "");  // too short to call a typo
}

TEST(DidYouMean, FormatsASuffix) {
  EXPECT_EQ(DidYouMean("repot", kVerbs), " (did you mean 'report'?)");
  EXPECT_EQ(DidYouMean("zzzzzz", kVerbs), "");
}

}  // namespace
}  // namespace codl
