// The ETA: the plan's estimate counts down until a trial finishes, then remaining trials cost
// what measured trials of their kind cost — a slow start does not inflate the rest.
#include "controller/eta.h"

#include <gtest/gtest.h>

namespace codl::controller {
namespace {

std::vector<experiment::PlannedTrial> Plan(const std::vector<bool>& baseline) {
  std::vector<experiment::PlannedTrial> plan;
  for (size_t i = 0; i < baseline.size(); ++i) {
    experiment::PlannedTrial t;
    t.index = static_cast<int>(i);
    t.baseline = baseline[i];
    plan.push_back(t);
  }
  return plan;
}

TEST(EtaModel, EstimateCountsDownBeforeTheFirstTrial) {
  EtaModel eta(Plan({true, false}), 70, 1);
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(0), 70);
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(30), 40);
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(90), 0);
}

TEST(EtaModel, MeasuredTrialsReplaceTheEstimateNotTheElapsedTime) {
  // The quickstart's shape: 12 trials of about 1 s after 5 s of calibration. Elapsed/completed
  // would say (5 + 1) × 11 = 66 s after trial 1; the truth is about 11 s.
  std::vector<bool> kinds = {true, false, false, true, false, false,
                             true, false, false, true, false, false};
  EtaModel eta(Plan(kinds), 70, 0.5);
  eta.OnTrialDone(0, 1.0);  // a baseline
  // 3 baselines at 1 s + 8 loaded trials at 1 s + 0.5 s settle.
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(6), 3 * 1.0 + 8 * 1.5);
  eta.OnTrialDone(1, 2.0);  // a loaded trial, measured
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(8), 3 * 1.0 + 7 * 2.0);
}

TEST(EtaModel, FirstTrialLoadedInfersBaselines) {
  EtaModel eta(Plan({false, true, true}), 100, 2);
  eta.OnTrialDone(0, 5.0);
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(10), 2 * 3.0);
}

TEST(EtaModel, IgnoresRepeatsAndOutOfRangeIndexes) {
  EtaModel eta(Plan({true, true}), 10, 0);
  eta.OnTrialDone(0, 4.0);
  eta.OnTrialDone(0, 100.0);
  eta.OnTrialDone(7, 100.0);
  eta.OnTrialDone(-1, 100.0);
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(5), 4.0);
  eta.OnTrialDone(1, 4.0);
  EXPECT_DOUBLE_EQ(eta.RemainingSeconds(9), 0);
}

}  // namespace
}  // namespace codl::controller
