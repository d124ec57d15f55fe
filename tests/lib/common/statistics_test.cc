// The one coefficient of variation (lib/common/statistics.h): sample standard deviation over
// |mean|, with its undefined cases spelled out.
#include "lib/common/statistics.h"

#include <cmath>

#include <gtest/gtest.h>

namespace codl {
namespace {

TEST(Statistics, MeanAndSampleStdDev) {
  EXPECT_DOUBLE_EQ(Mean({2, 4, 4, 4, 5, 5, 7, 9}), 5);
  EXPECT_TRUE(std::isnan(Mean({})));
  // n - 1 denominator: 32 / 7, not the population's 32 / 8.
  EXPECT_DOUBLE_EQ(SampleStdDev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7));
  EXPECT_DOUBLE_EQ(SampleStdDev({3}), 0);
  EXPECT_TRUE(std::isnan(SampleStdDev({})));
}

TEST(Statistics, CoefficientOfVariationIsTheSampleOne) {
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({1, 2, 3}), 0.5);  // sd 1 / mean 2
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({90, 110}), std::sqrt(200.0) / 100);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({-1, -2, -3}), 0.5) << "over |mean|";
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({5}), 0);
  EXPECT_TRUE(std::isnan(CoefficientOfVariation({})));
  EXPECT_TRUE(std::isnan(CoefficientOfVariation({-1, 1})));
  EXPECT_TRUE(std::isnan(CoefficientOfVariation({0, 0})));
}

TEST(Statistics, AchievedCovConventionIsZeroWhereUndefined) {
  EXPECT_DOUBLE_EQ(CoefficientOfVariationOrZero({1, 2, 3}), 0.5);
  EXPECT_EQ(CoefficientOfVariationOrZero({}), 0);
  EXPECT_EQ(CoefficientOfVariationOrZero({0, 0, 0}), 0);
}

}  // namespace
}  // namespace codl
