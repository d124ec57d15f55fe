// The compare section: what changed between experiments, pairing by pairing.
#include "lib/report/compare_section.h"

#include <algorithm>
#include <cmath>

#include "lib/report/svg.h"

namespace codl::report {
namespace {

using experiment::Comparison;

struct Point {
  std::string label;  // "membw@0.5: #2/#1"
  double ratio, low, high;
};

std::vector<Point> Points(const Comparison& c) {
  std::vector<Point> points;
  for (const auto& p : c.pairings) {
    if (!p.matched) continue;
    for (size_t k = 0; k < p.ratios.size(); ++k) {
      const auto& r = p.ratios[k];
      if (!std::isfinite(r.ratio)) continue;
      points.push_back(
          {p.pairing + ": #" + std::to_string(k + 2) + "/#1", r.ratio, r.ci_low, r.ci_high});
    }
  }
  return points;
}

// One row per ratio: the point, its CI as a whisker, and the no-change line at 1.
std::string RatioChart(const std::vector<Point>& points) {
  if (points.empty()) return "<p class=\"empty\">No ratio to plot.</p>\n";
  double lo = 1, hi = 1;
  for (const auto& p : points) {
    lo = std::min({lo, p.ratio, std::isfinite(p.low) ? p.low : p.ratio});
    hi = std::max({hi, p.ratio, std::isfinite(p.high) ? p.high : p.ratio});
  }
  NiceDomain(&lo, &hi);
  const double left = 260, width = 420, row = 24, top = 10;
  const double height = top + row * static_cast<double>(points.size()) + 40;
  const Scale x{lo, hi, left, left + width};
  const Scale y{0, 1, height - 40, top};
  Svg svg(left + width + 20, height, "compare-chart", "ratio of slowdowns");
  BottomAxis(svg, x, y, NiceTicks(lo, hi), Tick, "slowdown ratio (later / first)");
  svg.Line(x(1), top, x(1), height - 40, "class=\"ref\"");
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const double cy = top + row * (static_cast<double>(i) + 0.5);
    svg.Text(left - 8, cy + 4, p.label, "text-anchor=\"end\"");
    if (std::isfinite(p.low)) svg.Line(x(p.low), cy, x(p.high), cy, "stroke=\"#444\"");
    svg.Circle(x(p.ratio), cy, 4, "fill=\"" + SeriesColour(0) + "\"")
        .Title(p.label + " " + Fixed(p.ratio, 2) + " " + CiLabel(p.low, p.high));
  }
  return svg.Finish();
}

std::string Cell(double v, double low, double high, bool present) {
  if (!present) return "<td>" + std::string(kMissing) + "</td>";
  return "<td>" + Slowdown(v) + " " +
         (std::isfinite(low) ? CiLabel(low, high) : "[n/a: n &lt; 3]") + "</td>";
}

std::string Table(const Comparison& c) {
  std::string h = "<div class=\"scroll\"><table>\n<tr><th>pairing</th>";
  for (size_t i = 0; i < c.experiments.size(); ++i)
    h += "<th>#" + std::to_string(i + 1) + " " + Escape(c.experiments[i].first) + "</th>";
  for (size_t i = 1; i < c.experiments.size(); ++i)
    h += "<th>#" + std::to_string(i + 1) + "/#1</th>";
  h += "</tr>\n";
  std::string unmatched;
  for (const auto& p : c.pairings) {
    if (!p.matched) {
      unmatched += "<li><code>" + Escape(p.pairing) + "</code></li>";
      continue;
    }
    h += "<tr><td><code>" + Escape(p.pairing) + "</code></td>";
    for (const auto& cell : p.cells)
      h += Cell(cell.slowdown, cell.ci_low, cell.ci_high, cell.present);
    for (size_t k = 0; k < p.ratios.size(); ++k)
      h += Cell(p.ratios[k].ratio, p.ratios[k].ci_low, p.ratios[k].ci_high, p.cells[k + 1].present);
    h += "</tr>\n";
  }
  h += "</table></div>\n";
  if (!unmatched.empty())
    h += "<p class=\"note\">Run by only one experiment, not compared:</p><ul>" + unmatched +
         "</ul>\n";
  return h;
}

}  // namespace

std::string RenderCompareSection(const Comparison& c) {
  std::string experiments;
  for (size_t i = 0; i < c.experiments.size(); ++i)
    experiments += (i ? ", " : "") + std::string("#") + std::to_string(i + 1) + " <code>" +
                   Escape(c.experiments[i].first) + "</code> (" + Escape(c.experiments[i].second) +
                   ")";
  return "<section id=\"compare\">\n<h2>Comparison of experiments</h2>\n<p class=\"lede\">" +
         experiments + ". Metric <code>" + Escape(c.metric) +
         "</code>; each ratio is a later experiment's slowdown over the first's, with a " +
         Percent(c.confidence) +
         " percentile-bootstrap interval (baseline and interfered trials of both experiments "
         "resampled). A ratio above 1: the interference hurt more.</p>\n" +
         RatioChart(Points(c)) + Table(c) + "</section>\n";
}

std::string RenderComparePage(const Comparison& c) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<title>CoDL comparison</title>\n<style>\n"
         "body { font: 14px/1.45 system-ui, sans-serif; margin: 24px 32px; color: #1f1f1f; }\n"
         "table { border-collapse: collapse; } td, th { padding: 3px 10px; text-align: left; "
         "border-bottom: 1px solid #e2e2e2; font-variant-numeric: tabular-nums; }\n"
         ".lede, .note, .empty { color: #666; max-width: 1100px; }\n"
         ".ref { stroke: #888; stroke-dasharray: 4 4; } .grid { stroke: #eee; }\n"
         ".tick, .domain { stroke: #999; } svg { font-size: 12px; }\n"
         "</style></head><body>\n<h1>CoDL comparison</h1>\n" +
         RenderCompareSection(c) + "</body></html>\n";
}

}  // namespace codl::report
