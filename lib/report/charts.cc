// The slowdown heatmap and the sensitivity curves: charts of the per-pairing summaries.
#include "lib/report/charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "lib/common/units.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

using experiment::AntagonistSummary;
using experiment::ExperimentResults;
using experiment::PairingSummary;

// ---------------------------------------------------------------------------------------------
// Heatmap

// "membw + storage": the heatmap row of a pairing.
std::string RowLabel(const PairingSummary& p) {
  if (p.antagonists.empty()) return p.pairing;
  std::string s;
  for (const auto& a : p.antagonists) s += (s.empty() ? "" : " + ") + a.name;
  return s;
}

// "0.5", or "1 / 2GiB/s" for several antagonists at different intensities: the column.
std::string ColumnLabel(const PairingSummary& p) {
  if (p.antagonists.empty()) return "";
  std::string s;
  bool same = true;
  for (const auto& a : p.antagonists) {
    same = same && a.intensity == p.antagonists.front().intensity;
    s += (s.empty() ? "" : " / ") + a.intensity;
  }
  return same ? p.antagonists.front().intensity : s;
}

// Levels (plain numbers) ascending, then absolute rates ascending, then anything else as seen.
struct ColumnOrder {
  int kind;
  double value;
  size_t seen;
  bool operator<(const ColumnOrder& o) const {
    if (kind != o.kind) return kind < o.kind;
    if (value != o.value) return value < o.value;
    return seen < o.seen;
  }
};

ColumnOrder OrderOf(const std::string& label, size_t seen) {
  if (auto n = ParseNumber(label); n.ok()) return {0, *n, seen};
  if (auto r = ParseRate(label); r.ok()) return {1, r->value, seen};
  return {2, 0, seen};
}

std::string CellTitle(const PairingSummary& p, const ExperimentResults& r) {
  std::string t = p.pairing + "\nslowdown " + Slowdown(p.slowdown);
  if (std::isfinite(p.ci_low)) {
    t += " " + CiLabel(p.ci_low, p.ci_high) + " (" + Percent(r.confidence) + " bootstrap CI)";
  }
  t += "\nmedian " + Duration(p.median_metric);
  t += "\nn = " + std::to_string(p.n) + " measured";
  if (p.n_failed) t += ", " + std::to_string(p.n_failed) + " failed";
  if (p.n_flagged) t += ", " + std::to_string(p.n_flagged) + " flagged";
  if (p.n_not_run) t += ", " + std::to_string(p.n_not_run) + " not run";
  t += "\np = " + PValue(p.p_value);
  if (p.p_method != experiment::MannWhitneyMethod::kNone) {
    t += std::string(" (Mann-Whitney U, ") + ToString(p.p_method) + ")";
  }
  for (const auto& a : p.antagonists) {
    t += "\n" + a.name + " (" + a.injector + "): achieved " + RateLabel(a.achieved_rate, a.unit);
    if (std::isfinite(a.target_rate) && a.target_rate > 0 && std::isfinite(a.achieved_rate)) {
      t += " = " + Percent(a.achieved_rate / a.target_rate) + " of target";
    }
  }
  return t;
}

// A vertical colour bar for the slowdown scale, its top at (x, y).
void ColourLegend(Svg& svg, double x, double y, double height, double max) {
  constexpr int kSteps = 48;
  const Scale s{1, max, y + height, y};
  for (int i = 0; i < kSteps; ++i) {
    const double v0 = 1 + (max - 1) * i / kSteps, v1 = 1 + (max - 1) * (i + 1) / kSteps;
    svg.Rect(x, s(v1), 14, s(v0) - s(v1) + 0.5,
             "fill=\"" + SlowdownColour((v0 + v1) / 2, max) + "\"");
  }
  svg.Rect(x, y, 14, height, "fill=\"none\" stroke=\"#999\"");
  svg.Open("g", "class=\"axis\"");
  for (double t : NiceTicks(1, max, 4)) {
    svg.Line(x + 14, s(t), x + 18, s(t), "class=\"tick\"");
    svg.Text(x + 21, s(t) + 4, Slowdown(t));
  }
  svg.Close("g");
  svg.Text(x - 2, y - 10, "slowdown", "class=\"axis-title\"");
}

}  // namespace

std::string RenderHeatmap(const ExperimentResults& results) {
  std::vector<std::string> rows;
  std::vector<std::pair<ColumnOrder, std::string>> columns;
  std::map<std::pair<std::string, std::string>, const PairingSummary*> cells;
  double max = 1.25;  // a 1.02x slowdown must not paint dark red
  for (const auto& p : results.pairings) {
    if (p.baseline) continue;
    std::string row = RowLabel(p), col = ColumnLabel(p);
    if (cells.count({row, col})) col = p.pairing;  // cannot happen for distinct keys; be safe
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    if (std::none_of(columns.begin(), columns.end(), [&](auto& c) { return c.second == col; })) {
      columns.push_back({OrderOf(col, columns.size()), col});
    }
    cells[{row, col}] = &p;
    if (std::isfinite(p.slowdown)) max = std::max(max, p.slowdown);
  }
  if (cells.empty()) {
    return "<p class=\"empty\">No interference pairings in this experiment yet.</p>\n";
  }
  std::sort(columns.begin(), columns.end());

  size_t longest = 0;
  for (const auto& r : rows) longest = std::max(longest, r.size());
  constexpr double kCellW = 148, kCellH = 74, kGap = 4, kTop = 58, kLegendW = 110;
  const double left = std::clamp(30.0 + 8.5 * longest, 110.0, 300.0);
  const double grid_w = columns.size() * (kCellW + kGap);
  const double grid_h = rows.size() * (kCellH + kGap);
  const double width = left + grid_w + kLegendW;
  const double height = kTop + std::max(grid_h, 170.0) + 10;

  Svg svg(width, height, "heatmap", "slowdown heatmap: antagonists by intensity");
  svg.Text(left + grid_w / 2, 16, "intensity (level = fraction of calibrated peak, or rate)",
           "class=\"axis-title\" text-anchor=\"middle\"");
  for (size_t c = 0; c < columns.size(); ++c) {
    svg.Text(left + c * (kCellW + kGap) + kCellW / 2, kTop - 12, columns[c].second,
             "class=\"col-label\" text-anchor=\"middle\"");
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = kTop + r * (kCellH + kGap);
    svg.Text(left - 12, y + kCellH / 2 + 5, rows[r], "class=\"row-label\" text-anchor=\"end\"");
    for (size_t c = 0; c < columns.size(); ++c) {
      const double x = left + c * (kCellW + kGap);
      auto it = cells.find({rows[r], columns[c].second});
      if (it == cells.end()) {  // not in the plan: an empty slot, so the grid stays readable
        svg.Rect(x + 0.5, y + 0.5, kCellW - 1, kCellH - 1, "class=\"slot\" rx=\"3\"");
        continue;
      }
      const PairingSummary& p = *it->second;
      const std::string ink = DarkTextOn(p.slowdown, max) ? "#1f1f1f" : "#ffffff";
      svg.Open("g", "class=\"cell\" data-pairing=\"" + Escape(p.pairing) + "\"");
      svg.Title(CellTitle(p, results));
      svg.Rect(x, y, kCellW, kCellH, "rx=\"3\" fill=\"" + SlowdownColour(p.slowdown, max) + "\"");
      const double cx = x + kCellW / 2;
      svg.Text(cx, y + 30, Slowdown(p.slowdown),
               "class=\"cell-value\" text-anchor=\"middle\" fill=\"" + ink + "\"");
      const std::string ci = CiLabel(p.ci_low, p.ci_high);
      svg.Text(cx, y + 48, ci.empty() ? "no CI" : ci,
               "class=\"cell-ci\" text-anchor=\"middle\" fill=\"" + ink + "\"");
      svg.Text(cx, y + 64, "n=" + std::to_string(p.n) + " \u00b7 p=" + PValue(p.p_value),
               "class=\"cell-np\" text-anchor=\"middle\" fill=\"" + ink + "\"");
      if (p.n_failed || p.n_flagged) {  // excluded trials: a corner mark, details on hover
        svg.Text(x + kCellW - 6, y + 14, "\u26a0",
                 "class=\"cell-warn\" text-anchor=\"end\" fill=\"" + ink + "\"");
      }
      svg.Close("g");
    }
  }
  ColourLegend(svg, left + grid_w + 22, kTop + 8, 150, max);
  return svg.Finish();
}

// ---------------------------------------------------------------------------------------------
// Sensitivity curves

namespace {

struct CurvePoint {
  double x = 0;
  const PairingSummary* pairing = nullptr;
  const AntagonistSummary* antagonist = nullptr;
};

struct Curve {
  std::string name;
  std::string injector;
  std::string unit;
  bool fraction_of_peak = true;  // x as a fraction of peak for every point, else in `unit`
  std::string x_unit;            // the x axis' rate unit when not a fraction, e.g. "GiB/s"
  std::vector<CurvePoint> points;
  std::vector<double> peak;  // per point; NaN when unknown
};

// Mean calibrated peak of `name` over the trials of `pairing`; NaN when none recorded it.
double PeakOf(const std::string& pairing, const AntagonistSummary& a,
              const std::vector<TrialRecord>& trials) {
  double sum = 0;
  int n = 0;
  for (const auto& t : trials) {
    if (t.pairing != pairing) continue;
    for (const auto& r : t.antagonists) {
      if (r.name == a.name && r.peak_rate > 0 && std::isfinite(r.peak_rate)) {
        sum += r.peak_rate;
        ++n;
      }
    }
  }
  if (n) return sum / n;
  if (a.level > 0 && std::isfinite(a.target_rate) && a.target_rate > 0) {
    return a.target_rate / a.level;
  }
  return experiment::kNaN;
}

std::string CurveChart(const Curve& c, size_t index, double y_lo, double y_hi,
                       const PairingSummary* baseline) {
  constexpr double kW = 430, kH = 290, kLeft = 66, kRight = 18, kTop = 34, kBottom = 54;
  double x_hi = 0;
  for (const auto& p : c.points) x_hi = std::max(x_hi, p.x);
  if (c.fraction_of_peak) x_hi = std::max(x_hi, 1.0);
  double x_lo = 0;
  NiceDomain(&x_lo, &x_hi, 4);
  const Scale x{x_lo, x_hi, kLeft, kW - kRight};
  const Scale y{y_lo, y_hi, kH - kBottom, kTop};
  const std::string colour = SeriesColour(index);

  Svg svg(kW, kH, "curve", "sensitivity of the victim to " + c.name);
  svg.Text(kLeft, 18, c.name + (c.injector.empty() ? "" : " (" + c.injector + ")"),
           "class=\"chart-title\"");
  const std::string unit = c.unit.empty() ? "bytes/s" : c.unit;
  TickFormat x_label = [&](double v) { return c.fraction_of_peak ? Percent(v) : Tick(v); };
  BottomAxis(svg, x, y, NiceTicks(x_lo, x_hi, 4), x_label,
             c.fraction_of_peak ? "achieved intensity (% of calibrated peak)"
                                : "achieved rate (" + c.x_unit + ")");
  LeftAxis(
      svg, x, y, NiceTicks(y_lo, y_hi, 5), [](double v) { return Slowdown(v); },
      "slowdown (median step time \u00f7 baseline)");
  if (y_lo <= 1 && 1 <= y_hi) svg.Line(x.r0, y(1), x.r1, y(1), "class=\"ref\"");

  std::vector<std::pair<double, double>> line;
  if (baseline) line.push_back({x(0), y(1)});
  for (const auto& p : c.points) {
    if (std::isfinite(p.pairing->slowdown)) line.push_back({x(p.x), y(p.pairing->slowdown)});
  }
  if (line.size() > 1) svg.Polyline(line, "stroke=\"" + colour + "\" stroke-width=\"2\"");
  if (baseline) {
    svg.Open("g", "class=\"point\"");
    svg.Title("baseline (no antagonist): slowdown 1.00\u00d7 by definition, median " +
              Duration(baseline->median_metric) + ", n=" + std::to_string(baseline->n));
    svg.Circle(x(0), y(1), 4.5, "fill=\"#fff\" stroke=\"" + colour + "\" stroke-width=\"2\"");
    svg.Close("g");
  }
  for (const auto& p : c.points) {
    const PairingSummary& s = *p.pairing;
    if (!std::isfinite(s.slowdown)) continue;
    const double px = x(p.x);
    svg.Open("g", "class=\"point\" data-pairing=\"" + Escape(s.pairing) + "\"");
    std::string title = s.pairing + "\nslowdown " + Slowdown(s.slowdown) + " " +
                        CiLabel(s.ci_low, s.ci_high) + "\nachieved " +
                        RateLabel(p.antagonist->achieved_rate, unit);
    if (c.fraction_of_peak) title += " (" + Percent(p.x, 1) + " of peak)";
    title += "\nn=" + std::to_string(s.n) + ", p=" + PValue(s.p_value);
    svg.Title(title);
    if (std::isfinite(s.ci_low) && std::isfinite(s.ci_high)) {
      const std::string bar = "stroke=\"" + colour + "\" stroke-width=\"1.5\"";
      svg.Line(px, y(s.ci_low), px, y(s.ci_high), bar);
      svg.Line(px - 5, y(s.ci_low), px + 5, y(s.ci_low), bar);
      svg.Line(px - 5, y(s.ci_high), px + 5, y(s.ci_high), bar);
    }
    svg.Circle(px, y(s.slowdown), 4.5, "fill=\"" + colour + "\" stroke=\"#fff\"");
    svg.Close("g");
  }
  return svg.Finish();
}

}  // namespace

std::string RenderSensitivityCurves(const ExperimentResults& results,
                                    const std::vector<TrialRecord>& trials) {
  std::vector<Curve> curves;
  std::vector<std::string> combined, skipped;
  const PairingSummary* baseline = nullptr;
  for (const auto& p : results.pairings) {
    if (p.baseline) {
      if (p.n > 0 && std::isfinite(p.slowdown)) baseline = &p;
      continue;
    }
    if (p.antagonists.size() != 1) {
      combined.push_back(p.pairing);
      continue;
    }
    const AntagonistSummary& a = p.antagonists.front();
    if (!std::isfinite(a.achieved_rate) || !std::isfinite(p.slowdown)) {
      skipped.push_back(p.pairing);
      continue;
    }
    auto it = std::find_if(curves.begin(), curves.end(), [&](auto& c) { return c.name == a.name; });
    if (it == curves.end()) {
      curves.push_back({a.name, a.injector, a.unit, true, "", {}, {}});
      it = curves.end() - 1;
    }
    it->points.push_back({a.achieved_rate, &p, &a});
    it->peak.push_back(PeakOf(p.pairing, a, trials));
  }

  std::string html;
  if (curves.empty()) {
    html +=
        "<p class=\"empty\">No pairing with a single antagonist has a measured slowdown "
        "and achieved rate yet.</p>\n";
  } else {
    double y_lo = 1, y_hi = 1;
    for (const auto& c : curves) {
      for (const auto& p : c.points) {
        for (double v : {p.pairing->slowdown, p.pairing->ci_low, p.pairing->ci_high}) {
          if (std::isfinite(v)) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
        }
      }
    }
    NiceDomain(&y_lo, &y_hi, 5);
    html += "<div class=\"charts\">\n";
    for (size_t i = 0; i < curves.size(); ++i) {
      Curve& c = curves[i];
      c.fraction_of_peak = std::all_of(c.peak.begin(), c.peak.end(),
                                       [](double v) { return std::isfinite(v) && v > 0; });
      double x_max = 0;
      for (const auto& p : c.points) x_max = std::max(x_max, p.x);
      const DisplayUnit unit = RateDisplayUnit(x_max, c.unit);
      c.x_unit = unit.label;
      for (size_t k = 0; k < c.points.size(); ++k) {
        c.points[k].x /= c.fraction_of_peak ? c.peak[k] : unit.divisor;
      }
      std::sort(c.points.begin(), c.points.end(),
                [](const CurvePoint& a, const CurvePoint& b) { return a.x < b.x; });
      html += CurveChart(c, i, y_lo, y_hi, baseline);
    }
    html += "</div>\n";
  }
  auto list = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "" : ", ") + ("<code>" + Escape(k) + "</code>");
    return s;
  };
  if (!combined.empty()) {
    html += "<p class=\"note\">Pairings with several antagonists at once (" + list(combined) +
            ") are in the heatmap and the table: a curve varies one antagonist.</p>\n";
  }
  if (!skipped.empty()) {
    html += "<p class=\"note\">Without a measured slowdown or achieved rate, so not drawn: " +
            list(skipped) + ".</p>\n";
  }
  return html;
}

}  // namespace codl::report
