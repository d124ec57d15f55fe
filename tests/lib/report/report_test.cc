// RenderHtmlReport as text: the heatmap's cells and annotations, labels, escaping of user text,
// self-containment, and edge cases (no trials, baselines only, NaN, failures, one point).
#include "lib/report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>
#include <string>

#include "lib/analysis/results.h"
#include "tests/lib/report/synthetic.h"

namespace codl::report {
namespace {

using testing::MakeSynthetic;
using testing::SyntheticOptions;

std::string Render(const testing::Synthetic& s) {
  return RenderHtmlReport(s.experiment, s.trials, experiment::Summarize(s.experiment, s.trials));
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

std::set<std::string> CellPairings(const std::string& html) {
  std::set<std::string> keys;
  static const std::regex kCell(R"re(class="cell" data-pairing="([^"]*)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), kCell), end; it != end; ++it) {
    keys.insert((*it)[1]);
  }
  return keys;
}

// Every page, whatever its input, must be a complete, self-contained document without NaN.
void ExpectWellFormed(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(Count(html, "<svg"), Count(html, "</svg>"));
  EXPECT_EQ(Count(html, "<g"), Count(html, "</g>"));
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  static const std::regex kNaN(R"((^|[^A-Za-z])(nan|inf|infinity)([^A-Za-z]|$))",
                               std::regex::icase);
  std::smatch m;
  EXPECT_FALSE(std::regex_search(html, m, kNaN))
      << "non-finite number in the page near: "
      << html.substr(std::max<long>(0, m.position(0) - 80), 160);
}

TEST(ReportTest, HeatmapHasOneAnnotatedCellPerInterferencePairing) {
  const std::string html = Render(MakeSynthetic());
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 4u);
  EXPECT_EQ(CellPairings(html),
            (std::set<std::string>{"membw@0.5", "membw@1", "storage@0.5", "storage@1"}));
  for (const char* value : {"1.10\u00d7", "1.25\u00d7", "1.50\u00d7", "2.40\u00d7"}) {
    EXPECT_NE(html.find(std::string(">") + value + "</text>"), std::string::npos) << value;
  }
  // Identical trials per pairing: every bootstrap resample gives the same ratio.
  EXPECT_NE(html.find(">[1.50, 1.50]</text>"), std::string::npos);
  EXPECT_NE(html.find(">[2.40, 2.40]</text>"), std::string::npos);
  // n and p on hover (all values tied within each sample: the normal approximation).
  EXPECT_NE(html.find("n = 5 measured"), std::string::npos);
  EXPECT_NE(html.find("p = 0.004 (Mann-Whitney U, normal)"), std::string::npos);
}

TEST(ReportTest, LabelsAntagonistsAndLevels) {
  const std::string html = Render(MakeSynthetic());
  EXPECT_NE(html.find("class=\"row-label\" text-anchor=\"end\">membw</text>"), std::string::npos);
  EXPECT_NE(html.find("class=\"row-label\" text-anchor=\"end\">storage</text>"), std::string::npos);
  EXPECT_NE(html.find("class=\"col-label\" text-anchor=\"middle\">0.5</text>"), std::string::npos);
  EXPECT_NE(html.find("class=\"col-label\" text-anchor=\"middle\">1</text>"), std::string::npos);
  // Header: name, id, state, seed, counts.
  EXPECT_NE(html.find("<h1>resnet50 under membw + storage</h1>"), std::string::npos);
  EXPECT_NE(html.find("exp-0042"), std::string::npos);
  EXPECT_NE(html.find(">done</span>"), std::string::npos);
  EXPECT_NE(html.find("seed <b>7</b>"), std::string::npos);
  EXPECT_NE(html.find("done <b>25</b>"), std::string::npos);
}

TEST(ReportTest, DrawsAllFourChartsAndTheTable) {
  const std::string html = Render(MakeSynthetic());
  EXPECT_EQ(Count(html, "class=\"heatmap\""), 1u);
  EXPECT_EQ(Count(html, "class=\"curve\""), 2u);  // membw and storage
  EXPECT_NE(html.find("achieved intensity (% of calibrated peak)"), std::string::npos);
  EXPECT_EQ(Count(html, "class=\"phases\""), 1u);
  // 5 pairings, the baseline first, x {compute, untimed}: read_s runs beside the step.
  EXPECT_EQ(Count(html, "class=\"bar\""), 10u);
  EXPECT_NE(html.find("<td class=\"overlapped\">4.50\u00d7</td>"), std::string::npos);  // its read
  EXPECT_EQ(Count(html, "class=\"series\""), 1u);
  // The most-slowed pairing is storage@1; its first measured trial is #4.
  EXPECT_NE(html.find("Trial #5 (repetition 1) of <code>storage@1</code>"), std::string::npos)
      << "numbered from 1, as the progress and --trials number them";
  EXPECT_NE(html.find("storage on"), std::string::npos);
  EXPECT_NE(html.find("achieved (GiB/s)"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr data-pairing="), 4u);
  EXPECT_EQ(Count(html, "<tr class=\"baseline\" data-pairing=\"baseline\">"), 1u);
}

// victim.cache: the pairings table's notes say how much of the data was resident at the start.
TEST(ReportTest, PageCacheResidencyIsInTheNotes) {
  auto s = MakeSynthetic();
  for (auto& t : s.trials) {
    t.cache_total_bytes = 256ll << 20;
    t.cache_resident_bytes = t.baseline ? 0 : 128ll << 20;
  }
  const std::string html = Render(s);
  EXPECT_NE(html.find("page cache: 0.0% of 256.00 MiB resident at the victim's start"),
            std::string::npos);
  EXPECT_NE(html.find("page cache: 50.0% of 256.00 MiB resident"), std::string::npos);
}

TEST(ReportTest, EscapesUserText) {
  SyntheticOptions o;
  o.name = "<script>alert(\"x\")</script> & co";
  testing::Synthetic s = MakeSynthetic(o);
  for (auto& t : s.trials) {  // an antagonist name is user text too, and lands in keys
    if (t.pairing == "storage@1") t.pairing = "st<b>orage@1";
    for (auto& a : t.antagonists) {
      if (a.name == "storage" && a.level == 1) a.name = "st<b>orage";
    }
  }
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<b>orage"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co"),
            std::string::npos);
  EXPECT_NE(html.find("data-pairing=\"st&lt;b&gt;orage@1\""), std::string::npos);
}

TEST(ReportTest, ShowsExcludedTrialsAndNoisyBaseline) {
  SyntheticOptions o;
  o.excluded = true;
  o.jitter = 0.3;  // CoV well above 10%
  const testing::Synthetic s = MakeSynthetic(o);
  const auto results = experiment::Summarize(s.experiment, s.trials);
  ASSERT_TRUE(results.noisy_baseline);
  const std::string html = RenderHtmlReport(s.experiment, s.trials, results);
  ExpectWellFormed(html);
  EXPECT_NE(html.find("Noisy baseline:"), std::string::npos);
  EXPECT_NE(html.find("failed <b>1</b>"), std::string::npos);
  EXPECT_NE(html.find("flagged <b>1</b>"), std::string::npos);
  EXPECT_NE(html.find("victim killed: out of memory"), std::string::npos);
  EXPECT_NE(html.find("\u26a0</text>"), std::string::npos);  // the storage@1 cell's mark
  EXPECT_NE(html.find("1 failed, 1 flagged"), std::string::npos);
}

TEST(ReportTest, CombinedPairingGetsItsOwnRowAndNoCurve) {
  SyntheticOptions o;
  o.combined = true;
  const std::string html = Render(MakeSynthetic(o));
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 5u);
  EXPECT_NE(html.find(">membw + storage</text>"), std::string::npos);
  EXPECT_NE(html.find(">2.90\u00d7</text>"), std::string::npos);
  EXPECT_EQ(Count(html, "class=\"curve\""), 2u);
  EXPECT_NE(html.find("several antagonists at once (<code>membw@1+storage@1</code>)"),
            std::string::npos);
  // The most-slowed pairing is now the combined one: two shaded spans.
  EXPECT_NE(html.find("of <code>membw@1+storage@1</code>"), std::string::npos);
  EXPECT_NE(html.find("membw on"), std::string::npos);
  EXPECT_NE(html.find("storage on"), std::string::npos);
}

TEST(ReportTest, RateColumnsAreOrderedByRate) {
  testing::Synthetic s = MakeSynthetic();
  for (auto& t : s.trials) {
    if (t.pairing == "storage@0.5") t.pairing = "storage@2GiB/s";
    if (t.pairing == "storage@1") t.pairing = "storage@512MiB/s";
  }
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 4u);
  auto column = [&](const std::string& label) {
    return html.find("class=\"col-label\" text-anchor=\"middle\">" + label + "</text>");
  };
  // Levels first (ascending), then rates (ascending), whatever the plan order.
  ASSERT_NE(column("512MiB/s"), std::string::npos);
  EXPECT_LT(column("0.5"), column("1"));
  EXPECT_LT(column("1"), column("512MiB/s"));
  EXPECT_LT(column("512MiB/s"), column("2GiB/s"));
  EXPECT_NE(html.find("data-pairing=\"storage@2GiB/s\""), std::string::npos);
}

TEST(ReportTest, NoTrials) {
  ExperimentRecord e;
  e.id = "empty";
  e.name = "nothing yet";
  e.state = ExperimentState::kQueued;
  const std::string html = RenderHtmlReport(e, {}, experiment::Summarize(e, {}));
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 0u);
  EXPECT_NE(html.find("No interference pairings"), std::string::npos);
  EXPECT_NE(html.find("No measured baseline trials"), std::string::npos);
  EXPECT_NE(html.find("No trials recorded yet"), std::string::npos);
  EXPECT_EQ(html.find("id=\"phases\""), std::string::npos);
}

TEST(ReportTest, OnlyBaselines) {
  testing::Synthetic s = MakeSynthetic();
  std::erase_if(s.trials, [](const TrialRecord& t) { return !t.baseline; });
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 0u);
  EXPECT_EQ(html.find("id=\"phases\""), std::string::npos);
  EXPECT_NE(html.find("No interference pairing has a measured slowdown"), std::string::npos);
  EXPECT_EQ(Count(html, "<tr class=\"baseline\""), 1u);
}

TEST(ReportTest, NoBaselineRendersUnknownSlowdowns) {
  testing::Synthetic s = MakeSynthetic();
  std::erase_if(s.trials, [](const TrialRecord& t) { return t.baseline; });
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 4u);
  EXPECT_GE(Count(html, ">\u2013</text>"), 4u);  // "–" in every cell
  EXPECT_NE(html.find("No measured baseline trials"), std::string::npos);
}

TEST(ReportTest, NaNValuesRenderAsDash) {
  // NaN goes into the summaries (not the trial metrics: Summarize is not the subject here) and
  // into the raw series the step chart draws.
  testing::Synthetic s = MakeSynthetic();
  auto results = experiment::Summarize(s.experiment, s.trials);
  const double nan = std::nan("");
  for (auto& p : results.pairings) {
    if (p.pairing == "membw@1") {
      p.slowdown = p.ci_low = p.ci_high = p.p_value = p.median_metric_s = p.cov = nan;
      p.metric_median = nan;
      for (auto& ph : p.phases) ph.slowdown = ph.median_s = nan;
      for (auto& a : p.antagonists) a.achieved_rate = a.target_rate = nan;
    }
    if (p.pairing == "storage@0.5") p.ci_low = nan;
  }
  for (auto& t : s.trials) {
    if (t.pairing == "storage@1") {
      t.steps[7].step_time_s = nan;
      t.steps[9].t_s = nan;
      for (auto& a : t.antagonists) a.samples[3].achieved = nan, a.samples[4].t_s = nan;
    }
  }
  results.baseline_cov = nan;
  const std::string html = RenderHtmlReport(s.experiment, s.trials, results);
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 4u);
  EXPECT_EQ(Count(html, "class=\"curve\""), 2u);  // membw keeps its other point
  EXPECT_NE(html.find("data-pairing=\"membw@1\"><td><code>membw@1</code></td>"
                      "<td class=\"num\">5</td><td class=\"num\">\u2013</td>"),
            std::string::npos);
  EXPECT_NE(html.find("Without a measured slowdown or achieved rate, so not drawn: "
                      "<code>membw@1</code>"),
            std::string::npos);
}

TEST(ReportTest, FailedTrialsOnly) {
  testing::Synthetic s = MakeSynthetic();
  for (auto& t : s.trials) {
    if (!t.baseline) t.state = TrialState::kFailed, t.error = "exit 1";
  }
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 4u);
  EXPECT_NE(html.find("failed <b>20</b>"), std::string::npos);
  EXPECT_NE(html.find("20 failed or flagged trials (excluded)"), std::string::npos);
  EXPECT_NE(html.find("No interference pairing has a measured slowdown"), std::string::npos);
}

TEST(ReportTest, OnePoint) {
  SyntheticOptions o;
  o.repetitions = 1;
  testing::Synthetic s = MakeSynthetic(o);
  std::erase_if(s.trials,
                [](const TrialRecord& t) { return !t.baseline && t.pairing != "storage@0.5"; });
  for (auto& t : s.trials) {
    t.steps.resize(1);
    for (auto& a : t.antagonists) a.samples.resize(1);
  }
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(Count(html, "class=\"cell\""), 1u);
  EXPECT_EQ(Count(html, "class=\"curve\""), 1u);
  EXPECT_NE(html.find(">1.50\u00d7</text>"), std::string::npos);
}

TEST(ReportTest, NoPhasesOmitsTheBreakdownAndRatesWithoutPeakUseTheirUnit) {
  SyntheticOptions o;
  o.phases = false;
  testing::Synthetic s = MakeSynthetic(o);
  for (auto& t : s.trials) {
    for (auto& a : t.antagonists) a.peak_rate = 0, a.level = 0;
  }
  const std::string html = Render(s);
  ExpectWellFormed(html);
  EXPECT_EQ(html.find("id=\"phases\""), std::string::npos);
  EXPECT_NE(html.find("achieved rate (GiB/s)"), std::string::npos);
  EXPECT_EQ(html.find("% of calibrated peak"), std::string::npos);
}

}  // namespace
}  // namespace codl::report
