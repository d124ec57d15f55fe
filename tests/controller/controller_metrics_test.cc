// The controller's metrics: per-kind base-unit rate names, per-experiment series removed when
// the experiment ends, progress gauges, codl_build_info.
#include "controller/controller_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "lib/daemon/metrics_endpoint.h"

namespace codl::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TrialRecord TrialWith(const std::string& experiment, const std::string& unit) {
  TrialRecord t;
  t.experiment_id = experiment;
  t.state = TrialState::kDone;
  AntagonistResult a;
  a.name = "hog";
  a.injector = "memcpy";
  a.node = "n1";
  a.unit = unit;
  a.target_rate = 1e9;
  a.achieved_rate = 0.98e9;
  t.antagonists.push_back(a);
  return t;
}

TEST(ControllerMetrics, AchievedAndTargetUseBaseUnitNames) {
  ControllerMetrics m;
  m.OnTrialDone(TrialWith("e1", "bytes/s"));
  const std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("codl_antagonist_achieved_bytes_per_second{antagonist=\"hog\","
                              "experiment=\"e1\",injector=\"memcpy\",node=\"n1\"} 980000000"));
  EXPECT_THAT(text, HasSubstr("codl_antagonist_target_bytes_per_second{"));
  EXPECT_THAT(text, Not(HasSubstr("unit=")));
}

TEST(ControllerMetrics, AnExperimentsSeriesGoAwayWhenItEnds) {
  ControllerMetrics m;
  m.OnTrialDone(TrialWith("e1", "bytes/s"));
  m.OnTrialProgress("e1", 1, 12);
  m.OnTrialDone(TrialWith("e2", "busbw bytes/s"));
  m.OnTrialProgress("e2", 1, 4);
  EXPECT_THAT(m.Exposition(), HasSubstr("codl_experiment_trials_planned{experiment=\"e1\"} 12"));
  m.OnExperimentFinished("e1", ExperimentState::kDone);
  const std::string text = m.Exposition();
  EXPECT_THAT(text, Not(HasSubstr("experiment=\"e1\"")));
  EXPECT_THAT(text, HasSubstr("codl_antagonist_achieved_bus_bytes_per_second{"));
  EXPECT_THAT(text, HasSubstr("codl_experiment_trials_completed{experiment=\"e2\"} 1"));
  EXPECT_THAT(text, HasSubstr("codl_experiments_finished_total{state=\"done\"} 1"));
}

TEST(RateMetricSuffix, BaseUnitsPerInjectorUnit) {
  EXPECT_EQ(daemon::RateMetricSuffix("bytes/s"), "bytes_per_second");
  EXPECT_EQ(daemon::RateMetricSuffix("busbw bytes/s"), "bus_bytes_per_second");
  EXPECT_EQ(daemon::RateMetricSuffix("FLOP/s"), "flop_per_second");
  EXPECT_EQ(daemon::RateMetricSuffix("IOPS"), "operations_per_second");
  EXPECT_EQ(daemon::RateMetricSuffix("units/s"), "units_per_second");
  EXPECT_EQ(daemon::RateMetricSuffix("core-s/s"), "core_s_per_second");
  EXPECT_EQ(daemon::RateMetricSuffix("SM%"), "sm");
}

TEST(ControllerMetrics, BuildInfo) {
  ControllerMetrics m;
  EXPECT_THAT(m.Exposition(), HasSubstr("codl_build_info{daemon=\"controller\",version=\""));
}

}  // namespace
}  // namespace codl::controller
