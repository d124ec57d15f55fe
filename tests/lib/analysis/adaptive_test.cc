// Adaptive repetitions: precision of a pairing, the stop rule's verdict and reasons, the
// minimal detectable effect, and the blocks estimate from a previous run.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "lib/analysis/adaptive.h"
#include "lib/analysis/stats.h"

namespace codl::experiment {
namespace {

PairingSummary Pairing(const std::string& key, double slowdown, double low, double high,
                       int n = 5) {
  PairingSummary p;
  p.pairing = key;
  p.slowdown = slowdown;
  p.ci_low = low;
  p.ci_high = high;
  p.n = n;
  return p;
}

ExperimentResults Results(std::vector<PairingSummary> pairings) {
  ExperimentResults r;
  PairingSummary base;
  base.pairing = "baseline";
  base.baseline = true;
  base.slowdown = 1;
  r.pairings.push_back(base);
  for (auto& p : pairings) r.pairings.push_back(std::move(p));
  return r;
}

TEST(RelativeHalfWidth, HalfTheIntervalOverTheSlowdown) {
  EXPECT_NEAR(RelativeHalfWidth(Pairing("m@1", 2.0, 1.9, 2.1)), 0.05, 1e-12);
  EXPECT_TRUE(std::isinf(RelativeHalfWidth(Pairing("m@1", 2.0, kNaN, kNaN))));
}

TEST(CheckPrecision, ReachedOnlyWhenEveryPairingIsNarrowEnough) {
  auto narrow = Results({Pairing("a@1", 2.0, 1.98, 2.02), Pairing("b@1", 1.0, 0.99, 1.01)});
  EXPECT_TRUE(CheckPrecision(narrow, 0.02).reached);
  auto one_wide = Results({Pairing("a@1", 2.0, 1.98, 2.02), Pairing("b@1", 1.0, 0.9, 1.1)});
  const PrecisionCheck c = CheckPrecision(one_wide, 0.02);
  EXPECT_FALSE(c.reached);
  EXPECT_EQ(c.widest_pairing, "b@1");
  EXPECT_NEAR(c.widest, 0.1, 1e-12);
  EXPECT_EQ(MaxReachedReason(40, c), "max reached (40) with widest half-width 10% at pairing b@1");
  auto no_ci = Results({Pairing("a@1", 2.0, kNaN, kNaN)});
  EXPECT_FALSE(CheckPrecision(no_ci, 0.5).reached);
  EXPECT_EQ(TargetReachedReason(7), "target reached after 7 blocks");
}

TEST(MinimumDetectableEffect, KnownByConstruction) {
  // Median 10, absolute deviations {1, 1, 0, 1, 1} -> MAD 1, robust SD 1.4826, relative 0.14826.
  const std::vector<double> baseline = {9, 11, 10, 9, 11};
  EXPECT_NEAR(RobustRelativeSpread(baseline), 0.14826, 1e-12);
  // z(0.975) + z(0.8) = 1.959964 + 0.841621 = 2.801585; sqrt(1/8 + 1/8) = 0.5.
  EXPECT_NEAR(MinimumDetectableSlowdown(0.14826, 8, 8), 1 + 2.801585 * 0.14826 * 0.5, 1e-6);
  // Four times the trials halve it.
  EXPECT_NEAR(MinimumDetectableSlowdown(0.1, 32, 32) - 1,
              (MinimumDetectableSlowdown(0.1, 8, 8) - 1) / 2, 1e-12);
  EXPECT_TRUE(std::isnan(MinimumDetectableSlowdown(0.1, 1, 8)));
  EXPECT_TRUE(std::isnan(RobustRelativeSpread({10})));
}

TEST(MinimumDetectableEffect, DetectedAboutFourTimesInFiveBySimulation) {
  // Normal trials with SD 5 % of the mean, slowed by exactly the MDE for 20 against 20: the
  // rank test (efficiency 3/pi of the t test's) finds it close to the promised 80 % of the time.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.05);
  const double mde = MinimumDetectableSlowdown(0.05, 20, 20);
  int detected = 0;
  const int runs = 2000;
  for (int r = 0; r < runs; ++r) {
    std::vector<double> base, slow;
    for (int i = 0; i < 20; ++i) base.push_back(1 + noise(rng));
    for (int i = 0; i < 20; ++i) slow.push_back(mde + noise(rng));
    detected += MannWhitneyU(slow, base).p_value < 0.05;
  }
  EXPECT_NEAR(static_cast<double>(detected) / runs, 0.78, 0.04);
}

TEST(EstimateBlocks, ScalesTheWidestPairingByOneOverRootN) {
  AdaptiveRepetitions a;
  a.enabled = true;
  a.min = 3;
  a.max = 40;
  a.ci_halfwidth = 0.02;
  // +-4 % at n = 5 needs (4/2)^2 = 4 times the trials: 20 blocks; +-1 % is already there.
  auto previous = Results({Pairing("a@1", 2.0, 1.92, 2.08, 5), Pairing("b@1", 1, 0.99, 1.01, 5)});
  auto e = EstimateBlocks(previous, a);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->blocks, 20);
  EXPECT_EQ(e->pairing, "a@1");
  EXPECT_EQ(e->n, 5);
  // Never fewer than min.
  auto tight = Results({Pairing("a@1", 2.0, 1.99, 2.01, 5)});
  EXPECT_EQ(EstimateBlocks(tight, a)->blocks, 3);
  EXPECT_FALSE(EstimateBlocks(Results({Pairing("a@1", 2.0, kNaN, kNaN)}), a).has_value());
}

}  // namespace
}  // namespace codl::experiment
