// Holm and Benjamini-Hochberg adjustments, checked by hand (and against statsmodels in
// scipy_crosscheck.py).
#include "lib/analysis/multiple_comparisons.h"

#include <cmath>

#include <gtest/gtest.h>

namespace codl::experiment {
namespace {

const double kNaNp = std::nan("");

TEST(HolmAdjust, StepDownInInputOrder) {
  auto adj = HolmAdjust({0.01, 0.04, 0.03, kNaNp});
  ASSERT_EQ(adj.size(), 4u);
  EXPECT_NEAR(adj[0], 0.03, 1e-12);  // 3 x 0.01
  EXPECT_NEAR(adj[1], 0.06, 1e-12);  // max(0.06, 1 x 0.04): monotone
  EXPECT_NEAR(adj[2], 0.06, 1e-12);  // 2 x 0.03
  EXPECT_TRUE(std::isnan(adj[3]));   // not counted in m
}

TEST(HolmAdjust, CapsAtOne) {
  auto adj = HolmAdjust({0.5, 0.9});
  EXPECT_DOUBLE_EQ(adj[0], 1.0);
  EXPECT_DOUBLE_EQ(adj[1], 1.0);
}

TEST(BenjaminiHochbergAdjust, StepUpInInputOrder) {
  auto q = BenjaminiHochbergAdjust({0.01, 0.04, 0.03, kNaNp});
  EXPECT_NEAR(q[0], 0.03, 1e-12);  // 3 x 0.01 / 1
  EXPECT_NEAR(q[1], 0.04, 1e-12);  // 3 x 0.04 / 3
  EXPECT_NEAR(q[2], 0.04, 1e-12);  // min(3 x 0.03 / 2, 0.04)
  EXPECT_TRUE(std::isnan(q[3]));
}

TEST(MultipleComparisons, EmptyAndSingle) {
  EXPECT_TRUE(HolmAdjust({}).empty());
  EXPECT_NEAR(HolmAdjust({0.02})[0], 0.02, 1e-12);
  EXPECT_NEAR(BenjaminiHochbergAdjust({0.02})[0], 0.02, 1e-12);
}

}  // namespace
}  // namespace codl::experiment
