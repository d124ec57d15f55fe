#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lib/analysis/stats.h"

namespace codl::experiment {
namespace {

TEST(StatsTest, MedianOddEvenEmpty) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7}), 7);
  EXPECT_TRUE(std::isnan(Median({})));
}

TEST(StatsTest, QuantileInterpolates) {
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 0.25), 1.75);  // h = 0.75 between 1 and 2
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 0), 1);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 1), 4);
}

TEST(StatsTest, MeanStdDevCoV) {
  EXPECT_DOUBLE_EQ(Mean({1, 2, 3, 4}), 2.5);
  // mean 5, sum of squares 32, n-1 = 7
  EXPECT_NEAR(SampleStdDev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7), 1e-12);
  EXPECT_NEAR(CoefficientOfVariation({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7) / 5, 1e-12);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({1, 2, 3}), 0.5);  // sd 1 / mean 2
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({5}), 0);
  EXPECT_TRUE(std::isnan(CoefficientOfVariation({})));
  EXPECT_TRUE(std::isnan(CoefficientOfVariation({-1, 1})));
}

// Exact values: the two-sided p of the most extreme arrangement is 2 / C(n1 + n2, n1).
TEST(MannWhitneyTest, ExactSeparatedSamples) {
  auto r = MannWhitneyU({1, 2, 3}, {4, 5, 6});
  EXPECT_EQ(r.method, MannWhitneyMethod::kExact);
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.p_value, 2.0 / 20, 1e-12);
  r = MannWhitneyU({4, 5, 6}, {1, 2, 3});
  EXPECT_DOUBLE_EQ(r.u, 9);
  EXPECT_NEAR(r.p_value, 2.0 / 20, 1e-12);
  EXPECT_NEAR(MannWhitneyU({1, 2, 3, 4}, {5, 6, 7, 8}).p_value, 2.0 / 70, 1e-12);
  EXPECT_NEAR(MannWhitneyU({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}).p_value, 2.0 / 252, 1e-12);
}

TEST(MannWhitneyTest, ExactAtTheSizeLimit) {
  std::vector<double> a, b;
  for (int i = 0; i < 25; ++i) {
    a.push_back(i);
    b.push_back(100 + i);
  }
  auto r = MannWhitneyU(a, b);  // 25 + 25 = 50 values: still exact
  EXPECT_EQ(r.method, MannWhitneyMethod::kExact);
  EXPECT_NEAR(r.p_value / (2.0 / 126410606437752.0), 1.0, 1e-9);  // 2 / C(50, 25)
}

TEST(MannWhitneyTest, ExactInterleaved) {
  // a = {1,3,5}, b = {2,4,6}: U_a = 0 + 1 + 2 = 3. Counts of U = 0..9 for n1 = n2 = 3:
  // 1,1,2,3,3,3,3,2,1,1 (sum 20). P(U <= 3) = 7/20, so p = 14/20.
  auto r = MannWhitneyU({1, 3, 5}, {2, 4, 6});
  EXPECT_DOUBLE_EQ(r.u, 3);
  EXPECT_NEAR(r.p_value, 0.7, 1e-12);
  // Unequal sizes: a = {1, 4}, b = {2, 3, 5}: U_a = 0 + 2 = 2; counts for (2,3): 1,1,2,2,2,1,1
  // (sum 10); P(U <= 2) = 4/10, P(U >= 2) = 8/10, p = 0.8.
  r = MannWhitneyU({1, 4}, {2, 3, 5});
  EXPECT_DOUBLE_EQ(r.u, 2);
  EXPECT_NEAR(r.p_value, 0.8, 1e-12);
  EXPECT_NEAR(MannWhitneyU({1, 2, 3}, {1.5, 2.5}).p_value, 1.0, 1e-12);  // U = 3 = mean
}

TEST(MannWhitneyTest, NormalApproximationWithTies) {
  // a = {1,2,2,3}, b = {2,3,4,5}. Midranks: 1 -> 1; the three 2s -> 3; the two 3s -> 5.5;
  // 4 -> 7; 5 -> 8. R_a = 1 + 3 + 3 + 5.5 = 12.5, U_a = 12.5 - 10 = 2.5, mean 8.
  // sigma^2 = 16/12 * (9 - (24 + 6) / 56) = 11.2857; z = (5.5 - 0.5) / sigma = 1.48835.
  auto r = MannWhitneyU({1, 2, 2, 3}, {2, 3, 4, 5});
  EXPECT_EQ(r.method, MannWhitneyMethod::kNormal);
  EXPECT_DOUBLE_EQ(r.u, 2.5);
  EXPECT_NEAR(r.p_value, 0.13665824773814753, 1e-12);
}

TEST(MannWhitneyTest, AllTiedAndEmpty) {
  auto r = MannWhitneyU({1, 1}, {1, 1, 1});
  EXPECT_DOUBLE_EQ(r.p_value, 1);
  r = MannWhitneyU({}, {1});
  EXPECT_TRUE(std::isnan(r.p_value));
  EXPECT_EQ(r.method, MannWhitneyMethod::kNone);
}

TEST(MannWhitneyTest, LargeSamplesUseNormal) {
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(i);
    b.push_back(100 + i);
  }
  auto r = MannWhitneyU(a, b);
  EXPECT_EQ(r.method, MannWhitneyMethod::kNormal);
  // U = 0, mean 450, sigma^2 = 900 * 61 / 12 = 4575: z = 449.5 / 67.64 = 6.65
  EXPECT_NEAR(r.p_value, std::erfc(449.5 / std::sqrt(4575.0) / std::sqrt(2.0)), 1e-15);
  EXPECT_LT(r.p_value, 1e-9);
}

TEST(BootstrapTest, ConstantSamplesGiveAPointInterval) {
  auto ci = BootstrapMedianRatioCI({3, 3, 3}, {1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(ci.low, 3);
  EXPECT_DOUBLE_EQ(ci.high, 3);
}

TEST(BootstrapTest, ContainsTheTrueRatioAndIsDeterministic) {
  std::vector<double> control, treatment;
  for (int i = 0; i < 10; ++i) {
    control.push_back(1.0 + 0.01 * i);
    treatment.push_back(2.0 * (1.0 + 0.01 * ((i * 7) % 10)));
  }
  BootstrapOptions opt;
  auto ci = BootstrapMedianRatioCI(treatment, control, opt);
  EXPECT_LE(ci.low, 2.0);
  EXPECT_GE(ci.high, 2.0);
  EXPECT_GT(ci.low, 1.9);
  EXPECT_LT(ci.high, 2.1);
  auto again = BootstrapMedianRatioCI(treatment, control, opt);
  EXPECT_EQ(ci.low, again.low);
  EXPECT_EQ(ci.high, again.high);
  // The seed matters (with few resamples; 10,000 settle on the same discrete quantiles).
  opt.resamples = 200;
  auto few = BootstrapMedianRatioCI(treatment, control, opt);
  opt.seed = 7;
  auto other = BootstrapMedianRatioCI(treatment, control, opt);
  EXPECT_TRUE(other.low != few.low || other.high != few.high);
}

TEST(BootstrapTest, EmptyIsNaN) {
  auto ci = BootstrapMedianRatioCI({}, {1});
  EXPECT_TRUE(std::isnan(ci.low));
  EXPECT_TRUE(std::isnan(ci.high));
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TEST(ExactBootstrap, OneValuePerSideIsAPointAndSaysSo) {
  ConfidenceInterval ci = BootstrapMedianRatioCI({2.0}, {1.0});
  EXPECT_TRUE(ci.exact);
  EXPECT_EQ(ci.resamples, 1);
  EXPECT_DOUBLE_EQ(ci.low, 2.0);
  EXPECT_DOUBLE_EQ(ci.high, 2.0);
}

TEST(ExactBootstrap, EnumeratesEveryOrderedResample) {
  // Resampled medians of {1, 3}: (1,1) 1, (1,3) 2, (3,1) 2, (3,3) 3. Type-7 quantiles of
  // {1, 2, 2, 3} at 2.5% and 97.5%: 1 + 0.075 and 2 + 0.925.
  ConfidenceInterval ci = BootstrapMedianRatioCI({1.0, 3.0}, {1.0});
  EXPECT_TRUE(ci.exact);
  EXPECT_EQ(ci.resamples, 4);
  EXPECT_NEAR(ci.low, 1.075, 1e-12);
  EXPECT_NEAR(ci.high, 2.925, 1e-12);
}

TEST(ExactBootstrap, LargeSamplesFallBackToSeededMonteCarlo) {
  std::vector<double> t, c;
  for (int i = 0; i < 10; ++i) {
    t.push_back(2.0 + 0.01 * i);
    c.push_back(1.0 + 0.01 * i);
  }
  ConfidenceInterval ci = BootstrapMedianRatioCI(t, c);
  EXPECT_FALSE(ci.exact);
  EXPECT_EQ(ci.resamples, 10000);
  EXPECT_LT(ci.low, ci.high);
  ConfidenceInterval again = BootstrapMedianRatioCI(t, c);
  EXPECT_EQ(ci.low, again.low);  // same seed, same interval
}

TEST(MannWhitneyMinP, SmallSamplesCannotReachSignificance) {
  EXPECT_DOUBLE_EQ(MannWhitneyMinP(1, 1), 1.0);
  EXPECT_NEAR(MannWhitneyMinP(2, 2), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(MannWhitneyMinP(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(MannWhitneyMinP(4, 4), 2.0 / 70.0, 1e-12);
  EXPECT_TRUE(std::isnan(MannWhitneyMinP(0, 3)));
  // The exact test reaches its minimum when the samples do not overlap at all.
  EXPECT_NEAR(MannWhitneyU({4, 5, 6}, {1, 2, 3}).p_value, MannWhitneyMinP(3, 3), 1e-12);
}

}  // namespace
}  // namespace codl::experiment
