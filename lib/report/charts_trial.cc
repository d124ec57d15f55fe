// The step-time series of one trial: when the victim lost time, against when each antagonist ran.
#include <algorithm>
#include <cmath>

#include "lib/common/csv.h"
#include "lib/report/charts.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

using experiment::ExperimentResults;
using experiment::PairingSummary;

const PairingSummary* Baseline(const ExperimentResults& r) {
  for (const auto& p : r.pairings) {
    if (p.baseline) return &p;
  }
  return nullptr;
}

// The first measured trial (lowest index) of the pairing with the highest slowdown.
const TrialRecord* PickTrial(const ExperimentResults& results,
                             const std::vector<TrialRecord>& trials, const PairingSummary** out) {
  const PairingSummary* worst = nullptr;
  for (const auto& p : results.pairings) {
    if (p.baseline || !std::isfinite(p.slowdown)) continue;
    if (!worst || p.slowdown > worst->slowdown) worst = &p;
  }
  *out = worst;
  if (!worst) return nullptr;
  const TrialRecord* pick = nullptr;
  for (const auto& t : trials) {
    if (t.pairing != worst->pairing || t.state != TrialState::kDone) continue;
    if (!pick || t.index < pick->index) pick = &t;
  }
  return pick;
}

struct Span {
  double lo = 0, hi = 0;
  bool any = false;
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
};

// The achieved-rate panel's unit: the antagonists' own when they share one, else % of target.
struct RatePanel {
  bool same_unit = true;
  DisplayUnit unit;
  Span span;
  double Value(const RateSample& s) const {
    if (same_unit) return s.achieved / unit.divisor;
    return s.target > 0 ? s.achieved / s.target : experiment::kNaN;
  }
  double Target(const RateSample& s) const {
    if (same_unit) return s.target > 0 ? s.target / unit.divisor : experiment::kNaN;
    return 1.0;
  }
};

RatePanel MakeRatePanel(const TrialRecord& trial) {
  RatePanel p;
  Span raw;
  for (const auto& a : trial.antagonists) {
    p.same_unit = p.same_unit && a.unit == trial.antagonists.front().unit;
    for (const auto& s : a.samples) raw.Add(s.achieved), raw.Add(s.target);
  }
  if (p.same_unit && !trial.antagonists.empty()) {
    p.unit = RateDisplayUnit(raw.hi, trial.antagonists.front().unit);
  }
  for (const auto& a : trial.antagonists) {
    for (const auto& s : a.samples) p.span.Add(p.Value(s)), p.span.Add(p.Target(s));
  }
  return p;
}

// Vertical grid lines of the shared time axis across one panel.
void TimeGrid(Svg& svg, const Scale& x, double top, double bottom,
              const std::vector<double>& ticks) {
  for (double t : ticks) svg.Line(x(t), top, x(t), bottom, "class=\"grid\"");
}

bool Drawable(const VictimStep& s) { return std::isfinite(s.t_s) && std::isfinite(s.step_time_s); }

// The step-series chart of one trial. Layout, top to bottom: legend, one on/off strip per
// antagonist, step-time panel, achieved-rate panel (when there are samples), time axis. The
// panels share the time axis, which spans the data exactly (round ticks inside it).
class StepSeriesChart {
 public:
  StepSeriesChart(const TrialRecord& trial, double base_median)
      : trial_(trial),
        n_ant_(trial.antagonists.size()),
        rates_(MakeRatePanel(trial)),
        base_median_(base_median),
        on_(n_ant_) {
    MeasureSpans();
    LayOut();
  }

  std::string Draw() {
    Svg svg(kW, height_, "series", "step time of trial " + std::to_string(trial_.index + 1));
    for (size_t i = 0; i < n_ant_; ++i) DrawOnSpan(svg, i);
    DrawStepPanel(svg);
    if (rates_.span.any) DrawRatePanel(svg);
    // The time axis's labels only: its grid lines are drawn with each panel.
    BottomAxis(svg, x_, Scale{0, 1, rate_bottom_, rate_bottom_}, x_ticks_, Tick,
               "time since the victim started (s)");
    DrawLegend(&svg);
    return svg.Finish();
  }

 private:
  static constexpr double kW = 1120, kRight = 30, kStripH = 16, kStepH = 220, kRateH = 110;

  // The time span of the steps and of each antagonist's samples (when it ran), and the range
  // of step times including the baseline's median.
  void MeasureSpans() {
    for (const auto& s : trial_.steps) {
      if (std::isfinite(s.step_time_s)) t_span_.Add(s.t_s);
      step_span_.Add(s.step_time_s);
    }
    for (size_t i = 0; i < n_ant_; ++i) {
      for (const auto& r : trial_.antagonists[i].samples) on_[i].Add(r.t_s), t_span_.Add(r.t_s);
    }
    step_span_.Add(base_median_);
  }

  void LayOut() {
    // Room on the left for the longest antagonist name beside its on/off strip.
    left_ = 150;
    for (const auto& a : trial_.antagonists) left_ = std::max(left_, TextWidth(a.name, 12) + 24);
    strips_top_ = 38 + 20 * (DrawLegend(nullptr) - 1);
    step_top_ = strips_top_ + n_ant_ * kStripH + (n_ant_ ? 12 : 0);
    step_bottom_ = step_top_ + kStepH;
    rate_top_ = step_bottom_ + 22;
    rate_bottom_ = rates_.span.any ? rate_top_ + kRateH : step_bottom_;
    height_ = rate_bottom_ + 52;
    const double x_lo = std::min(0.0, t_span_.lo);
    const double x_hi = t_span_.hi > x_lo ? t_span_.hi : x_lo + 1;
    y_lo_ = 0;
    y_hi_ = step_span_.hi * 1.05;
    NiceDomain(&y_lo_, &y_hi_, 5);
    x_ = Scale{x_lo, x_hi, left_, kW - kRight};
    y_ = Scale{y_lo_, y_hi_, step_bottom_, step_top_};
    x_ticks_ = NiceTicks(x_lo, x_hi, 10);
  }

  // Antagonist i's on/off strip, and the same span as light shading down through both panels.
  void DrawOnSpan(Svg& svg, size_t i) {
    const Span& on = on_[i];
    if (!on.any) return;
    const auto& a = trial_.antagonists[i];
    const std::string c = SeriesColour(i);
    const double sy = strips_top_ + i * kStripH;
    const double w = std::max(1.0, x_(on.hi) - x_(on.lo));
    svg.Text(left_ - 10, sy + 11, a.name, "class=\"legend\" text-anchor=\"end\"");
    svg.Rect(left_, sy + 3, x_.r1 - left_, kStripH - 6, "fill=\"#f2f2f2\"");
    svg.Open("g", "class=\"on-span\"");
    svg.Title(a.name + " on from " + Fixed(on.lo, 1) + " s to " + Fixed(on.hi, 1) +
              " s (victim start = 0; negative: settling before the victim started)");
    svg.Rect(x_(on.lo), sy + 3, w, kStripH - 6, "fill=\"" + c + "\"");
    svg.Close("g");
    svg.Rect(x_(on.lo), step_top_, w, rate_bottom_ - step_top_,
             "fill=\"" + c + "\" fill-opacity=\"0.07\"");
  }

  void DrawStepPanel(Svg& svg) {
    TimeGrid(svg, x_, step_top_, step_bottom_, x_ticks_);
    LeftAxis(
        svg, x_, y_, NiceTicks(y_lo_, y_hi_, 5),
        [](double v) { return v == 0 ? std::string("0") : Duration(v); }, "step time");
    svg.Line(x_.r0, step_bottom_, x_.r1, step_bottom_, "class=\"domain\"");
    // Labelled in the legend, not on the line, where it would sit on top of the data.
    if (std::isfinite(base_median_)) {
      svg.Line(x_.r0, y_(base_median_), x_.r1, y_(base_median_), "class=\"ref\"");
    }
    std::vector<std::pair<double, double>> line;
    for (const auto& s : trial_.steps) {
      if (Drawable(s)) line.push_back({x_(s.t_s), y_(s.step_time_s)});
    }
    if (line.size() > 1) svg.Polyline(line, "class=\"steps\"");
    if (trial_.steps.size() <= 600) DrawStepPoints(svg);
  }

  // One point per step with its own tooltip; left out of long runs, where the line says it all.
  void DrawStepPoints(Svg& svg) {
    for (const auto& s : trial_.steps) {
      if (!Drawable(s)) continue;
      svg.Open("g", "class=\"step-point\"");
      svg.Title("step " + std::to_string(s.step) + (s.warmup ? " (warm-up)" : "") + ": " +
                Duration(s.step_time_s) + " at " + Fixed(s.t_s, 1) + " s");
      svg.Circle(x_(s.t_s), y_(s.step_time_s), s.warmup ? 3 : 2,
                 s.warmup ? "class=\"warmup\"" : "class=\"step\"");
      svg.Close("g");
    }
  }

  void DrawRatePanel(Svg& svg) {
    double r_lo = 0, r_hi = rates_.span.hi * 1.05;
    NiceDomain(&r_lo, &r_hi, 3);
    const Scale r{r_lo, r_hi, rate_bottom_, rate_top_};
    TimeGrid(svg, x_, rate_top_, rate_bottom_, x_ticks_);
    LeftAxis(
        svg, x_, r, NiceTicks(r_lo, r_hi, 3),
        [&](double v) { return rates_.same_unit ? Tick(v) : Percent(v); },
        rates_.same_unit ? "achieved (" + rates_.unit.label + ")" : "achieved (% of target)");
    for (size_t i = 0; i < n_ant_; ++i) DrawRates(svg, r, i);
  }

  // Antagonist i's achieved rate (solid) and target (dashed).
  void DrawRates(Svg& svg, const Scale& r, size_t i) {
    std::vector<std::pair<double, double>> achieved, target;
    for (const auto& s : trial_.antagonists[i].samples) {
      if (!std::isfinite(s.t_s)) continue;
      if (double v = rates_.Value(s); std::isfinite(v)) achieved.push_back({x_(s.t_s), r(v)});
      if (double v = rates_.Target(s); std::isfinite(v)) target.push_back({x_(s.t_s), r(v)});
    }
    const std::string c = SeriesColour(i);
    if (target.size() > 1) {
      svg.Polyline(target, "stroke=\"" + c + "\" stroke-width=\"1\" stroke-dasharray=\"5 4\"");
    }
    if (achieved.size() > 1) {
      svg.Polyline(achieved, "stroke=\"" + c + "\" stroke-width=\"1.6\"");
    } else if (achieved.size() == 1) {
      svg.Circle(achieved[0].first, achieved[0].second, 3, "fill=\"" + c + "\"");
    }
  }

  // Across the top, left to right, each entry as wide as its text, wrapping into a new row
  // where the chart ends. With no `svg`, only counts the rows (for the layout).
  int DrawLegend(Svg* svg) const {
    double lx = left_, ly = 16;
    int rows = 1;
    // kind: "line" with stroke attributes, or "dot" for the warm-up marker.
    auto legend = [&](const std::string& kind, const std::string& attrs, const std::string& text) {
      const double w = 44 + TextWidth(text, 12);
      if (lx > left_ && lx + w - 18 > kW - kRight) lx = left_, ly += 20, ++rows;
      if (svg) {
        svg->Raw(kind == "dot" ? "<circle cx=\"" + Num(lx + 10) + "\" cy=\"" + Num(ly) +
                                     "\" r=\"3\" " + attrs + "/>"
                               : "<line x1=\"" + Num(lx) + "\" y1=\"" + Num(ly) + "\" x2=\"" +
                                     Num(lx + 20) + "\" y2=\"" + Num(ly) + "\" " + attrs + "/>");
        svg->Text(lx + 26, ly + 4, text, "class=\"legend\"");
      }
      lx += w;
    };
    legend("line", "class=\"steps\"", "step time");
    legend("dot", "class=\"warmup\"", "warm-up step");
    if (std::isfinite(base_median_)) {
      legend("line", "class=\"ref\"", "baseline median " + Duration(base_median_));
    }
    if (!rates_.span.any) return rows;
    for (size_t i = 0; i < n_ant_; ++i) {
      legend("line", "stroke=\"" + SeriesColour(i) + "\" stroke-width=\"2\"",
             trial_.antagonists[i].name + " achieved");
    }
    legend("line", "stroke=\"#777\" stroke-dasharray=\"5 4\"", "target");
    return rows;
  }

  const TrialRecord& trial_;
  const size_t n_ant_;
  const RatePanel rates_;
  const double base_median_;
  Span t_span_, step_span_;
  std::vector<Span> on_;  // when each antagonist ran
  double left_ = 150, strips_top_ = 38;
  double step_top_ = 0, step_bottom_ = 0, rate_top_ = 0, rate_bottom_ = 0, height_ = 0;
  double y_lo_ = 0, y_hi_ = 1;
  Scale x_, y_;
  std::vector<double> x_ticks_;
};

std::string StepSeriesCaption(const TrialRecord& trial, const PairingSummary& pairing) {
  std::string caption = "Trial #" + std::to_string(trial.index + 1) + " (repetition " +
                        std::to_string(trial.repetition + 1) + ") of <code>" +
                        Escape(trial.pairing) + "</code>, the most-slowed pairing (" +
                        Escape(Slowdown(pairing.slowdown)) + ")";
  if (!trial.victim_node.empty()) caption += ", victim on " + Escape(trial.victim_node);
  caption +=
      ". Bars above the chart: when each antagonist ran (its telemetry span; negative "
      "times are its settle period before the victim started).";
  return caption;
}

// The baseline's typical step: the median over its measured trials of each trial's median
// measured step time. Not the pairing's metric, which may be the whole run's elapsed time.
double BaselineStepMedian(const ExperimentResults& results,
                          const std::vector<TrialRecord>& trials) {
  const PairingSummary* baseline = Baseline(results);
  if (!baseline) return experiment::kNaN;
  std::vector<double> medians;
  for (const auto& t : trials) {
    if (t.pairing != baseline->pairing || t.state != TrialState::kDone) continue;
    std::vector<double> steps;
    for (const auto& s : t.steps) {
      if (!s.warmup && std::isfinite(s.step_time_s)) steps.push_back(s.step_time_s);
    }
    if (!steps.empty()) medians.push_back(experiment::Median(steps));
  }
  return experiment::Median(medians);
}

// The data drawn: every step, then every antagonist rate sample (t_s relative to the start).
std::string SeriesCsv(const TrialRecord& trial) {
  std::string csv = "trial,series,t_s,value,target,unit,warmup\n";
  const std::string index = std::to_string(trial.index + 1);  // 1-based, as `trial` in --trials
  for (const auto& s : trial.steps) {
    csv += index + ",step_time_s," + CsvNumber(s.t_s) + "," + CsvNumber(s.step_time_s) + ",,s," +
           (s.warmup ? "true" : "false") + "\n";
  }
  for (const auto& a : trial.antagonists) {
    const std::string name = CsvField(CsvText(a.name + " achieved"));
    const std::string unit = CsvField(CsvText(a.unit));
    for (const auto& r : a.samples) {
      csv += index + "," + name + "," + CsvNumber(r.t_s) + "," + CsvNumber(r.achieved) + "," +
             CsvNumber(r.target) + "," + unit + ",false\n";
    }
  }
  return csv;
}

}  // namespace

Figure StepSeriesFigure(const ExperimentResults& results, const std::vector<TrialRecord>& trials) {
  Figure f;
  f.name = "step-series";
  const PairingSummary* pairing = nullptr;
  const TrialRecord* trial = PickTrial(results, trials, &pairing);
  if (!pairing) {
    f.empty = "<p class=\"empty\">No interference pairing has a measured slowdown yet.</p>\n";
    return f;
  }
  if (!trial || trial->steps.empty()) {
    f.empty = "<p class=\"empty\">The most-slowed pairing, <code>" + Escape(pairing->pairing) +
              "</code>, has no measured trial with reported steps.</p>\n";
    return f;
  }
  StepSeriesChart chart(*trial, BaselineStepMedian(results, trials));
  f.caption = StepSeriesCaption(*trial, *pairing);
  f.svg = chart.Draw();
  f.csv = SeriesCsv(*trial);
  return f;
}

}  // namespace codl::report
