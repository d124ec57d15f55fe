// The fast part of the ground-truth checks (docs/validity.md): seeded simulated experiments
// through the real Summarize. bench/validity runs the long version.
#include <gtest/gtest.h>

#include "lib/analysis/validity_sim.h"

namespace codl::experiment {
namespace {

TEST(ValidityTest, AaExperimentsRarelyReportASlowdown) {
  SimulationOptions o;  // default repetitions (5), no effect
  o.experiments = 200;
  const SimulationFigures f = SimulateExperiments(o);
  EXPECT_EQ(f.experiments, 200);
  EXPECT_LE(f.p_positive, 0.05);   // Mann-Whitney p < 0.05
  EXPECT_LE(f.ci_positive, 0.05);  // 95% CI wholly above 1
  EXPECT_NEAR(f.mean_slowdown, 1.0, 0.02);
}

TEST(ValidityTest, CoverageOfTheNinetyFivePercentInterval) {
  SimulationOptions o;
  o.experiments = 200;
  o.true_slowdown = 1.2;
  // The default (5 repetitions) must cover the truth at least 93% of the time.
  EXPECT_GE(SimulateExperiments(o).coverage, 0.93);
  // At 3 the percentile bootstrap of a median ratio under-covers (about 91%, docs/validity.md):
  // the reason the default is 5; a guard against it getting worse.
  o.repetitions = o.baselines = 3;
  EXPECT_GE(SimulateExperiments(o).coverage, 0.88);
}

TEST(ValidityTest, SimulationIsDeterministic) {
  SimulationOptions o;
  o.experiments = 20;
  const auto a = SimulateExperiments(o), b = SimulateExperiments(o);
  EXPECT_EQ(a.coverage, b.coverage);
  EXPECT_EQ(a.mean_slowdown, b.mean_slowdown);
}

}  // namespace
}  // namespace codl::experiment
