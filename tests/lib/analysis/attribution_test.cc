// Additive attribution (lib/analysis/attribution.h): per-step means, a phase near zero at
// baseline shown as added time rather than a ratio, overlapped stages apart, the remainder.
#include "lib/analysis/attribution.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/analysis/stats.h"

namespace codl::experiment {
namespace {

VictimStep Step(double step, std::map<std::string, double> phases, bool warmup = false) {
  VictimStep s;
  s.step_time_s = step;
  s.phases = std::move(phases);
  s.warmup = warmup;
  return s;
}

TEST(AttributionTest, MeansSkipWarmupAndCountAMissingPhaseAsZero) {
  const StepMeans m = MeanPerStep({Step(9, {{"compute_s", 9}}, true), Step(0.010, {{"a_s", 0.004}}),
                                   Step(0.020, {{"a_s", 0.006}, {"b_s", 0.010}})});
  EXPECT_EQ(m.steps, 2);
  EXPECT_DOUBLE_EQ(m.step_s, 0.015);
  EXPECT_DOUBLE_EQ(m.phases.at("a_s"), 0.005);
  EXPECT_DOUBLE_EQ(m.phases.at("b_s"), 0.005);  // (0 + 0.010) / 2
  EXPECT_EQ(m.phases.count("compute_s"), 0u);   // only in the warm-up step
  EXPECT_EQ(MeanPerStep({}).steps, 0);
}

TEST(AttributionTest, DifferenceIntervalUsesTheSlowdownsResampling) {
  const ConfidenceInterval same = BootstrapMedianDifferenceCI({2, 2, 2}, {1, 1, 1});
  EXPECT_TRUE(same.exact);
  EXPECT_DOUBLE_EQ(same.low, 1);
  EXPECT_DOUBLE_EQ(same.high, 1);
  const ConfidenceInterval spread = BootstrapMedianDifferenceCI({3, 4, 5}, {1, 2, 3});
  EXPECT_LE(spread.low, 2);
  EXPECT_GE(spread.high, 2);
  EXPECT_LT(spread.low, spread.high);
  EXPECT_TRUE(std::isnan(BootstrapMedianDifferenceCI({}, {1}).low));
}

// Baseline: a step of 11 ms = data_wait 3 us + compute 10 ms + 1 ms untimed, with a 20 ms read
// in the loader threads. Beside the antagonist the loaders fall behind: read 40 ms, data_wait
// 3.1 ms; compute and the untimed millisecond are unchanged.
std::vector<TrialRecord> Trials() {
  std::vector<TrialRecord> trials;
  const double jitter[] = {1.0, 1.01, 0.99, 1.02, 0.98};
  int index = 0;
  for (double j : jitter) {
    for (bool interfered : {false, true}) {
      TrialRecord t;
      t.index = index++;
      t.pairing = interfered ? "storage@0.5" : "baseline";
      t.baseline = !interfered;
      t.state = TrialState::kDone;
      const double wait = interfered ? 0.0031 * j : 3e-6, compute = 0.010 * j;
      const double read = interfered ? 0.040 : 0.020;
      for (int k = 0; k < 10; ++k) {
        t.steps.push_back(Step(wait + compute + 0.001,
                               {{"data_wait_s", wait}, {"read_s", read}, {"compute_s", compute}},
                               k < 2));
      }
      t.value_s = wait + compute + 0.001;
      t.phase_medians = {{"data_wait_s", wait}, {"read_s", read}, {"compute_s", compute}};
      t.phase_order = {"data_wait_s", "read_s", "compute_s"};
      trials.push_back(t);
    }
  }
  return trials;
}

const PhaseSlowdown& Phase(const PairingSummary& p, const std::string& name) {
  for (const auto& ph : p.phases) {
    if (ph.phase == name) return ph;
  }
  ADD_FAILURE() << "no phase " << name;
  return p.phases.front();
}

TEST(AttributionTest, AddedTimePerPhaseAddsUpToTheAddedStep) {
  ExperimentRecord e;
  e.id = "e1";
  const ExperimentResults r = Summarize(e, Trials());
  ASSERT_EQ(r.pairings.size(), 2u);
  const PairingSummary& base = r.pairings[0];
  const PairingSummary& p = r.pairings[1];
  EXPECT_NEAR(base.attribution.step_s, 0.011003, 1e-9);
  EXPECT_TRUE(std::isnan(base.attribution.added_s));
  const StepAttribution& a = p.attribution;
  EXPECT_NEAR(a.added_s, 0.0031 - 3e-6, 1e-9);
  EXPECT_NEAR(a.explained_s, a.added_s, 1e-9);  // data_wait's rise, compute unchanged
  EXPECT_NEAR(a.unexplained_s, 0, 1e-9);
  ASSERT_TRUE(std::isfinite(a.ci_low) && std::isfinite(a.ci_high));
  EXPECT_GT(a.ci_low, 0);
  const PhaseSlowdown& wait = Phase(p, "data_wait_s");
  EXPECT_TRUE(wait.near_zero);  // 3 us of an 11 ms step: never a ratio
  EXPECT_TRUE(std::isnan(wait.slowdown));
  EXPECT_NEAR(wait.added_s, 0.0031 - 3e-6, 1e-9);
  EXPECT_TRUE(wait.significant);
  const PhaseSlowdown& compute = Phase(p, "compute_s");
  EXPECT_FALSE(compute.near_zero);
  EXPECT_NEAR(compute.added_s, 0, 1e-9);
  EXPECT_NEAR(compute.slowdown, 1, 1e-9);
  const PhaseSlowdown& read = Phase(p, "read_s");
  EXPECT_FALSE(read.on_path);
  EXPECT_EQ(read.feeds, "data_wait_s");
  EXPECT_NEAR(read.slowdown, 2, 1e-9);
  EXPECT_EQ(PhasesLine(base),
            "phases: step 11.0 ms = data_wait 3.0 us + compute 10.0 ms + untimed 1.0 ms; "
            "overlapped: read 20.0 ms (feeds data_wait)");
  const std::string line = PhasesLine(p);
  EXPECT_EQ(line.rfind("phases: +3.10 ms/step [", 0), 0u) << line;
  EXPECT_NE(line.find("= data_wait +3.10 ms* + compute +0.00 ms (1.00x) + untimed +0.00 ms; "
                      "overlapped: read 2.00x (feeds data_wait)"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("data_wait 1033"), std::string::npos) << line;
}

TEST(AttributionTest, WithoutStepsThePhasesAreMediansAsBefore) {
  ExperimentRecord e;
  std::vector<TrialRecord> trials = Trials();
  for (auto& t : trials) t.steps.clear();
  const ExperimentResults r = Summarize(e, trials);
  const PairingSummary& p = r.pairings[1];
  EXPECT_TRUE(std::isnan(p.attribution.added_s));
  // Near zero judged on the medians: 3 us of the baseline's 10 ms of on-path phases.
  EXPECT_TRUE(Phase(p, "data_wait_s").near_zero);
  EXPECT_TRUE(std::isnan(Phase(p, "data_wait_s").slowdown));
  EXPECT_EQ(PhasesLine(p), "phases: data_wait 3.1 ms, read 2.00x, compute 1.00x");
}

}  // namespace
}  // namespace codl::experiment
