// The pressure a workload causes (lib/analysis/pressure.h) on hand-built trials with known
// achieved rates.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lib/analysis/pressure.h"
#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

AntagonistResult Injector(const std::string& name, const std::string& injector, double achieved,
                          double peak) {
  AntagonistResult a;
  a.name = name;
  a.injector = injector;
  a.level = 1;
  a.achieved_rate = achieved;
  a.peak_rate = peak;
  a.unit = "bytes/s";
  return a;
}

AntagonistResult Workload(const std::string& name) {
  AntagonistResult a;
  a.name = name;
  a.injector = "workload";
  a.achieved_rate = 0.02;
  a.unit = "s/step";
  return a;
}

TrialRecord Trial(const std::string& pairing, std::vector<AntagonistResult> antagonists,
                  TrialState state = TrialState::kDone) {
  static int index = 0;
  TrialRecord t;
  t.experiment_id = "e";
  t.index = index++;
  t.pairing = pairing;
  t.baseline = pairing == "baseline";
  t.state = state;
  t.value_s = 1;
  t.wall_s = 1;
  t.antagonists = std::move(antagonists);
  return t;
}

const PressureSummary* Find(const std::vector<PressureSummary>& rows, const std::string& workload,
                            const std::string& antagonist) {
  for (const auto& p : rows) {
    if (p.workload == workload && p.antagonist == antagonist) return &p;
  }
  return nullptr;
}

TEST(PressureTest, VictimPressureIsOneMinusTheMeanFractionOfPeak) {
  std::vector<TrialRecord> trials = {Trial("baseline", {})};
  // membw at max reached 0.7, 0.8, 0.9 of its 100 peak: pressure 1 - 0.8 = 0.2.
  for (double achieved : {70.0, 80.0, 90.0})
    trials.push_back(Trial("membw@max", {Injector("membw", "memcpy", achieved, 100)}));
  // cpu at level 1 (no max single): 0.5 and 0.7 of peak, only 2 trials: no CI.
  trials.push_back(Trial("cpu@1", {Injector("cpu", "cpu", 5, 10)}));
  trials.push_back(Trial("cpu@1", {Injector("cpu", "cpu", 7, 10)}));
  // Not counted: a level below 1, a flagged trial, a trial without a peak.
  trials.push_back(Trial("membw@0.5", {Injector("membw", "memcpy", 10, 100)}));
  trials.push_back(
      Trial("membw@max", {Injector("membw", "memcpy", 10, 100)}, TrialState::kFlagged));
  trials.push_back(Trial("membw@max", {Injector("membw", "memcpy", 10, 0)}));

  const auto rows = SummarizePressure(trials, {2000, 0.95, 7});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].antagonist, "cpu");  // by name
  const PressureSummary* m = Find(rows, "victim", "membw");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->injector, "memcpy");
  EXPECT_EQ(m->unit, "bytes/s");
  EXPECT_EQ(m->intensity, "max");
  EXPECT_EQ(m->n, 3);
  EXPECT_EQ(m->n_alone, 0);
  EXPECT_NEAR(m->pressure, 0.2, 1e-12);
  // The bootstrap means lie within [1 - 0.9, 1 - 0.7], around 0.2.
  ASSERT_TRUE(std::isfinite(m->ci_low) && std::isfinite(m->ci_high));
  EXPECT_GE(m->ci_low, 0.1 - 1e-12);
  EXPECT_LE(m->ci_high, 0.3 + 1e-12);
  EXPECT_LT(m->ci_low, 0.2);
  EXPECT_GT(m->ci_high, 0.2);

  const PressureSummary* c = Find(rows, "victim", "cpu");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->intensity, "1");
  EXPECT_EQ(c->n, 2);
  EXPECT_NEAR(c->pressure, 0.4, 1e-12);
  EXPECT_TRUE(std::isnan(c->ci_low));  // fewer than 3 trials: no CI
  EXPECT_TRUE(std::isnan(c->ci_high));

  // Reproducible: the same seed gives the same interval.
  const auto again = SummarizePressure(trials, {2000, 0.95, 7});
  EXPECT_EQ(Find(again, "victim", "membw")->ci_low, m->ci_low);
  EXPECT_EQ(Find(again, "victim", "membw")->ci_high, m->ci_high);
}

TEST(PressureTest, MaxIsPreferredOverLevelOneAndInstancesAreAveraged) {
  std::vector<TrialRecord> trials;
  trials.push_back(Trial("membw@1", {Injector("membw", "memcpy", 10, 100)}));
  // Two nodes: 0.6 and 0.8 of peak -> 0.7 in this trial.
  trials.push_back(Trial(
      "membw@max", {Injector("membw", "memcpy", 60, 100), Injector("membw", "memcpy", 160, 200)}));
  const auto samples = VictimPressure(trials);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].intensity, "max");
  ASSERT_EQ(samples[0].fractions.size(), 1u);
  EXPECT_NEAR(samples[0].fractions[0], 0.7, 1e-12);
  EXPECT_NEAR(PressureFromFractions(samples[0].fractions), 0.3, 1e-12);
  EXPECT_TRUE(std::isnan(PressureFromFractions({})));
}

TEST(PressureTest, AWorkloadsPressureIsTheRatioOfMeansWithAndWithoutIt) {
  std::vector<TrialRecord> trials = {Trial("baseline", {})};
  // membw beside the victim alone: mean 80; beside the victim and job2: mean 60 -> 1 - 0.75.
  for (double achieved : {78.0, 80.0, 82.0})
    trials.push_back(Trial("membw@max", {Injector("membw", "memcpy", achieved, 100)}));
  for (double achieved : {58.0, 60.0, 62.0})
    trials.push_back(Trial("job2@run+membw@max",
                           {Injector("membw", "memcpy", achieved, 100), Workload("job2")}));
  // cpu beside job2 but never without it: no row for job2 on cpu.
  trials.push_back(Trial("cpu@max+job2@run", {Injector("cpu", "cpu", 5, 10), Workload("job2")}));
  trials.push_back(Trial("job2@run", {Workload("job2")}));

  const auto rows = SummarizePressure(trials, {2000, 0.95, 11});
  const PressureSummary* w = Find(rows, "job2", "membw");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->injector, "memcpy");
  EXPECT_EQ(w->n, 3);
  EXPECT_EQ(w->n_alone, 3);
  EXPECT_NEAR(w->pressure, 0.25, 1e-12);
  // Ratios of resampled means lie within [58/82, 62/78]: pressure within [1 - 62/78, 1 - 58/82].
  ASSERT_TRUE(std::isfinite(w->ci_low) && std::isfinite(w->ci_high));
  EXPECT_GE(w->ci_low, 1 - 62.0 / 78 - 1e-12);
  EXPECT_LE(w->ci_high, 1 - 58.0 / 82 + 1e-12);
  EXPECT_LT(w->ci_low, 0.25);
  EXPECT_GT(w->ci_high, 0.25);
  EXPECT_EQ(Find(rows, "job2", "cpu"), nullptr);
  // The victim's rows come first.
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.front().workload, "victim");
  EXPECT_EQ(rows.back().workload, "job2");
}

// pagecache at max holds what it could fill in one trial (4 of 24 GB here), whatever ran beside
// it: 1 - held / calibrated peak is its fill time, not the victim's pressure. No victim row.
TEST(PressureTest, ACapacityHeldIsNoVictimPressure) {
  std::vector<TrialRecord> trials;
  for (double held : {4.0, 4.2, 4.1}) {
    AntagonistResult a = Injector("mem", "pagecache", held, 24);
    a.unit = "bytes";
    trials.push_back(Trial("mem@max", {a}));
    trials.push_back(Trial("membw@max", {Injector("membw", "memcpy", 80, 100)}));
  }
  const std::vector<PressureSummary> rows = SummarizePressure(trials);
  EXPECT_EQ(Find(rows, "victim", "mem"), nullptr);
  ASSERT_NE(Find(rows, "victim", "membw"), nullptr);
  EXPECT_NEAR(Find(rows, "victim", "membw")->pressure, 0.2, 1e-12);
}

TEST(PressureTest, AWorkloadWithTwoTrialsASideHasNoInterval) {
  std::vector<TrialRecord> trials;
  for (double achieved : {80.0, 80.0, 80.0})
    trials.push_back(Trial("membw@max", {Injector("membw", "memcpy", achieved, 100)}));
  for (double achieved : {40.0, 60.0})
    trials.push_back(Trial("job2@run+membw@max",
                           {Injector("membw", "memcpy", achieved, 100), Workload("job2")}));
  const std::vector<PressureSummary> all_w = SummarizePressure(trials);
  const PressureSummary* w = Find(all_w, "job2", "membw");
  ASSERT_NE(w, nullptr);
  EXPECT_NEAR(w->pressure, 1 - 50.0 / 80, 1e-12);
  EXPECT_TRUE(std::isnan(w->ci_low));
  EXPECT_TRUE(std::isnan(w->ci_high));
}

TEST(PressureTest, SummarizeTableAndJsonCarryIt) {
  ExperimentRecord e;
  e.id = "e";
  e.name = "p";
  e.seed = 3;
  std::vector<TrialRecord> trials = {Trial("baseline", {}), Trial("baseline", {}),
                                     Trial("baseline", {})};
  for (double achieved : {70.0, 80.0, 90.0})
    trials.push_back(Trial("membw@max", {Injector("membw", "memcpy", achieved, 100)}));
  const ExperimentResults r = Summarize(e, trials);
  ASSERT_EQ(r.pressure.size(), 1u);
  EXPECT_NEAR(r.pressure[0].pressure, 0.2, 1e-12);
  const std::string table = FormatTable(r);
  EXPECT_NE(table.find("pressure: victim on membw (memcpy) 0.200 ["), std::string::npos) << table;
  const std::string json = FormatJson(r);
  EXPECT_NE(json.find("\"pressure\": ["), std::string::npos);
  EXPECT_NE(json.find("\"workload\": \"victim\""), std::string::npos);
  EXPECT_NE(json.find("\"n_alone\": 0"), std::string::npos);
}

TEST(PressureTest, TheTableEscapesNamesForTheTerminal) {
  ExperimentRecord e;
  e.id = "e";
  std::vector<TrialRecord> trials = {Trial("baseline", {})};
  const std::string evil = "bw\x1b]0;pwned\a\r\nFAKE";
  for (double achieved : {70.0, 80.0, 90.0})
    trials.push_back(Trial(evil + "@max", {Injector(evil, "memcpy", achieved, 100)}));
  const ExperimentResults r = Summarize(e, trials);
  ASSERT_EQ(r.pressure.size(), 1u);
  const std::string table = FormatTable(r);
  const size_t at = table.find("pressure: victim on bw");
  ASSERT_NE(at, std::string::npos) << table;
  const std::string line = table.substr(at, table.find('\n', at) - at);
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
  EXPECT_NE(line.find("FAKE (memcpy) 0.200"), std::string::npos) << line;
}

TEST(PressureTest, LineSaysWhenThereIsNoInterval) {
  PressureSummary a;
  a.workload = "job2";
  a.antagonist = "membw";
  a.injector = "memcpy";
  a.pressure = 0.25;
  a.n = 2;
  EXPECT_EQ(PressureLine({a}).rfind("pressure: job2 on membw (memcpy) 0.250 [n/a: n < 3]", 0), 0u);
}

}  // namespace
}  // namespace codl::experiment
