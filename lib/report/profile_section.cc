#include "lib/report/profile_section.h"

#include <cmath>

#include "lib/analysis/profile.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

// The curve as a small inline chart: slowdown against level, the threshold dashed.
std::string Sparkline(const experiment::ProfileRow& row) {
  constexpr double kW = 150, kH = 36, kPad = 3;
  double hi = 1.0;
  for (const auto& p : row.curve) {
    if (std::isfinite(p.slowdown)) hi = std::max(hi, p.slowdown);
  }
  if (row.searched) hi = std::max(hi, row.tolerance.threshold);
  const double lo = 1.0, span = hi > lo ? hi - lo : 1;
  auto x = [&](double level) { return kPad + level * (kW - 2 * kPad); };
  auto y = [&](double s) {
    return kH - kPad - (std::min(std::max(s, lo), hi) - lo) / span * (kH - 2 * kPad);
  };
  std::string path = "M" + Fixed(x(0), 1) + "," + Fixed(y(1), 1);
  for (const auto& p : row.curve) {
    if (std::isfinite(p.slowdown))
      path += " L" + Fixed(x(p.level), 1) + "," + Fixed(y(p.slowdown), 1);
  }
  std::string svg = "<svg class=\"spark\" width=\"" + Fixed(kW, 0) + "\" height=\"" + Fixed(kH, 0) +
                    "\" viewBox=\"0 0 " + Fixed(kW, 0) + " " + Fixed(kH, 0) +
                    "\" role=\"img\"><title>" + Escape(experiment::ProfileCurveText(row)) +
                    "</title>";
  if (row.searched) {
    svg += "<line x1=\"" + Fixed(x(0), 1) + "\" x2=\"" + Fixed(x(1), 1) + "\" y1=\"" +
           Fixed(y(row.tolerance.threshold), 1) + "\" y2=\"" +
           Fixed(y(row.tolerance.threshold), 1) +
           "\" stroke=\"#e76f51\" stroke-dasharray=\"4 2\"/>";
  }
  svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#264653\" stroke-width=\"1.5\"/></svg>";
  return svg;
}

std::string CiCell(const experiment::ProfilePoint& p) {
  if (!std::isfinite(p.ci_low) || !std::isfinite(p.ci_high)) return " [n/a: n &lt; 3]";
  return " [" + Fixed(p.ci_low, 3) + ", " + Fixed(p.ci_high, 3) + "]";
}

}  // namespace

std::string RenderProfile(const experiment::ExperimentResults& results,
                          const std::map<std::string, std::string>& resources) {
  if (results.tolerance.empty()) return "";
  const experiment::InterferenceProfile profile =
      experiment::BuildProfile(results, experiment::ProfileAntagonists(results), resources);
  std::string rows;
  for (const auto& r : profile.rows) {
    const std::string at_peak =
        std::isfinite(r.at_level)
            ? Slowdown(r.strongest.slowdown) + CiCell(r.strongest) + (r.at_max ? " (max)" : "")
            : "&ndash;";
    rows += "<tr><td>" + Escape(r.resource.empty() ? r.injector : r.resource) + "</td><td>" +
            Escape(r.antagonist) + "</td><td>" + Sparkline(r) + "<br><small>" +
            Escape(experiment::ProfileCurveText(r)) + "</small></td><td class=\"num\">" +
            Escape(experiment::ProfileToleratesText(r)) + "</td><td class=\"num\">" +
            Escape(experiment::ProfileBreaksText(r)) + "</td><td class=\"num\">" + at_peak +
            "</td><td>" +
            (r.searched ? Escape(r.tolerance.stop_reason) + ", " +
                              std::to_string(r.tolerance.trials) + " trials"
                        : std::string("&ndash;")) +
            "</td></tr>\n";
  }
  return "<table class=\"profile\"><thead><tr><th>resource</th><th>antagonist</th>"
         "<th>curve (level: slowdown)</th><th>tolerates up to</th><th>breaks at</th>"
         "<th>slowdown at peak [CI]</th><th>search</th></tr></thead>\n<tbody>\n" +
         rows + "</tbody></table>\n";
}

}  // namespace codl::report
