// NextToleranceStep: the bisection's next level and every stop reason, on pairing summaries
// built by hand (the ground truth end to end is tests/integration/tolerance_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/analysis/tolerance.h"

namespace codl::experiment {
namespace {

AntagonistSpec Searched(int max_trials = 30) {
  AntagonistSpec a;
  a.name = "tick";
  a.injector = "noop";
  a.tolerance.enabled = true;
  a.tolerance.slowdown = 1.10;
  a.tolerance.resolution = 0.05;
  a.tolerance.max_trials = max_trials;
  return a;
}

// tick alone at `level`: n trials, slowdown CI [lo, hi].
PairingSummary At(double level, int n, double lo, double hi) {
  PairingSummary p;
  char key[32];
  std::snprintf(key, sizeof key, "tick@%g", level);
  p.pairing = key;
  p.n = n;
  p.slowdown = (lo + hi) / 2;
  p.ci_low = lo;
  p.ci_high = hi;
  p.ci_small_n = n < 3;
  AntagonistSummary s;
  s.name = "tick";
  s.level = level;
  p.antagonists.push_back(s);
  return p;
}

TEST(ToleranceSearch, StartsAtTheCalibratedPeakThenBisects) {
  ToleranceStep s = NextToleranceStep({}, Searched(), 0);
  ASSERT_FALSE(s.done);
  EXPECT_DOUBLE_EQ(s.level, 1.0);
  EXPECT_EQ(s.trials, 3);
  s = NextToleranceStep({At(1, 3, 1.5, 1.6)}, Searched(), 3);
  ASSERT_FALSE(s.done);
  EXPECT_DOUBLE_EQ(s.level, 0.5);
  s = NextToleranceStep({At(1, 3, 1.5, 1.6), At(0.5, 3, 1.02, 1.04)}, Searched(), 6);
  ASSERT_FALSE(s.done);
  EXPECT_DOUBLE_EQ(s.level, 0.75);
  EXPECT_DOUBLE_EQ(s.result.tolerated_level, 0.5);
  EXPECT_DOUBLE_EQ(s.result.breaks_level, 1);
}

TEST(ToleranceSearch, StopsResolvedWithinTheResolution) {
  const ToleranceStep s =
      NextToleranceStep({At(0.5, 3, 1.05, 1.08), At(0.54, 3, 1.12, 1.2)}, Searched(), 6);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.result.stop_reason, "resolved");
  EXPECT_DOUBLE_EQ(s.result.tolerated_level, 0.5);
  EXPECT_DOUBLE_EQ(s.result.breaks_level, 0.54);
  EXPECT_NE(ToleranceLine(s.result).find("tolerates up to level 0.5, breaks at 0.54"),
            std::string::npos)
      << ToleranceLine(s.result);
}

TEST(ToleranceSearch, SaysSoWhenTheVictimToleratesThePeak) {
  const ToleranceStep s = NextToleranceStep({At(1, 3, 1.0, 1.05)}, Searched(), 3);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.result.stop_reason, "tolerates max");
  EXPECT_TRUE(s.result.tolerates_max);
  EXPECT_NE(ToleranceLine(s.result).find("tolerates the calibrated peak (level 1)"),
            std::string::npos);
}

TEST(ToleranceSearch, AStraddlingLevelGetsMoreTrialsThenStopsUndecided) {
  // 1 breaks; 0.5 straddles 1.10: two more trials, until the per-level cap.
  ToleranceStep s = NextToleranceStep({At(1, 3, 1.5, 1.6), At(0.5, 3, 1.05, 1.15)}, Searched(), 6);
  ASSERT_FALSE(s.done);
  EXPECT_DOUBLE_EQ(s.level, 0.5);
  EXPECT_EQ(s.trials, 2);
  s = NextToleranceStep({At(1, 3, 1.5, 1.6), At(0.5, kMaxTrialsPerToleranceLevel, 1.08, 1.12)},
                        Searched(), 15);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.result.stop_reason, "undecided");
  EXPECT_NE(s.result.detail.find("level 0.5 after 12 trials"), std::string::npos)
      << s.result.detail;
}

TEST(ToleranceSearch, TheBudgetEndsItAndCapsTheLastStep) {
  ToleranceStep s = NextToleranceStep({At(1, 3, 1.5, 1.6)}, Searched(4), 3);
  ASSERT_FALSE(s.done);
  EXPECT_EQ(s.trials, 1);  // one trial left of max_trials 4
  s = NextToleranceStep({At(1, 3, 1.5, 1.6), At(0.5, 1, 1.2, 1.2)}, Searched(4), 4);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.result.stop_reason, "max_trials");
}

TEST(ToleranceSearch, OtherPairingsAndCombinationsAreNotProbes) {
  std::vector<PairingSummary> pairings = {At(1, 3, 1.5, 1.6)};
  PairingSummary combined = At(0.5, 3, 1.0, 1.01);
  combined.antagonists.push_back(combined.antagonists[0]);
  combined.antagonists[1].name = "other";
  pairings.push_back(combined);
  PairingSummary max = At(1, 3, 1.0, 1.01);
  max.antagonists[0].max = true;
  pairings.push_back(max);
  const ToleranceStep s = NextToleranceStep(pairings, Searched(), 3);
  ASSERT_EQ(s.result.probes.size(), 1u);
  EXPECT_DOUBLE_EQ(s.level, 0.5);
}

// Level 1 on a busy node: the antagonist cannot hold the calibrated peak beside the victim, its
// trials are flagged and decide nothing. The search says so instead of retrying to the budget.
TEST(ToleranceSearch, StopsWhenTheAntagonistCannotHoldTheLevel) {
  PairingSummary flagged = At(1, 1, kNaN, kNaN);
  flagged.n_all = 3;  // 2 of 3 flagged
  ToleranceStep s = NextToleranceStep({flagged}, Searched(), 3);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.result.stop_reason, "cannot hold");
  EXPECT_NE(s.result.detail.find("level 1: 2 of 3 trials flagged"), std::string::npos)
      << s.result.detail;
  EXPECT_NE(ToleranceLine(s.result).find("cannot hold"), std::string::npos);
  // One flagged trial of three is not enough to give up: two more are run.
  flagged.n = 2;
  s = NextToleranceStep({flagged}, Searched(), 3);
  ASSERT_FALSE(s.done);
  EXPECT_DOUBLE_EQ(s.level, 1.0);
  EXPECT_EQ(s.trials, 3);
}

}  // namespace
}  // namespace codl::experiment
