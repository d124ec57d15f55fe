#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "lib/analysis/multiple_comparisons.h"
#include "lib/analysis/results.h"
#include "lib/analysis/tidy.h"
#include "lib/common/units.h"

namespace codl::experiment {
namespace {

TrialRecord Trial(int index, const std::string& pairing, double metric,
                  TrialState state = TrialState::kDone) {
  TrialRecord t;
  t.experiment_id = "e1";
  t.index = index;
  t.pairing = pairing;
  t.baseline = pairing == "baseline";
  t.state = state;
  t.value_s = metric;
  t.phase_medians = {{"read_s", metric / 2}, {"compute_s", 0.5}};
  return t;
}

AntagonistResult Storage(double achieved, bool reached = true) {
  AntagonistResult a;
  a.name = "storage";
  a.injector = "io_uring";
  a.level = 0.5;
  a.target_rate = 1024.0 * 1024 * 1024;
  a.achieved_rate = achieved;
  a.achieved_cov = 0.05;
  a.unit = "bytes/s";
  a.reached_target = reached;
  return a;
}

// Baseline ~1.0 s; storage@0.5 ~2.0 s with its read phase 3x slower; plus one failed and one
// flagged trial whose absurd metrics must not move the figures.
std::vector<TrialRecord> Synthetic() {
  std::vector<TrialRecord> trials;
  const double base[] = {1.00, 1.01, 0.99, 1.02, 0.98, 1.00};
  const double slow[] = {2.00, 2.02, 1.98, 2.04, 1.96};
  int index = 0;
  for (int i = 0; i < 6; ++i) {
    trials.push_back(Trial(index++, "baseline", base[i]));
    if (i < 5) {
      TrialRecord t = Trial(index++, "storage@0.5", slow[i]);
      t.phase_medians["read_s"] = 1.5;
      t.antagonists = {Storage(1000.0 * 1024 * 1024)};
      trials.push_back(t);
    }
  }
  TrialRecord failed = Trial(index++, "storage@0.5", 100, TrialState::kFailed);
  trials.push_back(failed);
  TrialRecord flagged = Trial(index++, "storage@0.5", 50, TrialState::kFlagged);
  flagged.antagonists = {Storage(10, false)};
  trials.push_back(flagged);
  TrialRecord pair = Trial(index++, "membw@1+storage@2GiB/s", 3.0);
  AntagonistResult m;
  m.name = "membw";
  m.injector = "memcpy";
  m.level = 1;
  m.target_rate = 10e9;
  m.achieved_rate = 9e9;
  m.unit = "bytes/s";
  AntagonistResult s = Storage(2.0 * 1024 * 1024 * 1024);
  s.level = 0;
  s.target_rate = 2.0 * 1024 * 1024 * 1024;
  pair.antagonists = {s, m};
  trials.push_back(pair);
  std::reverse(trials.begin(), trials.end());  // Summarize must order by index itself
  return trials;
}

ExperimentRecord Record() {
  ExperimentRecord e;
  e.id = "e1";
  e.name = "io-vs-loader";
  e.seed = 42;
  return e;
}

TEST(SummarizeTest, SlowdownCountsAndPhases) {
  ExperimentResults r = Summarize(Record(), Synthetic());
  ASSERT_EQ(r.pairings.size(), 3u);
  const PairingSummary& b = r.pairings[0];
  EXPECT_TRUE(b.baseline);
  EXPECT_EQ(b.pairing, "baseline");
  EXPECT_EQ(b.n, 6);
  EXPECT_DOUBLE_EQ(b.median_metric_s, 1.0);
  EXPECT_DOUBLE_EQ(b.slowdown, 1.0);
  EXPECT_TRUE(std::isnan(b.ci_low));
  EXPECT_TRUE(std::isnan(b.p_value));
  EXPECT_FALSE(r.noisy_baseline);
  EXPECT_NEAR(r.baseline_cov, CoefficientOfVariation({1.00, 1.01, 0.99, 1.02, 0.98, 1.00}), 1e-12);

  const PairingSummary& s = r.pairings[1];
  EXPECT_EQ(s.pairing, "storage@0.5");
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(s.n_failed, 1);
  EXPECT_EQ(s.n_flagged, 1);
  EXPECT_DOUBLE_EQ(s.median_metric_s, 2.0);
  EXPECT_DOUBLE_EQ(s.slowdown, 2.0);
  EXPECT_LE(s.ci_low, 2.0);
  EXPECT_GE(s.ci_high, 2.0);
  EXPECT_GT(s.ci_low, 1.9);
  EXPECT_LT(s.ci_high, 2.1);
  EXPECT_LT(s.p_value, 0.01);
  EXPECT_EQ(s.p_method, MannWhitneyMethod::kNormal);  // the baseline has a tie (1.00 twice)
  ASSERT_EQ(s.phases.size(), 2u);  // in pipeline order (phase_order.h): read before compute
  EXPECT_EQ(s.phases[0].phase, "read_s");
  EXPECT_DOUBLE_EQ(s.phases[0].slowdown, 3.0);  // 1.5 / median(base / 2) = 1.5 / 0.5
  EXPECT_EQ(s.phases[1].phase, "compute_s");
  EXPECT_DOUBLE_EQ(s.phases[1].slowdown, 1.0);
  ASSERT_EQ(s.antagonists.size(), 1u);
  const AntagonistSummary& a = s.antagonists[0];
  EXPECT_EQ(a.name, "storage");
  EXPECT_EQ(a.injector, "io_uring");
  EXPECT_EQ(a.intensity, "0.5");
  EXPECT_DOUBLE_EQ(a.level, 0.5);
  EXPECT_DOUBLE_EQ(a.achieved_rate, 1000.0 * 1024 * 1024);  // the flagged trial's 10 B/s excluded
  EXPECT_DOUBLE_EQ(a.target_rate, 1024.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(a.achieved_cov, 0.05);
  EXPECT_EQ(a.n_missed_target, 1);

  const PairingSummary& p = r.pairings[2];
  EXPECT_EQ(p.pairing, "membw@1+storage@2GiB/s");
  EXPECT_EQ(p.n, 1);
  EXPECT_DOUBLE_EQ(p.slowdown, 3.0);
  ASSERT_EQ(p.antagonists.size(), 2u);
  EXPECT_EQ(p.antagonists[0].name, "membw");
  EXPECT_EQ(p.antagonists[0].intensity, "1");
  EXPECT_EQ(p.antagonists[1].name, "storage");
  EXPECT_EQ(p.antagonists[1].intensity, "2GiB/s");
}

// A run on gpusim's stand-in says so (issue 49's honest labels): the provenance's node GPU
// labels carry gpu_device, and the table's footer and the JSON repeat it. Hardware says nothing.
TEST(SummarizeTest, SimulatedGpusAreSaidInTheTableAndTheJson) {
  ExperimentRecord e = Record();
  e.provenance_json =
      "{\"nodes\":{\"n1\":{\"gpu\":{\"gpu_count\":\"2\",\"gpu_device\":\"simulated (gpusim)\"}},"
      "\"n2\":{\"gpu\":{\"gpu_count\":\"0\"}}}}";
  const ExperimentResults r = Summarize(e, Synthetic());
  EXPECT_EQ(r.gpu_device, "simulated (gpusim)");
  EXPECT_NE(FormatTable(r, /*wide=*/true).find("device: simulated (gpusim)"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(FormatJson(r))["gpu_device"], "simulated (gpusim)");
  e.provenance_json = "{\"nodes\":{\"n1\":{\"gpu\":{\"gpu_device\":\"hardware\"}}}}";
  const ExperimentResults hw = Summarize(e, Synthetic());
  EXPECT_EQ(hw.gpu_device, "");
  EXPECT_EQ(FormatTable(hw, /*wide=*/true).find("device:"), std::string::npos);
  EXPECT_TRUE(nlohmann::json::parse(FormatJson(hw))["gpu_device"].is_null());
}

TEST(SummarizeTest, DeterministicAndNoisyBaseline) {
  auto a = Summarize(Record(), Synthetic(), 0.001);
  auto b = Summarize(Record(), Synthetic(), 0.001);
  EXPECT_EQ(a.pairings[1].ci_low, b.pairings[1].ci_low);
  EXPECT_EQ(a.pairings[1].ci_high, b.pairings[1].ci_high);
  EXPECT_TRUE(a.noisy_baseline);
  EXPECT_NE(FormatTable(a).find("warning: noisy baseline: CoV 1.4% > 0.1%"), std::string::npos)
      << FormatTable(a);
}

TEST(SummarizeTest, NoBaseline) {
  std::vector<TrialRecord> trials = {Trial(0, "storage@0.5", 2.0)};
  auto r = Summarize(Record(), trials);
  ASSERT_EQ(r.pairings.size(), 1u);
  EXPECT_TRUE(std::isnan(r.pairings[0].slowdown));
  EXPECT_NE(FormatTable(r).find("warning: no measured baseline trials"), std::string::npos);
  EXPECT_NO_THROW(nlohmann::json::parse(FormatJson(r)));
}

TEST(FormatTest, WideTable) {
  std::string t = FormatTable(Summarize(Record(), Synthetic()), /*wide=*/true);
  for (const char* s : {"pairing", "levels", "median", "slowdown [CI]", "achieved", "baseline",
                        "storage@0.5", "storage=0.5", "2.00x [", "1000.00 MiB/s (98% of target)",
                        "phases: read 3.00x, compute 1.00x",
                        "warning: 1 failed, 1 flagged (target missed, did not settle, too short "
                        "to judge, or metric looks wrong); excluded",
                        "membw=1 storage=2GiB/s"}) {
    EXPECT_NE(t.find(s), std::string::npos) << "missing '" << s << "' in\n" << t;
  }
}

// The default table fits 120 columns: the figures a slowdown is judged by, prose wrapped; the
// rest is -o wide's.
TEST(FormatTest, NarrowTableFits120Columns) {
  const std::string t = FormatTable(Summarize(Record(), Synthetic()));
  std::istringstream lines(t);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 120u) << "'" << line << "' in\n" << t;
  }
  const size_t header = t.find("\npairing ");
  ASSERT_NE(header, std::string::npos) << t;
  const std::string header_line = t.substr(header + 1, t.find('\n', header + 1) - header - 1);
  for (const char* column :
       {"n", "elapsed", "slowdown [CI]", "p [Holm]", "flagged", "achieved (% of target)"}) {
    EXPECT_NE(header_line.find(column), std::string::npos) << column << " in " << header_line;
  }
  for (const char* wide_only : {"levels", "all trials [CI]", "cores", "mde"}) {
    EXPECT_EQ(header_line.find(wide_only), std::string::npos) << wide_only;
  }
  EXPECT_NE(t.find("1000.00 MiB/s (98%)"), std::string::npos) << t;
  EXPECT_NE(t.find("phases: read 3.00x, compute 1.00x"), std::string::npos) << t;
  EXPECT_NE(t.find("-o wide adds levels"), std::string::npos) << t;
  // A wrapped warning goes on under its own indent.
  EXPECT_NE(t.find("\n        "), std::string::npos) << t;
}

TEST(FormatTest, PhaseSummaryIsOneRowPerPairingAndPhase) {
  const TidyTable t = PhaseSummaryTable(Summarize(Record(), Synthetic()));
  EXPECT_EQ(t.columns,
            (std::vector<std::string>{"experiment_id", "pairing", "baseline", "n", "phase",
                                      "median_s", "baseline_median_s", "slowdown", "on_path",
                                      "feeds", "mean_s", "baseline_mean_s", "near_zero", "added_s",
                                      "added_ci_low", "added_ci_high"}));
  const std::string csv = RenderCsv(t);
  // read_s 3x, off the step's path (these trials have no per-step series: no added time)
  EXPECT_NE(csv.find("\ne1,storage@0.5,0,5,read_s,1.5,0.5,3,0,data_wait_s,,,0,,,\n"),
            std::string::npos)
      << csv;
  for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.columns.size());
}

TEST(FormatTest, Csv) {
  std::string csv = FormatCsv(Summarize(Record(), Synthetic()));
  const std::string header =
      "experiment_id,pairing,baseline,n,n_flagged,n_failed,n_not_run,metric_cov,"
      "slowdown,ci_low,ci_high,p_value,p_method,antagonist,injector,intensity,intensity_kind,"
      "level,target_rate,achieved_rate,achieved_cov,unit,n_missed_target,metric,metric_unit,"
      "metric_median,n_all,flag_rate,slowdown_all,ci_all_low,ci_all_high,max,cores,cpus,"
      "victim_cores,victim_cpus,p_holm,q_bh,p_min,ci_exact,mde,stop_reason\n";
  ASSERT_EQ(csv.rfind(header, 0), 0u) << csv;
  // baseline, storage@0.5, and the pair's two antagonists: 4 rows.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_NE(csv.find("\ne1,storage@0.5,0,5,1,1,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",storage,io_uring,0.5,level,0.5,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",storage,io_uring,2GiB/s,rate,,"), std::string::npos)
      << "a rate has no level: " << csv;
  EXPECT_NE(csv.find("\ne1,baseline,1,6,0,0,0,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("median_metric_s"), std::string::npos) << "metric_median says it once";
  EXPECT_EQ(csv.find(";compute_s="), std::string::npos) << "no packed cells";
}

TEST(FormatTest, CsvMaxHasNoLevel) {
  ExperimentResults r = Summarize(Record(), Synthetic());
  AntagonistSummary& a = r.pairings[1].antagonists[0];
  a.max = true;
  a.intensity = "max";
  a.level = 1;
  const std::string csv = FormatCsv(r);
  EXPECT_NE(csv.find(",storage,io_uring,max,max,,"), std::string::npos) << csv;
  const auto j = nlohmann::json::parse(FormatJson(r));
  EXPECT_EQ(j["pairings"][1]["antagonists"][0]["intensity_kind"], "max");
  EXPECT_TRUE(j["pairings"][1]["antagonists"][0]["level"].is_null());
}

TEST(FormatTest, Json) {
  auto j = nlohmann::json::parse(FormatJson(Summarize(Record(), Synthetic())));
  EXPECT_EQ(j["experiment_id"], "e1");
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["bootstrap_resamples"], 10000);
  ASSERT_EQ(j["pairings"].size(), 3u);
  const auto& b = j["pairings"][0];
  EXPECT_TRUE(b["ci_low"].is_null());
  EXPECT_TRUE(b["p_method"].is_null());
  const auto& s = j["pairings"][1];
  for (const char* k : {"pairing", "baseline", "n", "n_flagged", "n_failed", "n_not_run",
                        "median_metric_s", "metric_cov", "slowdown", "ci_low", "ci_high", "p_value",
                        "p_method", "phases", "antagonists"}) {
    EXPECT_TRUE(s.contains(k)) << k;
  }
  EXPECT_EQ(s["pairing"], "storage@0.5");
  EXPECT_DOUBLE_EQ(s["slowdown"].get<double>(), 2.0);
  EXPECT_EQ(s["p_method"], "normal");
  EXPECT_EQ(s["phases"][0]["phase"], "read_s");
  EXPECT_DOUBLE_EQ(s["phases"][0]["slowdown"].get<double>(), 3.0);
  const auto& a = s["antagonists"][0];
  for (const char* k : {"name", "injector", "intensity", "level", "target_rate", "achieved_rate",
                        "achieved_cov", "unit", "n_missed_target"}) {
    EXPECT_TRUE(a.contains(k)) << k;
  }
  EXPECT_EQ(a["n_missed_target"], 1);
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TEST(SmallSampleHonesty, NoIntervalBelowThreeTrialsAndTheSmallestPIsSaid) {
  std::vector<TrialRecord> trials = {Trial(0, "baseline", 1.0), Trial(1, "storage@0.5", 1.54)};
  trials[1].antagonists = {Storage(1000.0 * 1024 * 1024)};
  ExperimentResults r = Summarize(Record(), trials);
  const PairingSummary& p = r.pairings[1];
  EXPECT_TRUE(p.ci_small_n);
  EXPECT_TRUE(std::isnan(p.ci_low)) << "a zero-width interval from one trial is not reported";
  EXPECT_DOUBLE_EQ(p.p_min, 1.0);
  const std::string t = FormatTable(r);
  EXPECT_NE(t.find("1.54x [n/a: n < 3]"), std::string::npos) << t;
  EXPECT_NE(t.find("p cannot fall below 1: no outcome could be significant at 5%"),
            std::string::npos)
      << t;
}

TEST(MultipleComparisonsInResults, HolmAndBhAcrossThePairings) {
  ExperimentResults r = Summarize(Record(), Synthetic());
  std::vector<double> raw;
  for (const auto& p : r.pairings) raw.push_back(p.p_value);
  const std::vector<double> holm = HolmAdjust(raw);
  for (size_t i = 0; i < r.pairings.size(); ++i) {
    const auto& p = r.pairings[i];
    if (p.baseline) {
      EXPECT_TRUE(std::isnan(p.p_holm));
      continue;
    }
    EXPECT_DOUBLE_EQ(p.p_holm, holm[i]);
    EXPECT_GE(p.p_holm, p.p_value);
    EXPECT_GE(p.p_holm, p.q_bh);
  }
  // 5 slow trials against 6 baselines: exact p 2/462, Holm over 2 pairings doubles it at most.
  EXPECT_NE(FormatTable(r).find("p [Holm]"), std::string::npos);
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TEST(NothingMeasuredTest, SaysWhyWhenNothingWasMeasured) {
  ExperimentRecord e;
  e.id = "e1";
  EXPECT_EQ(NothingMeasured(Summarize(e, Synthetic())), "");
  // Every trial failed.
  std::vector<TrialRecord> failed = {Trial(0, "baseline", 0, TrialState::kFailed),
                                     Trial(1, "storage@0.5", 0, TrialState::kFailed),
                                     Trial(2, "storage@0.5", 0, TrialState::kCancelled)};
  EXPECT_EQ(NothingMeasured(Summarize(e, failed)),
            "none of its 3 trials was measured (2 failed, 1 not run)");
  // Interfered trials measured, but no baseline: no slowdown exists.
  std::vector<TrialRecord> no_base = {Trial(0, "baseline", 0, TrialState::kFailed),
                                      Trial(1, "storage@0.5", 2), Trial(2, "storage@0.5", 2.1)};
  EXPECT_EQ(NothingMeasured(Summarize(e, no_base)),
            "no baseline trial was measured, so no slowdown is known");
  // Interfered trials all flagged: their slowdown over all trials is still a figure.
  std::vector<TrialRecord> flagged = {Trial(0, "baseline", 1), Trial(1, "baseline", 1.1),
                                      Trial(2, "storage@0.5", 2, TrialState::kFlagged)};
  EXPECT_EQ(NothingMeasured(Summarize(e, flagged)), "");
  // A baseline-only experiment that measured its baseline measured what it set out to.
  std::vector<TrialRecord> base_only = {Trial(0, "baseline", 1), Trial(1, "baseline", 1.1)};
  EXPECT_EQ(NothingMeasured(Summarize(e, base_only)), "");
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TEST(FailedTrialsTest, TheTableSaysWhyEachFailedWithTheVictimsStderrAndAHint) {
  ExperimentRecord e;
  e.id = "e1";
  std::vector<TrialRecord> trials = Synthetic();
  TrialRecord torch = Trial(20, "baseline", 0, TrialState::kFailed);
  torch.error = "victim exited with status 1";
  torch.stderr_tail =
      "Traceback (most recent call last):\n  File \"plain_train.py\", line 3\n"
      "ModuleNotFoundError: No module named 'torch'\n";
  trials.push_back(torch);
  const ExperimentResults r = Summarize(e, trials);
  ASSERT_EQ(r.failed_trials.size(), 2u);
  EXPECT_EQ(r.failed_trials[1].reason,
            "victim exited with status 1: ModuleNotFoundError: No module named 'torch'");
  const std::string table = FormatTable(r);
  EXPECT_NE(table.find("failed trials (2):\n"), std::string::npos) << table;
  EXPECT_NE(table.find("    trial 21 baseline: victim exited with status 1: ModuleNotFoundError: "
                       "No module named 'torch'\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("hint: a Python module is missing for the victim's interpreter"),
            std::string::npos)
      << table;
  const auto j = nlohmann::json::parse(FormatJson(r));
  ASSERT_EQ(j["failed_trials"].size(), 2u);
  EXPECT_EQ(j["failed_trials"][1]["trial"], 21) << "numbered from 1, as the table says";
  EXPECT_EQ(j["failed_trials"][1]["trial_index"], 20);
}

TEST(FailedTrialsTest, StderrIsEscapedCappedAndNotRepeated) {
  EXPECT_EQ(FailureWithStderr("exit 1", ""), "exit 1");
  EXPECT_EQ(FailureWithStderr("exit 1", "\n\n  \n"), "exit 1");
  EXPECT_EQ(FailureWithStderr("exit 1: boom", "boom\n"), "exit 1: boom") << "already said";
  EXPECT_EQ(FailureWithStderr("exit 1", "\x1b[2Jwiped\n"), "exit 1: \\x1B[2Jwiped");
  const std::string line = FailureWithStderr("exit 1", std::string(5000, 'x'));
  EXPECT_LT(line.size(), 300u);
  EXPECT_NE(line.find("..."), std::string::npos);
  EXPECT_NE(FailureHint("sh: 1: plain_train.py: Permission denied").find("permission denied"),
            std::string::npos);
  EXPECT_NE(FailureHint("sh: 1: pyhton3: not found").find("not found"), std::string::npos);
  EXPECT_EQ(FailureHint("Segmentation fault"), "");
}

}  // namespace
}  // namespace codl::experiment

namespace codl::experiment {
namespace {

TEST(TidyTableTest, AlignedTableShowsWholeNumbersWhole) {
  TidyTable t;
  t.columns = {"trial", "started_unix_ms", "value"};
  t.rows.push_back({Cell::Int(3), Cell::Int(1796083200123), Cell::Number(0.1234567)});
  const std::string text = RenderAligned(t);
  EXPECT_EQ(text.find("e+12"), std::string::npos) << text;
  EXPECT_NE(text.find("0.123457"), std::string::npos) << text;
  // A `_unix_ms` column is a time: ISO 8601 in a table, the number in CSV and JSON.
  EXPECT_NE(text.find("started "), std::string::npos) << text;
  EXPECT_EQ(text.find("started_unix_ms"), std::string::npos) << text;
  EXPECT_NE(text.find("2026-12-01T00:00:00.123Z"), std::string::npos) << text;
  EXPECT_NE(RenderCsv(t).find(",1796083200123,"), std::string::npos) << RenderCsv(t);
  EXPECT_NE(RenderJsonLines(t).find("\"started_unix_ms\":1796083200123"), std::string::npos);
}

TEST(UnitsTest, FormatUtcMsIsIso8601) {
  EXPECT_EQ(FormatUtcMs(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatUtcMs(1796083200123), "2026-12-01T00:00:00.123Z");
  EXPECT_EQ(FormatUtcMs(-1), "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace codl::experiment
