// victim.metric: parsing, per-trial values, and what Summarize makes of them (bimodal victims,
// throughput direction, flagged trials made visible, max intensities).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/analysis/trial_metric.h"

namespace codl::experiment {
namespace {

TrialMetric M(const std::string& name) { return *ParseTrialMetric(name); }

TEST(TrialMetricTest, ParsesEveryAllowedNameAndReadsItBack) {
  for (const char* name : {"elapsed", "throughput", "mean", "median", "p1", "p50", "p95", "p99"}) {
    auto m = ParseTrialMetric(name);
    ASSERT_TRUE(m.ok()) << name;
    EXPECT_EQ(m->Name(), name);
  }
  EXPECT_EQ(TrialMetric{}.Name(), "elapsed");  // the default
  EXPECT_TRUE(M("throughput").HigherIsFaster());
  EXPECT_EQ(M("throughput").Unit(), "steps/s");
  EXPECT_EQ(M("p90").Unit(), "s");
}

TEST(TrialMetricTest, RejectsOthersListingTheAllowedValues) {
  for (const char* bad :
       {"", "fastest", "p0", "p100", "p9.5", "p-5", "P95", "p", "p095", "mean "}) {
    auto m = ParseTrialMetric(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.error().find("elapsed, throughput, mean, median, pNN (p1..p99)"), std::string::npos)
        << m.error();
  }
}

TrialRecord WithSteps(const std::vector<double>& times, int warmup = 0) {
  TrialRecord t;
  t.state = TrialState::kDone;
  for (size_t i = 0; i < times.size(); ++i) {
    VictimStep s;
    s.step = static_cast<int64_t>(i);
    s.step_time_s = times[i];
    s.warmup = static_cast<int>(i) < warmup;
    t.steps.push_back(s);
  }
  return t;
}

TEST(TrialMetricTest, ValuesComeFromTheMeasuredStepsOnly) {
  // Two warmup steps of 9 s must not count.
  const TrialRecord t = WithSteps({9, 9, 0.1, 0.1, 0.1, 0.5}, 2);
  EXPECT_DOUBLE_EQ(TrialMetricValue(t, M("elapsed")), 0.8);
  EXPECT_DOUBLE_EQ(TrialMetricValue(t, M("throughput")), 4 / 0.8);
  EXPECT_DOUBLE_EQ(TrialMetricValue(t, M("mean")), 0.2);
  EXPECT_DOUBLE_EQ(TrialMetricValue(t, M("median")), 0.1);
  EXPECT_NEAR(TrialMetricValue(t, M("p90")), 0.38, 1e-12);  // type 7: 0.1 + 0.7 * 0.4
}

TEST(TrialMetricTest, ATrialWithoutStepsIsOneStepOfItsMetric) {
  TrialRecord wall;
  wall.value_s = 2.5;  // progress format `wall`
  EXPECT_DOUBLE_EQ(TrialMetricValue(wall, M("elapsed")), 2.5);
  EXPECT_DOUBLE_EQ(TrialMetricValue(wall, M("throughput")), 0.4);
  EXPECT_TRUE(std::isnan(TrialMetricValue(TrialRecord{}, M("elapsed"))));
  const auto all = AllTrialMetricValues(wall);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].first, "elapsed");
  EXPECT_EQ(all[5].first, "p99");
}

// A pipelined loop: fast steps (10 ms) and loader stalls (30 ms). Interference turns 40% stalls
// into 60%: time to train grows 22/18, the median jumps from one cluster to the other (3x).
std::vector<TrialRecord> Bimodal() {
  std::vector<TrialRecord> trials;
  auto make = [](int slow_of_ten) {
    std::vector<double> times;
    for (int i = 0; i < 10; ++i) times.push_back(i < slow_of_ten ? 0.03 : 0.01);
    return WithSteps(times);
  };
  int index = 0;
  for (int rep = 0; rep < 3; ++rep) {
    TrialRecord b = make(4);
    b.index = index++;
    b.pairing = "baseline";
    b.baseline = true;
    trials.push_back(b);
    TrialRecord t = make(6);
    t.index = index++;
    t.pairing = "loader@max";
    trials.push_back(t);
  }
  return trials;
}

ExperimentResults Under(const std::string& metric, const std::vector<TrialRecord>& trials) {
  SummarizeOptions o;
  o.metric = M(metric);
  ExperimentRecord e;
  e.id = "e";
  return Summarize(e, trials, o);
}

TEST(TrialMetricTest, ElapsedGetsTimeToTrainWhereTheMedianJumps) {
  const auto elapsed = Under("elapsed", Bimodal());
  EXPECT_EQ(elapsed.metric, "elapsed");
  EXPECT_NEAR(elapsed.pairings[1].slowdown, 0.22 / 0.18, 1e-9);
  EXPECT_NEAR(Under("median", Bimodal()).pairings[1].slowdown, 3.0, 1e-9);
  EXPECT_NEAR(Under("mean", Bimodal()).pairings[1].slowdown, 0.22 / 0.18, 1e-9);
}

TEST(TrialMetricTest, ThroughputSlowdownIsBaselineOverMeasured) {
  const auto r = Under("throughput", Bimodal());
  EXPECT_EQ(r.metric_unit, "steps/s");
  const PairingSummary& p = r.pairings[1];
  EXPECT_NEAR(p.slowdown, 0.22 / 0.18, 1e-9);  // > 1: slower, as for every metric
  EXPECT_NEAR(p.metric_median, 10 / 0.22, 1e-9);
  EXPECT_TRUE(std::isnan(p.median_metric_s));  // not seconds
  EXPECT_LE(p.ci_low, p.slowdown);
  EXPECT_GE(p.ci_high, p.slowdown);
  EXPECT_NE(FormatTable(r).find("steps/s"), std::string::npos) << FormatTable(r);
}

// Flagged trials leave the held-target figure but are shown: flag rate and all-trials slowdown.
TEST(TrialMetricTest, FlaggedTrialsAreVisibleNotSilent) {
  std::vector<TrialRecord> trials = Bimodal();
  for (int i = 0; i < 3; ++i) {  // the antagonist held its target in half of the trials
    TrialRecord flagged = trials[1];
    flagged.index = 99 + i;
    flagged.state = TrialState::kFlagged;
    for (auto& s : flagged.steps) s.step_time_s *= 10;
    trials.push_back(flagged);
  }
  const auto r = Under("elapsed", trials);
  const PairingSummary& p = r.pairings[1];
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.n_flagged, 3);
  EXPECT_EQ(p.n_all, 6);
  EXPECT_DOUBLE_EQ(p.flag_rate, 0.5);
  EXPECT_NEAR(p.slowdown, 0.22 / 0.18, 1e-9);
  EXPECT_GT(p.slowdown_all, p.slowdown);  // the flagged trial moved it
  const std::string table = FormatTable(r, /*wide=*/true);
  EXPECT_NE(table.find("3/6 (50%)"), std::string::npos) << table;
  EXPECT_NE(table.find("all trials [CI]"), std::string::npos) << table;
  const auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_EQ(j["metric"], "elapsed");
  EXPECT_EQ(j["pairings"][1]["n_all"], 6);
  EXPECT_DOUBLE_EQ(j["pairings"][1]["flag_rate"].get<double>(), 0.5);
  EXPECT_TRUE(j["pairings"][1]["slowdown_all"].is_number());
  const std::string csv = FormatCsv(r);
  EXPECT_NE(csv.find(",metric,metric_unit,metric_median,n_all,flag_rate,slowdown_all,ci_all_low,"
                     "ci_all_high,max,"),
            std::string::npos)
      << csv;
}

TEST(TrialMetricTest, MaxIntensityShowsItsAchievedRateAsTheOutcome) {
  std::vector<TrialRecord> trials = Bimodal();
  for (auto& t : trials) {
    if (t.baseline) continue;
    AntagonistResult a;
    a.name = "loader";
    a.injector = "memcpy";
    a.level = 1;
    a.target_rate = 0;  // max: no target
    a.achieved_rate = 3.0 * (1 << 30);
    a.unit = "bytes/s";
    t.antagonists = {a};
  }
  const auto r = Under("elapsed", trials);
  ASSERT_EQ(r.pairings[1].antagonists.size(), 1u);
  const AntagonistSummary& a = r.pairings[1].antagonists[0];
  EXPECT_TRUE(a.max);
  EXPECT_EQ(a.intensity, "max");
  EXPECT_EQ(a.n_missed_target, 0);
  EXPECT_NE(FormatTable(r, true).find("loader 3.00 GiB/s (max, open loop)"), std::string::npos)
      << FormatTable(r, true);
  const auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_TRUE(j["pairings"][1]["antagonists"][0]["max"].get<bool>());
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TrialRecord Stepped(const std::vector<double>& values, double wall_s) {
  TrialRecord t;
  t.wall_s = wall_s;
  for (size_t i = 0; i < values.size(); ++i) {
    VictimStep s;
    s.step = static_cast<int64_t>(i);
    s.step_time_s = values[i];
    t.steps.push_back(s);
  }
  return t;
}

TEST(MetricLooksWrongTest, AStepIndexCapturedByARegexIsNotAStepTime) {
  ProgressSpec regex;
  regex.format = ProgressSpec::Format::kRegex;
  regex.pattern = "step (\\d+) loss";
  // 60 steps of a 5.8 s job whose capture is the step index: 1 + 2 + ... + 60 = 1830 "s".
  std::vector<double> index;
  for (int i = 1; i <= 60; ++i) index.push_back(i);
  const std::string why = MetricLooksWrong(Stepped(index, 5.8), regex);
  EXPECT_NE(why.find("the 60 measured steps add up to 1830 s, 315.5x the victim's wall time of "
                     "5.8 s"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("progress.pattern 'step (\\d+) loss' captures 1, 2, 3, 4, ..."),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("only increasing: a counter"), std::string::npos) << why;
}

TEST(MetricLooksWrongTest, RealStepTimesAndWallVictimsPass) {
  ProgressSpec jsonl;
  // Step times that fit in the wall time (start-up and data loading outside the steps).
  EXPECT_EQ(MetricLooksWrong(Stepped({0.1, 0.12, 0.09, 0.11}, 1.0), jsonl), "");
  // Milliseconds where seconds are meant: 4 x 100 "s" in a 1 s run.
  const std::string ms = MetricLooksWrong(Stepped({100, 120, 90, 110}, 1.0), jsonl);
  EXPECT_NE(ms.find("progress.field 'step_time_s' reads 100, 120, 90, 110"), std::string::npos)
      << ms;
  EXPECT_EQ(ms.find("only increasing"), std::string::npos) << ms;
  ProgressSpec wall;
  wall.format = ProgressSpec::Format::kWall;
  EXPECT_EQ(MetricLooksWrong(Stepped({100, 120}, 1.0), wall), "");
  EXPECT_EQ(MetricLooksWrong(Stepped({}, 1.0), jsonl), "") << "no steps, nothing to judge";
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TEST(MetricLooksWrongTest, TheSummarySaysItOnceWithTheFirstDetail) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 3; ++i) {
    TrialRecord t = Stepped({1, 2, 3}, 0.5);
    t.index = 2 - i;  // out of order: the detail is the earliest trial's
    t.pairing = "baseline";
    t.baseline = true;
    t.state = TrialState::kFlagged;
    t.flag_reasons = {
        {FlagCode::kMetricLooksWrong, "metric looks wrong: trial " + std::to_string(t.index)}};
    trials.push_back(t);
  }
  const ExperimentResults r = Summarize(ExperimentRecord{}, trials);
  EXPECT_EQ(r.n_metric_looks_wrong, 3);
  EXPECT_EQ(r.metric_looks_wrong, "metric looks wrong: trial 0");
  const std::string table = FormatTable(r, /*wide=*/true);
  EXPECT_NE(table.find("warning: 3 trials flagged because the victim's per-step values cannot be "
                       "step times (first: metric looks wrong: trial 0); fix victim.progress"),
            std::string::npos)
      << table;
  EXPECT_NE(NothingMeasured(r).find("none of its 3 trials was measured (3 flagged)"),
            std::string::npos);
}

}  // namespace
}  // namespace codl::experiment
