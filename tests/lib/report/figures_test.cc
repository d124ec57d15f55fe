// The figures (issue 14 item 3): pipeline-ordered phase bars with CIs and the small phases
// grouped, pairings sorted, significance from the Holm-adjusted p, a colour scale covering the
// data, calibrated peak and CPU shown, and the standalone SVG + CSV files of --figures.
#include "lib/report/figures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/analysis/pairing_order.h"
#include "lib/analysis/results.h"
#include "lib/report/charts.h"
#include "lib/report/report.h"
#include "lib/report/svg.h"
#include "tests/lib/report/synthetic.h"

namespace codl::report {
namespace {

namespace fs = std::filesystem;
using experiment::ExperimentResults;
using testing::MakeSynthetic;
using testing::SyntheticOptions;

testing::Synthetic Pipeline() {
  SyntheticOptions o;
  o.jitter = 0.04;
  o.pipeline = true;
  o.combined = true;
  return MakeSynthetic(o);
}

ExperimentResults Summary(const testing::Synthetic& s) {
  return experiment::Summarize(s.experiment, s.trials);
}

std::vector<std::vector<std::string>> CsvRows(const std::string& csv) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream cs(line);
    while (std::getline(cs, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

size_t Column(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  ADD_FAILURE() << "no column " << name;
  return 0;
}

// Where the step time went: stacked on-path phases in pipeline order (h2d + comm, under 1 % of
// the step, together), the untimed rest on top, read_s (overlapped) not stacked; the CSV holds
// every phase's added time with its CI, and the matrix the same beside read's own slowdown.
TEST(FiguresTest, StackedPhasesInPipelineOrderWithAddedTimeAndCIs) {
  const auto s = Pipeline();
  const auto results = Summary(s);
  const Figure f = PhaseFigure(results, s.trials);
  ASSERT_FALSE(f.svg.empty());
  EXPECT_LT(f.svg.find(">data_wait</text>"), f.svg.find(">compute</text>"));
  EXPECT_LT(f.svg.find(">compute</text>"), f.svg.find(">other (&lt; 1 %)</text>"));
  EXPECT_LT(f.svg.find(">other (&lt; 1 %)</text>"), f.svg.find(">untimed</text>"));
  EXPECT_EQ(f.svg.find(">read</text>"), std::string::npos);  // not part of the step
  EXPECT_NE(f.svg.find("data-phase=\"h2d_s;comm_s\""), std::string::npos);
  const auto rows = CsvRows(f.csv);
  const auto& h = rows.front();
  bool saw_read = false, saw_wait = false;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    EXPECT_EQ(row[Column(h, "n")], "5");
    if (row[0] == "baseline") {
      EXPECT_EQ(row[Column(h, "added_s")], "") << row[1];
      continue;
    }
    const std::string phase = row[Column(h, "phase")];
    if (phase == "untimed") continue;
    // Every interfered phase has a bootstrap CI around its added time (5 trials a side).
    const double added = std::stod(row[Column(h, "added_s")]);
    ASSERT_FALSE(row[Column(h, "added_ci_low")].empty()) << row[0] << " " << phase;
    EXPECT_LE(std::stod(row[Column(h, "added_ci_low")]), added + 1e-9);
    EXPECT_GE(std::stod(row[Column(h, "added_ci_high")]), added - 1e-9);
    if (row[0] == "storage@1" && phase == "read_s") {
      saw_read = true;
      EXPECT_EQ(row[Column(h, "on_path")], "false");
      EXPECT_EQ(row[Column(h, "feeds")], "data_wait_s");
      EXPECT_NEAR(std::stod(row[Column(h, "slowdown")]), 4.5, 0.4);
    }
    if (row[0] == "storage@1" && phase == "data_wait_s") {
      saw_wait = true;  // 30 % of a step 2.4x the baseline's 1 s
      EXPECT_NEAR(added, 0.3 * 1.4, 0.05);
      EXPECT_EQ(row[Column(h, "significant")], "true");
    }
  }
  EXPECT_TRUE(saw_read && saw_wait) << f.csv;
  const std::string matrix = PhaseMatrix(results);
  EXPECT_NE(matrix.find(">read (overlapped)</th>"), std::string::npos) << matrix;
  EXPECT_NE(matrix.find("<tr data-matrix-pairing=\"storage@1\">"), std::string::npos) << matrix;
  EXPECT_EQ(matrix.find("<tr data-matrix-pairing=\"baseline\">"), std::string::npos) << matrix;
  EXPECT_NE(matrix.find("class=\"significant\""), std::string::npos) << matrix;
}

TEST(FiguresTest, PhaseBarsWithoutEnoughTrialsHaveNoCI) {
  SyntheticOptions o;
  o.repetitions = 2;
  const auto s = MakeSynthetic(o);
  const auto rows = CsvRows(PhaseFigure(Summary(s), s.trials).csv);
  ASSERT_GT(rows.size(), 1u);
  for (size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r][Column(rows[0], "added_ci_low")], "") << rows[r][0];
  }
}

TEST(FiguresTest, NoStepSeriesNoPhaseFigure) {
  SyntheticOptions o;
  o.steps = false;
  const auto s = MakeSynthetic(o);
  EXPECT_TRUE(PhaseFigure(Summary(s), s.trials).svg.empty());
  EXPECT_EQ(PhaseMatrix(Summary(s)), "");
}

// Trials run 0.5 before 0.25, storage before membw; every figure and table lists them sorted.
TEST(FiguresTest, PairingsSortedByAntagonistThenIntensityCombinationsLast) {
  auto s = Pipeline();
  for (auto& t : s.trials) {
    if (t.pairing == "membw@1") t.pairing = "membw@0.25";
  }
  std::stable_sort(s.trials.begin(), s.trials.end(), [](const auto& a, const auto& b) {
    return a.pairing > b.pairing;  // reverse: storage, membw@1+..., membw@0.5, membw@0.25
  });
  const auto results = Summary(s);
  const std::vector<std::string> want = {"membw@0.25", "membw@0.5", "storage@0.5", "storage@1",
                                         "membw@1+storage@1"};
  auto order = [&](const std::string& text, const std::string& prefix) {
    std::vector<size_t> at;
    for (const auto& k : want) at.push_back(text.find(prefix + k + "\""));
    for (size_t i = 0; i < at.size(); ++i) {
      EXPECT_NE(at[i], std::string::npos) << want[i];
      if (i) {
        EXPECT_LT(at[i - 1], at[i]) << want[i - 1] << " before " << want[i];
      }
    }
  };
  const std::string html = RenderHtmlReport(s.experiment, s.trials, results);
  order(html.substr(html.find("<table class=\"pairings\"")), "<tr data-pairing=\"");
  order(HeatmapFigure(results).svg, "data-pairing=\"");
  order(PhaseFigure(results, s.trials).svg, "class=\"bar\" data-pairing=\"");
  const std::string table = experiment::FormatTable(results);
  std::vector<size_t> at;
  for (const auto& k : want) at.push_back(table.find("\n" + k + " "));
  for (size_t i = 1; i < at.size(); ++i) EXPECT_LT(at[i - 1], at[i]) << want[i];
}

experiment::PairingSummary Single(const std::string& name, const std::string& intensity) {
  experiment::PairingSummary p;
  p.pairing = name + "@" + intensity;
  experiment::AntagonistSummary a;
  a.name = name;
  a.intensity = intensity;
  a.max = intensity == "max";
  p.antagonists.push_back(a);
  return p;
}

TEST(FiguresTest, IntensitiesSortNumericallyLevelsThenRatesThenMax) {
  experiment::ExperimentResults r;
  for (const char* i : {"max", "2GiB/s", "1", "512MiB/s", "0.5", "0.25"}) {
    r.pairings.push_back(Single("io", i));
  }
  experiment::PairingSummary base;
  base.pairing = "baseline";
  base.baseline = true;
  r.pairings.push_back(base);
  std::vector<std::string> keys;
  for (const auto* p : experiment::SortedPairings(r)) keys.push_back(p->pairing);
  EXPECT_EQ(keys, (std::vector<std::string>{"baseline", "io@0.25", "io@0.5", "io@1", "io@512MiB/s",
                                            "io@2GiB/s", "io@max"}));
}

// `max` is drawn where it was measured: at its achieved fraction of the calibrated peak (0.7
// here), not at level 1 -- an open loop has no requested level.
TEST(FiguresTest, MaxIsDrawnAtItsAchievedIntensity) {
  experiment::ExperimentResults r;
  experiment::PairingSummary base;
  base.pairing = "baseline";
  base.baseline = true;
  base.n = 5;
  base.slowdown = 1;
  base.median_metric_s = 1;
  r.pairings.push_back(base);
  std::vector<TrialRecord> trials;
  const struct {
    const char* intensity;
    double achieved, slowdown;
  } singles[] = {{"0.5", 5e9, 1.2}, {"max", 7e9, 1.5}};
  for (const auto& s : singles) {
    experiment::PairingSummary p = Single("membw", s.intensity);
    p.n = 5;
    p.slowdown = s.slowdown;
    p.ci_low = s.slowdown - 0.05;
    p.ci_high = s.slowdown + 0.05;
    p.antagonists[0].injector = "memcpy";
    p.antagonists[0].unit = "bytes/s";
    p.antagonists[0].achieved_rate = s.achieved;
    r.pairings.push_back(p);
    TrialRecord t;
    t.pairing = p.pairing;
    t.state = TrialState::kDone;
    AntagonistResult a;
    a.name = "membw";
    a.achieved_rate = s.achieved;
    a.peak_rate = 1e10;
    t.antagonists.push_back(a);
    trials.push_back(t);
  }
  const SensitivitySet set = SensitivityFigures(r, trials);
  ASSERT_EQ(set.charts.size(), 1u);
  const auto rows = CsvRows(set.charts[0].csv);
  ASSERT_EQ(rows.size(), 3u);
  const size_t pairing = Column(rows[0], "pairing"), x = Column(rows[0], "x");
  EXPECT_EQ(rows[2][pairing], "membw@max");
  EXPECT_NEAR(std::stod(rows[2][x]), 0.7, 1e-12);
  EXPECT_EQ(rows[2][Column(rows[0], "x_unit")], "fraction of peak");
  EXPECT_NE(set.charts[0].svg.find("achieved 6.52 GiB/s (70.0% of peak)"), std::string::npos)
      << set.charts[0].svg;
}

// p below 0.05 but the Holm-adjusted p not: not significant, hatched, no star.
TEST(FiguresTest, SignificanceFollowsTheAdjustedPValue) {
  const auto s = Pipeline();
  auto results = Summary(s);
  for (auto& p : results.pairings) {
    if (p.pairing == "membw@0.5") p.p_value = 0.01, p.p_holm = 0.06;
    if (p.pairing == "storage@1") p.p_value = 0.004, p.p_holm = 0.02;
  }
  const Figure heat = HeatmapFigure(results);
  EXPECT_NE(heat.svg.find("data-pairing=\"membw@0.5\" data-significant=\"false\""),
            std::string::npos);
  EXPECT_NE(heat.svg.find("data-pairing=\"storage@1\" data-significant=\"true\""),
            std::string::npos);
  EXPECT_NE(heat.svg.find("class=\"ns-legend\""), std::string::npos);
  EXPECT_NE(heat.svg.find(">not significant</text>"), std::string::npos);
  // The hatched cell is grey whatever its slowdown; the significant one is coloured.
  const size_t ns = heat.svg.find("data-pairing=\"membw@0.5\"");
  EXPECT_NE(heat.svg.find("fill=\"#efefef\"", ns), std::string::npos);
  EXPECT_LT(heat.svg.find("fill=\"#efefef\"", ns), heat.svg.find("</g>", ns));
  EXPECT_NE(heat.csv.find("membw@0.5,membw,0.5,"), std::string::npos);
  EXPECT_NE(heat.csv.find(",0.01,0.06,false\n"), std::string::npos);
  EXPECT_NE(heat.csv.find(",0.004,0.02,true\n"), std::string::npos);

  const std::string html = RenderHtmlReport(s.experiment, s.trials, results);
  const size_t ns_row = html.find("<tr data-pairing=\"membw@0.5\"");
  const size_t sig_row = html.find("<tr data-pairing=\"storage@1\"");
  EXPECT_EQ(html.substr(ns_row, html.find("</tr>", ns_row) - ns_row).find("class=\"sig\""),
            std::string::npos);
  EXPECT_NE(html.substr(sig_row, html.find("</tr>", sig_row) - sig_row).find("class=\"sig\""),
            std::string::npos);
}

TEST(FiguresTest, SmallSamplesAreNeverSignificant) {
  experiment::PairingSummary p;
  p.n = 2;
  p.p_holm = 0.001;
  p.ci_small_n = true;
  EXPECT_FALSE(Significant(p));
  p.n = 5;
  p.ci_small_n = false;
  EXPECT_TRUE(Significant(p));
  p.p_holm = std::nan("");
  EXPECT_FALSE(Significant(p));
}

TEST(FiguresTest, ColourBarCoversTheLargestCell) {
  const auto s = Pipeline();
  auto results = Summary(s);
  double largest = 0;
  for (auto& p : results.pairings) {
    if (p.pairing == "storage@1") p.slowdown = 3.37;
    if (!p.baseline) largest = std::max(largest, p.slowdown);
  }
  const std::string svg = HeatmapFigure(results).svg;
  const std::string attr = "class=\"colour-bar\" data-max=\"";
  const size_t at = svg.find(attr);
  ASSERT_NE(at, std::string::npos);
  const double max = std::stod(svg.substr(at + attr.size()));
  EXPECT_GE(max, largest);
  EXPECT_LT(max, largest * 1.5);  // and not so far above that the colours wash out
  // Its top is labelled: the last tick of the bar is the maximum.
  const std::string bar = svg.substr(at, svg.find("class=\"axis-title\"", at) - at);
  EXPECT_NE(bar.find(">" + Slowdown(max) + "</text>"), std::string::npos) << bar;
}

TEST(FiguresTest, CalibratedPeakAndAntagonistCpuAreShown) {
  const auto s = Pipeline();
  const auto results = Summary(s);
  const SensitivitySet curves = SensitivityFigures(results, s.trials);
  ASSERT_EQ(curves.charts.size(), 2u);
  EXPECT_EQ(curves.charts[0].name, "sensitivity-membw");
  EXPECT_NE(curves.charts[0].svg.find("calibrated peak 18.63 GiB/s \u00b7 0.50 CPU cores"),
            std::string::npos)
      << curves.charts[0].svg.substr(0, 1200);
  EXPECT_NE(curves.charts[0].caption.find("calibrated peak"), std::string::npos);
  const auto rows = CsvRows(curves.charts[0].csv);
  EXPECT_EQ(rows[1][Column(rows[0], "peak_rate")], "2e+10");
  EXPECT_EQ(rows[1][Column(rows[0], "cores")], "0.5");
  const std::string html = RenderHtmlReport(s.experiment, s.trials, results);
  EXPECT_NE(html.find("&middot; calibrated peak 18.63 GiB/s"), std::string::npos);
}

// The baseline line is the baseline's step time (1 s here), not its metric (the elapsed time of
// 40 steps), and its label sits in the legend.
TEST(FiguresTest, StepSeriesLabelsTheBaselineInTheLegendNotOnTheData) {
  SyntheticOptions o;
  o.pipeline = true;
  const auto s = MakeSynthetic(o);
  const Figure f = StepSeriesFigure(Summary(s), s.trials);
  ASSERT_FALSE(f.svg.empty());
  EXPECT_NE(f.svg.find("class=\"legend\">baseline median 1.00 s</text>"), std::string::npos)
      << f.svg.substr(0, 3000);
  EXPECT_EQ(f.svg.find("text-anchor=\"end\">baseline median"), std::string::npos);
  EXPECT_NE(f.csv.find("trial,series,t_s,value,target,unit,warmup\n"), std::string::npos);
  EXPECT_NE(f.csv.find(",storage achieved,"), std::string::npos);
}

TEST(FiguresTest, StandaloneFilesWithTheirData) {
  const auto s = Pipeline();
  const auto files = RenderFigures(Summary(s), s.trials);
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"heatmap", "sensitivity-membw", "sensitivity-storage",
                                             "phases", "step-series"}));
  for (const auto& f : files) {
    EXPECT_EQ(
        f.svg.rfind(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"",
            0),
        0u)
        << f.name;
    EXPECT_NE(f.svg.find("<style>"), std::string::npos) << f.name;
    EXPECT_NE(f.svg.find("font-family: sans-serif"), std::string::npos) << f.name;
    EXPECT_EQ(f.svg.find("url("), std::string::npos) << f.name;
    EXPECT_EQ(f.svg.find("href"), std::string::npos) << f.name;
    EXPECT_EQ(f.svg.find("nan"), std::string::npos) << f.name;
    EXPECT_GT(CsvRows(f.csv).size(), 1u) << f.name;
  }
  EXPECT_EQ(CsvRows(files[0].csv).size(), 6u);  // header + 5 interference pairings
}

class WriteFiguresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "codl_figures_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(WriteFiguresTest, CreatesTheDirectoryAndWritesStableNames) {
  const auto s = Pipeline();
  const fs::path out = dir_ / "a" / "figures";
  auto written = WriteFigures(out.string(), RenderFigures(Summary(s), s.trials));
  ASSERT_TRUE(written.ok()) << written.error();
  EXPECT_EQ(written->size(), 10u);
  for (const char* name :
       {"heatmap", "sensitivity-membw", "sensitivity-storage", "phases", "step-series"}) {
    EXPECT_TRUE(fs::is_regular_file(out / (std::string(name) + ".svg"))) << name;
    EXPECT_TRUE(fs::is_regular_file(out / (std::string(name) + ".csv"))) << name;
  }
  std::ifstream in(out / "heatmap.csv");
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "pairing,antagonists,intensity,slowdown,ci_low,ci_high,n,p_value,p_holm,"
            "significant");
  // Again into the same directory: overwritten, not refused.
  EXPECT_TRUE(WriteFigures(out.string(), RenderFigures(Summary(s), s.trials)).ok());
}

TEST_F(WriteFiguresTest, RefusesAFile) {
  const fs::path file = dir_ / "not-a-dir";
  std::ofstream(file) << "x";
  auto written = WriteFigures(file.string(), {{"heatmap", "<svg/>", "a\n"}});
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(written.error().find("not a directory"), std::string::npos);
}

TEST(FiguresTest, SameFileNameForTwoAntagonistsIsMadeUnique) {
  auto s = MakeSynthetic();
  for (auto& t : s.trials) {
    for (auto& a : t.antagonists) {
      if (a.name == "membw") a.name = "a/b";
      if (a.name == "storage") a.name = "a:b";
    }
    if (t.pairing.rfind("membw", 0) == 0) t.pairing.replace(0, 5, "a/b");
    if (t.pairing.rfind("storage", 0) == 0) t.pairing.replace(0, 7, "a:b");
  }
  std::vector<std::string> names;
  for (const auto& f : RenderFigures(Summary(s), s.trials)) names.push_back(f.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "sensitivity-a_b"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "sensitivity-a_b-2"), names.end());
}

}  // namespace
}  // namespace codl::report
