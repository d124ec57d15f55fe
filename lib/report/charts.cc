// The slowdown heatmap and the sensitivity curves: charts of the per-pairing summaries.
#include "lib/report/charts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "lib/analysis/pairing_order.h"
#include "lib/common/csv.h"
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
  t += "\nmedian " + Duration(p.median_metric_s);
  t += "\nn = " + std::to_string(p.n) + " measured";
  if (p.n_failed) t += ", " + std::to_string(p.n_failed) + " failed";
  if (p.n_flagged) t += ", " + std::to_string(p.n_flagged) + " flagged";
  if (p.n_not_run) t += ", " + std::to_string(p.n_not_run) + " not run";
  t += "\np = " + PValue(p.p_value);
  if (p.p_method != experiment::MannWhitneyMethod::kNone) {
    t += std::string(" (Mann-Whitney U, ") + ToString(p.p_method) + ")";
  }
  t += "; Holm-adjusted " + PValue(p.p_holm) +
       (Significant(p) ? ": significant" : ": not significant") + " at " + Fixed(kAlpha, 2);
  for (const auto& a : p.antagonists) {
    t += "\n" + a.name + " (" + a.injector + "): achieved " + RateLabel(a.achieved_rate, a.unit);
    if (std::isfinite(a.target_rate) && a.target_rate > 0 && std::isfinite(a.achieved_rate)) {
      t += " = " + Percent(a.achieved_rate / a.target_rate) + " of target";
    }
    if (std::isfinite(a.cores)) t += ", " + Fixed(a.cores, 2) + " cores";
  }
  return t;
}

// The colour scale's top: a round number at or above the largest cell, and its ticks, the
// last of which is that top (so the bar's label covers every cell).
struct ColourScale {
  double max = 1.25;
  std::vector<double> ticks;
};

ColourScale MakeColourScale(double largest) {
  ColourScale c;
  double lo = 1, hi = std::max(largest, 1.25);  // a 1.02x slowdown must not paint dark red
  NiceDomain(&lo, &hi, 4);
  c.max = hi;
  c.ticks = NiceTicks(1, hi, 4);
  if (c.ticks.empty() || c.ticks.back() < hi - 1e-9) c.ticks.push_back(hi);
  return c;
}

// A vertical colour bar for the slowdown scale, its top at (x, y).
void ColourLegend(Svg& svg, double x, double y, double height, const ColourScale& c) {
  constexpr int kSteps = 48;
  const double max = c.max;
  const Scale s{1, max, y + height, y};
  svg.Open("g", "class=\"colour-bar\" data-max=\"" + Tick(max) + "\"");
  for (int i = 0; i < kSteps; ++i) {
    const double v0 = 1 + (max - 1) * i / kSteps, v1 = 1 + (max - 1) * (i + 1) / kSteps;
    svg.Rect(x, s(v1), 14, s(v0) - s(v1) + 0.5,
             "fill=\"" + SlowdownColour((v0 + v1) / 2, max) + "\"");
  }
  svg.Rect(x, y, 14, height, "fill=\"none\" stroke=\"#999\"");
  svg.Open("g", "class=\"axis\"");
  for (double t : c.ticks) {
    svg.Line(x + 14, s(t), x + 18, s(t), "class=\"tick\"");
    svg.Text(x + 21, s(t) + 4, Slowdown(t));
  }
  svg.Close("g");
  svg.Close("g");
  svg.Text(x - 2, y - 10, "slowdown", "class=\"axis-title\"");
}

// Diagonal hatching over a rectangle, drawn as clipped lines (no <pattern>: the page holds no
// url() references, and the figure stays one flat file).
void Hatch(Svg& svg, double x, double y, double w, double h) {
  constexpr double kSpacing = 7;
  for (double d = kSpacing; d < w + h; d += kSpacing) {
    svg.Line(x + std::max(0.0, d - h), y + std::min(d, h), x + std::min(d, w),
             y + std::max(0.0, d - w), "stroke=\"#c4c4c4\" stroke-width=\"1.2\"");
  }
}

// The hatched swatch and its meaning, below the colour bar.
void NotSignificantLegend(Svg& svg, double x, double y) {
  svg.Open("g", "class=\"ns-legend\"");
  svg.Rect(x, y, 14, 14, "fill=\"#efefef\"");
  Hatch(svg, x, y, 14, 14);
  svg.Rect(x, y, 14, 14, "fill=\"none\" stroke=\"#999\"");
  svg.Text(x + 20, y + 11, "not significant", "class=\"legend\"");
  svg.Text(x + 20, y + 27, "(Holm p \u2265 " + Fixed(kAlpha, 2) + " or n < 3)",
           "class=\"legend\" font-size=\"11\"");
  svg.Close("g");
}

constexpr const char* kNotSignificantFill = "#efefef";

void DrawCell(Svg& svg, const PairingSummary& p, const ExperimentResults& results, double x,
              double y, double w, double h, double max) {
  const bool sig = Significant(p);
  const std::string ink = !sig || DarkTextOn(p.slowdown, max) ? "#1f1f1f" : "#ffffff";
  svg.Open("g", "class=\"cell\" data-pairing=\"" + Escape(p.pairing) + "\" data-significant=\"" +
                    (sig ? "true" : "false") + "\"");
  svg.Title(CellTitle(p, results));
  svg.Rect(
      x, y, w, h,
      "rx=\"3\" fill=\"" + (sig ? SlowdownColour(p.slowdown, max) : kNotSignificantFill) + "\"");
  if (!sig) Hatch(svg, x, y, w, h);
  const double cx = x + w / 2;
  svg.Text(cx, y + 30, Slowdown(p.slowdown),
           "class=\"cell-value\" text-anchor=\"middle\" fill=\"" + ink + "\"");
  const std::string ci = CiLabel(p.ci_low, p.ci_high);
  svg.Text(cx, y + 48, ci.empty() ? "no CI" : ci,
           "class=\"cell-ci\" text-anchor=\"middle\" fill=\"" + ink + "\"");
  svg.Text(cx, y + 64, "n=" + std::to_string(p.n) + " \u00b7 adj. p=" + PValue(p.p_holm),
           "class=\"cell-np\" text-anchor=\"middle\" fill=\"" + ink + "\"");
  if (p.n_failed || p.n_flagged) {  // excluded trials: a corner mark, details on hover
    svg.Text(x + w - 6, y + 14, "\u26a0",
             "class=\"cell-warn\" text-anchor=\"end\" fill=\"" + ink + "\"");
  }
  svg.Close("g");
}

std::string HeatmapCsvRow(const PairingSummary& p, const std::string& row, const std::string& col) {
  return CsvField(CsvText(p.pairing)) + "," + CsvField(CsvText(row)) + "," +
         CsvField(CsvText(col)) + "," + CsvNumber(p.slowdown) + "," + CsvNumber(p.ci_low) + "," +
         CsvNumber(p.ci_high) + "," + std::to_string(p.n) + "," + CsvNumber(p.p_value) + "," +
         CsvNumber(p.p_holm) + "," + (Significant(p) ? "true" : "false") + "\n";
}

}  // namespace

bool Significant(const PairingSummary& p) {
  return !p.baseline && p.n >= 3 && !p.ci_small_n && std::isfinite(p.p_holm) && p.p_holm < kAlpha;
}

std::string CsvNumber(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Figure HeatmapFigure(const ExperimentResults& results) {
  Figure f;
  f.name = "heatmap";
  f.csv = "pairing,antagonists,intensity,slowdown,ci_low,ci_high,n,p_value,p_holm,significant\n";
  std::vector<std::string> rows;
  std::vector<std::pair<ColumnOrder, std::string>> columns;
  std::map<std::pair<std::string, std::string>, const PairingSummary*> cells;
  double largest = 1;
  for (const PairingSummary* sorted : experiment::SortedPairings(results)) {
    const PairingSummary& p = *sorted;
    if (p.baseline) continue;
    std::string row = RowLabel(p), col = ColumnLabel(p);
    if (cells.count({row, col})) col = p.pairing;  // cannot happen for distinct keys; be safe
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    if (std::none_of(columns.begin(), columns.end(), [&](auto& c) { return c.second == col; })) {
      columns.push_back({OrderOf(col, columns.size()), col});
    }
    cells[{row, col}] = &p;
    if (std::isfinite(p.slowdown)) largest = std::max(largest, p.slowdown);
    f.csv += HeatmapCsvRow(p, row, col);
  }
  if (cells.empty()) {
    f.empty = "<p class=\"empty\">No interference pairings in this experiment yet.</p>\n";
    return f;
  }
  std::sort(columns.begin(), columns.end());
  const ColourScale colours = MakeColourScale(largest);

  double longest = 0;
  for (const auto& r : rows) longest = std::max(longest, TextWidth(r, 14));  // 13 px bold
  constexpr double kCellW = 148, kCellH = 74, kGap = 4, kTop = 58, kLegendW = 200;
  const double left = std::max(30.0 + longest, 110.0);
  const double grid_w = columns.size() * (kCellW + kGap);
  const double grid_h = rows.size() * (kCellH + kGap);
  const double width = left + grid_w + kLegendW;
  const double height = kTop + std::max(grid_h, 215.0) + 10;

  Svg svg(width, height, "heatmap", "slowdown heatmap: antagonists by intensity");
  const std::string title = "intensity (fraction of peak, or rate)";
  const double title_x = std::max(left + grid_w / 2, TextWidth(title, 12) / 2 + 4);
  svg.Text(title_x, 16, title, "class=\"axis-title\" text-anchor=\"middle\"");
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
      DrawCell(svg, *it->second, results, x, y, kCellW, kCellH, colours.max);
    }
  }
  ColourLegend(svg, left + grid_w + 22, kTop + 8, 150, colours);
  NotSignificantLegend(svg, left + grid_w + 22, kTop + 178);
  f.svg = svg.Finish();
  return f;
}

// ---------------------------------------------------------------------------------------------
// Sensitivity curves

namespace {

struct CurvePoint {
  double x = 0;
  const PairingSummary* pairing = nullptr;
  const AntagonistSummary* antagonist = nullptr;
  double peak = experiment::kNaN;  // calibrated peak of its trials; NaN when unknown
};

struct Curve {
  std::string name;
  std::string injector;
  std::string unit;
  bool fraction_of_peak = true;  // x as a fraction of peak for every point, else in `unit`
  std::string x_unit;            // the x axis' rate unit when not a fraction, e.g. "GiB/s"
  std::vector<CurvePoint> points;
};

// "peak 18.6 GiB/s · 1.02 cores": what the curve's x axis is relative to, and what the
// antagonist cost in CPU (an antagonist that eats cores interferes through them too).
std::string CurveSubtitle(const Curve& c) {
  double peak = 0, cores = 0;
  int n_peak = 0, n_cores = 0;
  for (const CurvePoint& p : c.points) {
    if (std::isfinite(p.peak) && p.peak > 0) peak += p.peak, ++n_peak;
    if (std::isfinite(p.antagonist->cores)) cores += p.antagonist->cores, ++n_cores;
  }
  std::string s = n_peak ? "calibrated peak " + RateLabel(peak / n_peak, c.unit) : "no calibration";
  s += " \u00b7 " + (n_cores ? Fixed(cores / n_cores, 2) + " CPU cores" : "CPU not measured");
  return s;
}

// File-name-safe: letters, digits, '-', '_' and '.' kept, anything else '_'.
std::string FileSafe(const std::string& name) {
  std::string s;
  for (char ch : name)
    s += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' ? ch
                                                                                             : '_';
  return s.empty() || s[0] == '.' ? "_" + s : s;
}

std::string CurveCsv(const Curve& c) {
  std::string csv =
      "antagonist,injector,pairing,intensity,achieved_rate,unit,peak_rate,cores,x,x_unit,"
      "slowdown,ci_low,ci_high,n,p_holm,significant\n";
  const std::string x_unit = c.fraction_of_peak ? "fraction of peak" : c.x_unit;
  for (const CurvePoint& p : c.points) {
    const PairingSummary& s = *p.pairing;
    csv += CsvField(CsvText(c.name)) + "," + CsvField(CsvText(c.injector)) + "," +
           CsvField(CsvText(s.pairing)) + "," + CsvField(CsvText(p.antagonist->intensity)) + "," +
           CsvNumber(p.antagonist->achieved_rate) + "," + CsvField(CsvText(c.unit)) + "," +
           CsvNumber(p.peak) + "," + CsvNumber(p.antagonist->cores) + "," + CsvNumber(p.x) + "," +
           CsvField(CsvText(x_unit)) + "," + CsvNumber(s.slowdown) + "," + CsvNumber(s.ci_low) +
           "," + CsvNumber(s.ci_high) + "," + std::to_string(s.n) + "," + CsvNumber(s.p_holm) +
           "," + (Significant(s) ? "true" : "false") + "\n";
  }
  return csv;
}

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

// `tolerance` (may be null): its threshold as a dashed line, and the levels it was resolved
// between as a band (requested levels: on this axis of achieved intensity, close to them).
std::string CurveChart(const Curve& c, size_t index, double y_lo, double y_hi,
                       const PairingSummary* baseline,
                       const experiment::ToleranceResult* tolerance) {
  constexpr double kW = 430, kH = 300, kLeft = 66, kRight = 18, kTop = 48, kBottom = 54;
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
  svg.Text(kLeft, 34, CurveSubtitle(c), "class=\"chart-sub\"");
  const std::string unit = c.unit.empty() ? "bytes/s" : c.unit;
  TickFormat x_label = [&](double v) { return c.fraction_of_peak ? Percent(v) : Tick(v); };
  BottomAxis(svg, x, y, NiceTicks(x_lo, x_hi, 4), x_label,
             c.fraction_of_peak ? "achieved intensity (% of calibrated peak)"
                                : "achieved rate (" + c.x_unit + ")");
  LeftAxis(
      svg, x, y, NiceTicks(y_lo, y_hi, 5), [](double v) { return Slowdown(v); },
      "slowdown (\u00d7 baseline)");
  if (y_lo <= 1 && 1 <= y_hi) svg.Line(x.r0, y(1), x.r1, y(1), "class=\"ref\"");
  if (tolerance != nullptr && c.fraction_of_peak) {
    const double lo = tolerance->tolerated_level;
    const double hi =
        std::isfinite(tolerance->breaks_level) ? tolerance->breaks_level : std::min(1.0, x_hi);
    svg.Open("g", "class=\"tolerance\"");
    svg.Title(experiment::ToleranceLine(*tolerance));
    svg.Rect(x(lo), y.r1, std::max(1.0, x(hi) - x(lo)), y.r0 - y.r1,
             "fill=\"#f4a261\" fill-opacity=\"0.18\"");
    if (y_lo <= tolerance->threshold && tolerance->threshold <= y_hi) {
      svg.Line(x.r0, y(tolerance->threshold), x.r1, y(tolerance->threshold),
               "stroke=\"#e76f51\" stroke-dasharray=\"5 3\"");
    }
    svg.Close("g");
  }

  std::vector<std::pair<double, double>> line;
  if (baseline) line.push_back({x(0), y(1)});
  for (const auto& p : c.points) {
    if (std::isfinite(p.pairing->slowdown)) line.push_back({x(p.x), y(p.pairing->slowdown)});
  }
  if (line.size() > 1) svg.Polyline(line, "stroke=\"" + colour + "\" stroke-width=\"2\"");
  if (baseline) {
    svg.Open("g", "class=\"point\"");
    svg.Title("baseline (no antagonist): slowdown 1.00\u00d7 by definition, median " +
              Duration(baseline->median_metric_s) + ", n=" + std::to_string(baseline->n));
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
    title += "\nn=" + std::to_string(s.n) + ", p=" + PValue(s.p_value) + ", Holm-adjusted " +
             PValue(s.p_holm) + (Significant(s) ? " (significant)" : " (not significant)");
    svg.Title(title);
    if (std::isfinite(s.ci_low) && std::isfinite(s.ci_high)) {
      const std::string bar = "stroke=\"" + colour + "\" stroke-width=\"1.5\"";
      svg.Line(px, y(s.ci_low), px, y(s.ci_high), bar);
      svg.Line(px - 5, y(s.ci_low), px + 5, y(s.ci_low), bar);
      svg.Line(px - 5, y(s.ci_high), px + 5, y(s.ci_high), bar);
    }
    // Faded when not significant after the Holm adjustment (the caption says so).
    svg.Circle(px, y(s.slowdown), 4.5,
               "fill=\"" + colour + "\" stroke=\"#fff\"" +
                   (Significant(s) ? "" : " fill-opacity=\"0.35\" class=\"ns\""));
    svg.Close("g");
  }
  return svg.Finish();
}

}  // namespace

SensitivitySet SensitivityFigures(const ExperimentResults& results,
                                  const std::vector<TrialRecord>& trials) {
  std::vector<Curve> curves;
  std::vector<std::string> combined, skipped;
  const PairingSummary* baseline = nullptr;
  for (const PairingSummary* sorted : experiment::SortedPairings(results)) {
    const PairingSummary& p = *sorted;
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
      curves.push_back({a.name, a.injector, a.unit, true, "", {}});
      it = curves.end() - 1;
    }
    it->points.push_back({a.achieved_rate, &p, &a, PeakOf(p.pairing, a, trials)});
  }

  SensitivitySet set;
  if (curves.empty()) {
    set.notes +=
        "<p class=\"empty\">No pairing with a single antagonist has a measured slowdown "
        "and achieved rate yet.</p>\n";
  } else {
    double y_lo = 1, y_hi = 1;
    for (const auto& t : results.tolerance) y_hi = std::max(y_hi, t.threshold);
    for (const auto& c : curves) {
      for (const auto& p : c.points) {
        for (double v : {p.pairing->slowdown, p.pairing->ci_low, p.pairing->ci_high}) {
          if (std::isfinite(v)) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
        }
      }
    }
    NiceDomain(&y_lo, &y_hi, 5);
    for (size_t i = 0; i < curves.size(); ++i) {
      Curve& c = curves[i];
      c.fraction_of_peak = std::all_of(c.points.begin(), c.points.end(), [](const CurvePoint& p) {
        return std::isfinite(p.peak) && p.peak > 0;
      });
      double x_max = 0;
      for (const auto& p : c.points) x_max = std::max(x_max, p.x);
      const DisplayUnit unit = RateDisplayUnit(x_max, c.unit);
      c.x_unit = unit.label;
      for (auto& p : c.points) p.x /= c.fraction_of_peak ? p.peak : unit.divisor;
      std::sort(c.points.begin(), c.points.end(),
                [](const CurvePoint& a, const CurvePoint& b) { return a.x < b.x; });
      Figure f;
      f.name = "sensitivity-" + FileSafe(c.name);
      const experiment::ToleranceResult* tolerance = nullptr;
      for (const auto& t : results.tolerance) {
        if (t.name == c.name) tolerance = &t;
      }
      f.svg = CurveChart(c, i, y_lo, y_hi, baseline, tolerance);
      f.csv = CurveCsv(c);
      f.caption = Escape(c.name) + ": " + Escape(CurveSubtitle(c)) + ".";
      if (tolerance != nullptr) {
        f.caption +=
            " Dashed: the tolerance threshold; shaded: the levels its search was "
            "resolved between. " +
            Escape(experiment::ToleranceLine(*tolerance)) + ".";
      }
      set.charts.push_back(std::move(f));
    }
  }
  auto list = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "" : ", ") + ("<code>" + Escape(k) + "</code>");
    return s;
  };
  if (!combined.empty()) {
    set.notes += "<p class=\"note\">Pairings with several antagonists at once (" + list(combined) +
                 ") are in the heatmap and the table: a curve varies one antagonist.</p>\n";
  }
  if (!skipped.empty()) {
    set.notes += "<p class=\"note\">Without a measured slowdown or achieved rate, so not drawn: " +
                 list(skipped) + ".</p>\n";
  }
  return set;
}

}  // namespace codl::report
