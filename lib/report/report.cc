// RenderHtmlReport: one self-contained page (inline CSS and SVG, no URLs), in reading order:
// header and warnings, heatmap, sensitivity curves, phase breakdown, one trial's step series,
// the pairing table, excluded trials, and the experiment YAML.
#include "lib/report/report.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "lib/analysis/pairing_order.h"
#include "lib/common/units.h"
#include "lib/report/charts.h"
#include "lib/report/interaction_section.h"
#include "lib/report/neighbour_section.h"
#include "lib/report/prediction_section.h"
#include "lib/report/profile_section.h"
#include "lib/report/provenance.h"
#include "lib/report/svg.h"
#include "lib/report/telemetry_section.h"

namespace codl::report {
namespace {

using experiment::ExperimentResults;
using experiment::PairingSummary;

constexpr const char* kStyle = R"css(
:root { --ink: #1f1f1f; --muted: #666; --rule: #e2e2e2; --warn-bg: #fff4e0; --warn: #8a4b00; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 48px; color: var(--ink); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    sans-serif; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 36px 0 4px; padding-top: 12px; border-top: 1px solid var(--rule); }
p { margin: 6px 0; }
code { font: 12.5px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.meta { color: var(--muted); margin: 0 0 10px; }
.meta b { color: var(--ink); font-weight: 600; }
.state { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px;
  background: #eee; color: var(--ink); }
.state-done { background: #e3f3e3; color: #1d5e20; }
.state-failed, .state-interrupted { background: #fde4e1; color: #9b1c10; }
.state-running, .state-queued { background: #e4edfb; color: #1b4d97; }
.partial { background: #fff4d6; border-left: 4px solid #b07800; padding: 6px 10px; }
.counts span { margin-right: 14px; }
.warning { background: var(--warn-bg); color: var(--warn); border-left: 4px solid #f0a030;
  padding: 8px 12px; margin: 8px 0; max-width: 1100px; }
.error { background: #fde4e1; color: #9b1c10; border-left: 4px solid #d7301f;
  padding: 8px 12px; margin: 8px 0; max-width: 1100px; }
.lede, .caption, .note, .empty { color: var(--muted); max-width: 1100px; }
.empty { font-style: italic; }
.charts { display: flex; flex-wrap: wrap; gap: 12px 28px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin-top: 8px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 12px; border-bottom: 1px solid var(--rule); text-align: left;
  vertical-align: top; }
th { font-weight: 600; border-bottom: 2px solid #ccc; white-space: nowrap; }
td.num { text-align: right; white-space: nowrap; }
td.rate { min-width: 220px; max-width: 380px; }
td.notes { max-width: 260px; }
tr.baseline td { background: #fafafa; }
td.own { font-weight: 600; background: #eef4fb; }
td.offtarget { background: #fdecea; }
td .sub { color: var(--muted); font-size: 12px; }
table.phase-matrix td { text-align: right; white-space: nowrap; }
table.phase-matrix td.significant { font-weight: 600; }
table.phase-matrix .overlapped { color: var(--muted); }
details { margin-top: 8px; }
figure { margin: 0; }
pre { background: #f7f7f7; padding: 10px 12px; overflow-x: auto; max-width: 1100px;
  font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
)css";

// Marks the page when a script error happens, so a headless browser run can tell (the tests
// dump the DOM and look for data-js-error); and marks it rendered once the body is parsed.
constexpr const char* kErrorHook =
    "<script>window.addEventListener('error', function (e) {"
    " document.body.dataset.jsError = String(e.message || 'error'); });</script>\n";
constexpr const char* kRenderedMark =
    "<script>document.body.dataset.rendered = String(document.querySelectorAll("
    "'svg .cell').length);</script>\n";

std::string UtcTime(int64_t unix_ms) {
  if (unix_ms <= 0) return kMissing;
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// Adaptive repetitions' stop reason and each pairing's minimal detectable effect (the smallest
// slowdown its n could detect at 5 %, power 80 %): one summary line.
std::string AdaptiveLine(const ExperimentResults& r) {
  std::string mde;
  for (const auto& p : r.pairings) {
    if (p.baseline || !std::isfinite(p.mde)) continue;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3gx", p.mde);
    mde += (mde.empty() ? "" : ", ") + Escape(p.pairing) + " " + buf;
  }
  if (r.stop_reason.empty() && mde.empty()) return "";
  std::string line = "<p class=\"adaptive\">";
  if (!r.stop_reason.empty())
    line += "Adaptive repetitions: <b>" + Escape(r.stop_reason) + "</b>. ";
  if (!mde.empty()) line += "Minimal detectable slowdown (5 %, power 80 %): " + mde + ".";
  return line + "</p>\n";
}

std::string Header(const ExperimentRecord& e, const std::vector<TrialRecord>& trials,
                   const ExperimentResults& r) {
  int done = 0, failed = 0, flagged = 0, other = 0;
  for (const auto& t : trials) {
    switch (t.state) {
      case TrialState::kDone: ++done; break;
      case TrialState::kFailed: ++failed; break;
      case TrialState::kFlagged: ++flagged; break;
      default: ++other; break;
    }
  }
  const std::string state = ToString(e.state);
  std::string h = "<header>\n<h1>" + Escape(e.name.empty() ? "(unnamed experiment)" : e.name) +
                  "</h1>\n<p class=\"meta\">experiment <b><code>" + Escape(e.id) +
                  "</code></b> &middot; <span class=\"state state-" + Escape(state) + "\">" +
                  Escape(state) + "</span> &middot; seed <b>" + std::to_string(e.seed) +
                  "</b> &middot; created " + Escape(UtcTime(e.created_unix_ms));
  if (e.finished_unix_ms > 0) h += " &middot; finished " + Escape(UtcTime(e.finished_unix_ms));
  if (!e.source_path.empty()) h += " &middot; from <code>" + Escape(e.source_path) + "</code>";
  h += "</p>\n<p class=\"counts\"><span>trials: <b>" + std::to_string(trials.size()) + "</b>";
  if (e.total_trials > 0) h += " of " + std::to_string(e.total_trials) + " planned";
  h += "</span><span>done <b>" + std::to_string(done) + "</b></span><span>failed <b>" +
       std::to_string(failed) + "</b></span><span>flagged <b>" + std::to_string(flagged) +
       "</b></span>";
  if (other) h += "<span>pending/running/cancelled <b>" + std::to_string(other) + "</b></span>";
  h += "</p>\n" + AdaptiveLine(r);
  if (std::string partial = experiment::UnfinishedLine(r); !partial.empty())
    h += "<p class=\"partial\"><b>" + Escape(partial) + "</b></p>\n";
  if (!r.gpu_device.empty()) {
    h += "<p class=\"partial\"><b>device: " + Escape(r.gpu_device) +
         "</b> — the GPU figures are the stand-in's model, not a GPU's</p>\n";
  }
  if (r.resumptions > 0) {
    h += "<p class=\"meta\">resumed " + std::to_string(r.resumptions) +
         (r.resumptions == 1 ? " time" : " times") +
         " (the provenance's <code>resumptions</code> say when, from what state, and how many "
         "trials each kept)</p>\n";
  }
  h += "<p class=\"lede\">Per-trial metric: <b>" + Escape(r.metric) +
       "</b> (victim.metric; elapsed = time of the measured steps). Slowdown = the median over "
       "trials of that metric under interference &divide; the baseline's (for throughput, "
       "baseline &divide; measured). " +
       Escape(Percent(r.confidence)) + " bootstrap confidence intervals (" +
       std::to_string(r.bootstrap_resamples) +
       " resamples); p from a two-sided Mann-Whitney U test against the baseline trials. "
       "Failed trials are excluded from every figure; flagged trials (an antagonist missed its "
       "target) are excluded from the held-target slowdown and included in the all-trials one, "
       "beside it with the flag rate.</p>\n";

  if (!e.error.empty()) h += "<p class=\"error\">Experiment error: " + Escape(e.error) + "</p>\n";
  const PairingSummary* base = nullptr;
  for (const auto& p : r.pairings) {
    if (p.baseline) base = &p;
  }
  if (!base || base->n == 0) {
    h += "<p class=\"warning\">No measured baseline trials: slowdowns are unknown.</p>\n";
  }
  if (r.noisy_baseline) {
    h += "<p class=\"warning\"><b>Noisy baseline:</b> the baseline's coefficient of variation is " +
         Escape(Percent(r.baseline_cov, 1)) + ", above the " +
         Escape(Percent(r.noisy_cov_threshold, 1)) +
         " threshold; small slowdowns are not trustworthy.</p>\n";
  }
  return h + "</header>\n";
}

std::string Achieved(const PairingSummary& p) {
  std::string s;
  for (const auto& a : p.antagonists) {
    if (!std::isfinite(a.achieved_rate)) continue;
    s += s.empty() ? "" : "<br>";
    s += Escape(a.name + " " + RateLabel(a.achieved_rate, a.unit));
    if (std::isfinite(a.target_rate) && a.target_rate > 0 && a.level > 0) {
      s += " <span class=\"sub\">&middot; calibrated peak " +
           Escape(RateLabel(a.target_rate / a.level, a.unit)) + "</span>";
    }
    if (a.max) {
      s += " <span class=\"sub\">(max, open loop)</span>";
    } else if (std::isfinite(a.target_rate) && a.target_rate > 0) {
      s += " <span class=\"sub\">(" + Escape(Percent(a.achieved_rate / a.target_rate)) +
           " of target)</span>";
    }
  }
  return s.empty() ? kMissing : s;
}

// Mean CPU cores used by the victim and each antagonist, beside the achieved rates.
std::string CoresCell(const PairingSummary& p) {
  std::string s;
  char buf[32];
  if (std::isfinite(p.victim_cores)) {
    std::snprintf(buf, sizeof buf, "%.2f", p.victim_cores);
    s = "victim " + std::string(buf);
  }
  for (const auto& a : p.antagonists) {
    if (!std::isfinite(a.cores)) continue;
    std::snprintf(buf, sizeof buf, "%.2f", a.cores);
    s += (s.empty() ? "" : "<br>") + Escape(a.name) + " " + buf;
  }
  return s.empty() ? kMissing : s;
}

std::string Notes(const PairingSummary& p) {
  std::string s;
  auto add = [&](int n, const char* what) {
    if (n) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(p.n_failed, "failed");
  add(p.n_flagged, "flagged");
  add(p.n_not_run, "not run");
  if (std::isfinite(p.cache_total_bytes)) {
    s += std::string(s.empty() ? "" : "; ") + "page cache: " +
         (std::isfinite(p.cache_resident_fraction)
              ? Escape(Percent(p.cache_resident_fraction, 1)) + " of "
              : std::string()) +
         Escape(FormatSize(p.cache_total_bytes)) + " resident at the victim's start";
  }
  for (const auto& c : p.confounds) s += (s.empty() ? "" : "; ") + ("confound: " + Escape(c));
  for (const auto& a : p.antagonists) {
    if (a.n_missed_target) {
      s += (s.empty() ? "" : ", ") + Escape(a.name) + " below target in " +
           std::to_string(a.n_missed_target) + (a.n_missed_target == 1 ? " trial" : " trials");
    }
  }
  return s;
}

// "0.008 <span>[0.024]</span> *": the raw p, the Holm-adjusted one, and the significance mark,
// which follows the adjusted value (as in `codlctl results`).
std::string PCell(const PairingSummary& p) {
  if (p.baseline || !std::isfinite(p.p_value)) return Escape(PValue(p.p_value));
  std::string s = Escape(PValue(p.p_value));
  if (std::isfinite(p.p_holm))
    s += " <span class=\"sub\">[" + Escape(PValue(p.p_holm)) + "]</span>";
  if (Significant(p))
    s += " <b class=\"sig\" title=\"significant after the Holm adjustment\">*</b>";
  return s;
}

std::string SlowdownWithCi(double slowdown, double low, double high) {
  std::string s = Escape(Slowdown(slowdown));
  const std::string ci = CiLabel(low, high);
  if (!ci.empty()) s += " <span class=\"sub\">" + Escape(ci) + "</span>";
  return s;
}

std::string MetricValue(const ExperimentResults& r, const PairingSummary& p) {
  if (r.metric_unit == "s") return Escape(Duration(p.metric_median));
  if (!std::isfinite(p.metric_median)) return kMissing;
  return Escape(Fixed(p.metric_median, 2) + " " + r.metric_unit);
}

// "1/4 (25%)": how many trials the held-target figure leaves out.
std::string FlagRate(const PairingSummary& p) {
  if (p.baseline || p.n_all == 0) return kMissing;
  return std::to_string(p.n_flagged) + "/" + std::to_string(p.n_all) + " (" +
         Escape(Percent(p.flag_rate)) + ")";
}

// The smallest slowdown the pairing's trial counts could have detected (docs/validity.md,
// "Adaptive repetitions"); none for the baseline or where no outcome could be significant.
std::string MdeCell(const PairingSummary& p) {
  return p.baseline || !std::isfinite(p.mde) ? kMissing : Escape(Slowdown(p.mde));
}

// Eight columns, each a headline figure with its secondary ones stacked under it (CoV under
// the metric, all trials under the slowdown, the MDE under p, cores under the achieved rate),
// so the table fits a 1300 px window (tests/lib/report/report_browser_test.cc checks it).
std::string PairingTable(const ExperimentResults& r) {
  if (r.pairings.empty()) return "<p class=\"empty\">No trials recorded yet.</p>\n";
  auto sub = [](const std::string& label, const std::string& html) {
    return html == kMissing ? std::string() : "<br><span class=\"sub\">" + label + html + "</span>";
  };
  std::string t =
      "<table class=\"pairings\">\n<thead><tr><th>pairing</th><th>n</th><th>" + Escape(r.metric) +
      "<br><span class=\"sub\">CoV</span></th><th>slowdown [CI]<br><span class=\"sub\">all "
      "trials [CI]</span></th><th>p [Holm]<br><span class=\"sub\">MDE</span></th>"
      "<th>flagged</th><th>achieved rate<br><span class=\"sub\">cores</span></th>"
      "<th>excluded</th></tr></thead>\n<tbody>\n";
  for (const PairingSummary* sorted : experiment::SortedPairings(r)) {
    const PairingSummary& p = *sorted;
    const std::string slowdown = SlowdownWithCi(p.slowdown, p.ci_low, p.ci_high);
    const std::string all =
        p.baseline ? kMissing : SlowdownWithCi(p.slowdown_all, p.ci_all_low, p.ci_all_high);
    const std::string cov = Escape(Percent(p.cov, 1));
    t += std::string("<tr") + (p.baseline ? " class=\"baseline\"" : "") + " data-pairing=\"" +
         Escape(p.pairing) + "\"><td><code>" + Escape(p.pairing) +
         "</code></td><td class=\"num\">" + std::to_string(p.n) + "</td><td class=\"num\">" +
         MetricValue(r, p) + sub("CoV ", cov) + "</td><td class=\"num\">" + slowdown +
         sub("all ", all) + "</td><td class=\"num\">" + PCell(p) + sub("MDE ", MdeCell(p)) +
         "</td><td class=\"num\">" + FlagRate(p) + "</td><td class=\"rate\">" +
         (p.baseline ? kMissing : Achieved(p)) + sub("cores: ", CoresCell(p)) +
         "</td><td class=\"notes\">" + Notes(p) + "</td></tr>\n";
  }
  return t + "</tbody>\n</table>\n";
}

// Failed and flagged trials with their reasons: the figures exclude them, the reader should not.
std::string ExcludedTrials(const std::vector<TrialRecord>& trials) {
  std::string rows;
  int n = 0;
  for (const auto& t : trials) {
    if (t.state != TrialState::kFailed && t.state != TrialState::kFlagged) continue;
    ++n;
    rows += "<tr><td class=\"num\">" + std::to_string(t.index + 1) + "</td><td><code>" +
            Escape(t.pairing) + "</code></td><td>" + Escape(ToString(t.state)) +
            "</td><td class=\"num\">" +
            (t.state == TrialState::kFailed ? std::to_string(t.exit_code) : kMissing) +
            "</td><td>" + Escape(t.error.empty() ? kMissing : t.error) + "</td></tr>\n";
  }
  if (!n) return "";
  return "<details" + std::string(n <= 10 ? " open" : "") + "><summary>" + std::to_string(n) +
         " failed or flagged trial" + (n == 1 ? "" : "s") +
         " (excluded)</summary>\n<table class=\"excluded\"><thead><tr><th>trial</th>"
         "<th>pairing</th><th>state</th><th>exit</th><th>reason</th></tr></thead>\n<tbody>\n" +
         rows + "</tbody></table>\n</details>\n";
}

std::string Section(const std::string& id, const std::string& title, const std::string& lede,
                    const std::string& body) {
  return "<section id=\"" + id + "\">\n<h2>" + title + "</h2>\n" +
         (lede.empty() ? "" : "<p class=\"lede\">" + lede + "</p>\n") + body + "</section>\n";
}

// A cross-talk experiment's sections: no victim, so its idle window's "slowdown" is no
// figure; each antagonist's footprints are.
std::string CrosstalkSections(const experiment::ExperimentResults& results,
                              const std::vector<TrialRecord>& trials) {
  std::string page;
  // No victim: the idle window's "slowdown" is not a figure, its footprints are.
  page += Section("crosstalk", "Cross-talk: what each antagonist touched",
                  "Each antagonist alone, with no victim, over an idle window: the node's "
                  "counters over that window less an idle baseline's (medians over windows), "
                  "one column per resource; the antagonist's own CPU in the first.",
                  RenderCrosstalk(results));
  if (std::string telemetry = RenderTelemetry(results); !telemetry.empty())
    page += Section("telemetry", "Node telemetry", "The medians the matrix is made of.", telemetry);
  page += Section("table", "All pairings", "", PairingTable(results) + ExcludedTrials(trials));
  return page;
}

// An experiment with a victim: its profile, heatmap, curves, phases, neighbours,
// interactions, predictions, telemetry, one trial's step series and the table.
std::string VictimSections(const ExperimentRecord& experiment,
                           const std::vector<TrialRecord>& trials,
                           const experiment::ExperimentResults& results,
                           const std::map<std::string, std::string>& resources) {
  std::string page;
  if (std::string profile = RenderProfile(results, resources); !profile.empty()) {
    page += Section("profile", "Interference profile",
                    "One row per resource: the victim's slowdown against the antagonist's level "
                    "(fraction of its calibrated peak; dashed: the tolerance threshold), the "
                    "highest level it tolerates (slowdown CI under the threshold), the lowest "
                    "that breaks it, and the slowdown at the peak.",
                    profile);
  }

  const Figure heatmap = HeatmapFigure(results);
  page += Section("heatmap", "Slowdown by antagonist and intensity",
                  "Each cell: median slowdown of the victim, its confidence interval, the "
                  "number of measured trials and the Holm-adjusted p-value. Hatched grey cells "
                  "are not significant (adjusted p &ge; 0.05, or fewer than 3 trials a side); "
                  "&#9888; marks pairings with excluded trials; hover a cell for details.",
                  heatmap.svg + heatmap.empty);
  const SensitivitySet curves = SensitivityFigures(results, trials);
  std::string curve_html;
  if (!curves.charts.empty()) {
    curve_html = "<div class=\"charts\">\n";
    for (const auto& f : curves.charts) {
      curve_html += "<figure>" + f.svg + "<figcaption class=\"caption\">" + f.caption +
                    "</figcaption></figure>\n";
    }
    curve_html += "</div>\n";
  }
  page += Section("sensitivity", "Sensitivity curves",
                  "Slowdown against the intensity each antagonist actually achieved (not the "
                  "one requested), with confidence-interval bars; the open circle is the "
                  "baseline, faded points are not significant after the Holm adjustment.",
                  curve_html + curves.notes);
  if (const Figure phases = PhaseFigure(results, trials); !phases.svg.empty()) {
    page += Section("phases", "Where the step time went",
                    "Each pairing's mean time per step by phase (the baseline first; phases in "
                    "pipeline order, those under 1 % of the step in every pairing together, and "
                    "what the victim does not time on top), labelled with the time it adds per "
                    "step. The table gives each phase's added time per step with its bootstrap "
                    "CI (* where it excludes 0; the same resampling as the slowdown) and, for "
                    "stages that overlap the step (loader reads and decodes), their own change: "
                    "they cost the step only through the wait they feed. A phase that is near "
                    "zero at baseline is never shown as a ratio.",
                    "<div class=\"scroll\">" + phases.svg + "</div>\n" + PhaseMatrix(results));
  }
  if (std::string two_way = RenderNeighbours(results); !two_way.empty()) {
    page += Section("neighbours", "Two-way: real jobs as the neighbour",
                    "Each workload antagonist against the victim, both ways: the victim's "
                    "slowdown beside it (what the victim tolerates) and its own slowdown beside "
                    "the victim against its solo runs (what the victim causes it), with a "
                    "bootstrap CI and the Mann-Whitney p; combined throughput is the two jobs' "
                    "throughput relative to running alone, summed (&gt; 1: sharing pays).",
                    two_way);
  }
  if (std::string interactions = RenderInteractions(results); !interactions.empty()) {
    page += Section("interaction", "Interaction",
                    "Each combination against its singles at the same intensities: measured "
                    "slowdown, the multiplicative (&times;) and additive (+) predictions, and "
                    "measured &divide; &times;-pred with a bootstrap CI that resamples baseline, "
                    "singles and combination together; flagged super- or sub-additive when the "
                    "CI excludes 1.",
                    interactions);
  }
  if (std::string predictions = RenderPredictions(results, trials, experiment.seed);
      !predictions.empty()) {
    page += Section("prediction", "Prediction from the singles",
                    "How well the singles' sensitivity curves predict what was measured: each "
                    "combination from its singles (the product of their slowdowns), each single "
                    "from the other points of its curve, with a bootstrap CI over the baseline "
                    "and the singles.",
                    predictions);
  }
  if (std::string telemetry = RenderTelemetry(results); !telemetry.empty()) {
    page += Section("telemetry", "Node telemetry",
                    "What else each pairing touched on the victim's node during the victim's "
                    "run: the median over its measured trials of the share of the window some "
                    "task stalled on CPU, I/O and memory (PSI), disk and network bytes per "
                    "second (every whole disk and interface, lo included), the lowest "
                    "MemAvailable, and memory bandwidth where the node has counters for it; "
                    "on a node with NVIDIA GPUs, each GPU's utilization, memory in use, PCIe "
                    "and NVLink traffic, clocks and clock event (throttle) reasons through "
                    "NVML.",
                    telemetry);
  }
  const Figure series = StepSeriesFigure(results, trials);
  page +=
      Section("series", "Step time of one interference trial", "",
              series.svg.empty() ? series.empty
                                 : "<p class=\"caption\">" + series.caption +
                                       "</p>\n<div class=\"scroll\">" + series.svg + "</div>\n");
  page += Section("table", "All pairings", "", PairingTable(results) + ExcludedTrials(trials));
  return page;
}

}  // namespace

std::string RenderHtmlReport(const ExperimentRecord& experiment,
                             const std::vector<TrialRecord>& trials,
                             const experiment::ExperimentResults& results,
                             const std::map<std::string, std::string>& resources) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"CoDL\">\n<title>CoDL report: " +
      Escape(experiment.name) + " (" + Escape(experiment.id) + ")</title>\n<style>" + kStyle +
      kChartStyle + "</style>\n</head>\n<body>\n" + kErrorHook;
  page += Header(experiment, trials, results);
  page += results.crosstalk ? CrosstalkSections(results, trials)
                            : VictimSections(experiment, trials, results, resources);
  if (std::string prov = RenderProvenance(experiment.provenance_json); !prov.empty()) {
    page += Section("provenance", "Provenance",
                    "What these figures depended on besides the YAML below: versions, the "
                    "nodes as their agents found them, calibrations and warm-up runs.",
                    prov);
  }
  if (!experiment.yaml.empty()) {
    page += "<details><summary>Experiment YAML</summary>\n<pre>" + Escape(experiment.yaml) +
            "</pre>\n</details>\n";
  }
  page += kRenderedMark;
  page += "</body>\n</html>\n";
  return page;
}

}  // namespace codl::report
