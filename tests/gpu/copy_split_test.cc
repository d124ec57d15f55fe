// CopySplit: bidir lanes hold the H2D share of issued bytes, whichever direction is faster.
#include "injectors/gpu/copy_split.h"

#include <gtest/gtest.h>

namespace codl::injectors::gpu {
namespace {

// Two lanes poll in turn; the H2D lane could issue 3 copies for every D2H one if let.
void Simulate(CopySplit& split, int rounds) {
  constexpr uint64_t kCopy = 64 << 20;
  for (int r = 0; r < rounds; ++r) {
    for (int fast = 0; fast < 3; ++fast) {
      if (split.MayIssue(true)) split.Issued(true, kCopy);
    }
    if (split.MayIssue(false)) split.Issued(false, kCopy);
  }
}

TEST(CopySplitTest, HoldsAnEvenSplitAgainstAFasterDirection) {
  CopySplit split(0.5);
  Simulate(split, 1000);
  const double h2d = static_cast<double>(split.h2d_bytes());
  const double total = h2d + static_cast<double>(split.d2h_bytes());
  EXPECT_NEAR(h2d / total, 0.5, 0.001);
}

TEST(CopySplitTest, HoldsAnUnevenShare) {
  CopySplit split(0.25);
  Simulate(split, 4000);
  const double h2d = static_cast<double>(split.h2d_bytes());
  const double total = h2d + static_cast<double>(split.d2h_bytes());
  EXPECT_NEAR(h2d / total, 0.25, 0.001);
}

TEST(CopySplitTest, BothMayStart) {
  CopySplit split(0.5);
  EXPECT_TRUE(split.MayIssue(true));
  EXPECT_TRUE(split.MayIssue(false));
  split.Issued(true, 100);
  EXPECT_FALSE(split.MayIssue(true));
  EXPECT_TRUE(split.MayIssue(false));
}

}  // namespace
}  // namespace codl::injectors::gpu
