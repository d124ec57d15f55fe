#include "lib/report/prediction_section.h"

#include <cmath>

#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/predict.h"
#include "lib/report/svg.h"
#include "lib/spec/trial_metric.h"

namespace codl::report {
namespace {

std::string ErrorCell(double error) {
  if (!std::isfinite(error)) return "&ndash;";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", 100 * error);
  return buf;
}

std::string PercentFigure(double percent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", percent);
  return buf;
}

}  // namespace

std::string RenderPredictions(const experiment::ExperimentResults& results,
                              const std::vector<TrialRecord>& trials, uint64_t seed) {
  auto metric = experiment::ParseTrialMetric(results.metric);
  if (!metric.ok()) return "";
  experiment::PredictOptions options;
  options.seed = seed;
  options.higher_is_faster = metric->HigherIsFaster();
  options.at_max = experiment::AchievedAtMaxOf(trials);
  // Default questions: every measured combination (from its singles) and every measured single
  // (from the rest of its curve). Errors (no baseline, no singles) mean nothing to show.
  auto report =
      experiment::PredictSlowdowns(experiment::MeasuredSamples(trials, *metric), {}, options);
  if (!report.ok()) return "";
  bool any_combination = false;
  for (const auto& p : report->predictions)
    any_combination |= !p.left_out && p.n_measured > 0 && p.single_slowdowns.size() > 1;
  if (!any_combination) return "";
  std::string t =
      "<table class=\"predictions\">\n<thead><tr><th>pairing</th><th>predicted [CI]</th>"
      "<th>measured</th><th>n</th><th>error</th><th>how</th></tr></thead>\n<tbody>\n";
  for (const auto& p : report->predictions) {
    const std::string how =
        p.left_out ? "single, from the rest of its curve" : "combination, from its singles";
    t += "<tr data-prediction=\"" + Escape(p.combination) + "\"><td><code>" +
         Escape(p.combination) + "</code>" + (p.extrapolated ? " *" : "") +
         "</td><td class=\"num\">" + Escape(Slowdown(p.predicted)) + " <span class=\"sub\">" +
         Escape(CiLabel(p.ci_low, p.ci_high)) + "</span></td><td class=\"num\">" +
         (p.n_measured > 0 ? Escape(Slowdown(p.measured)) : "&ndash;") + "</td><td class=\"num\">" +
         std::to_string(p.n_measured) + "</td><td class=\"num\">" + ErrorCell(p.error) +
         "</td><td>" + how + "</td></tr>\n";
  }
  t += "</tbody>\n</table>\n";
  std::string summary = "<p class=\"caption\">Model: " + Escape(report->model);
  if (report->n_compared > 0) {
    summary += "; MAPE " + PercentFigure(report->mape) + " over " +
               std::to_string(report->n_compared) + " measured pairings";
    if (std::isfinite(report->mape_combinations))
      summary += " (combinations " + PercentFigure(report->mape_combinations) + ")";
    summary += ", largest |error| " + PercentFigure(report->max_abs_error);
  }
  summary +=
      ". * extrapolates past the highest measured intensity. Other combinations and "
      "intensities: <code>codlctl predict</code>.</p>\n";
  return summary + t;
}

}  // namespace codl::report
