#include "lib/report/neighbour_section.h"

#include <cmath>
#include <cstdio>

#include "lib/report/svg.h"

namespace codl::report {
namespace {

std::string Number(const char* format, double v) {
  if (!std::isfinite(v)) return "&ndash;";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::string RenderNeighbours(const experiment::ExperimentResults& results) {
  std::string rows;
  for (const auto& p : results.pairings) {
    for (const auto& n : p.neighbours) {
      const std::string ci =
          std::isfinite(n.ci_low) && std::isfinite(n.ci_high)
              ? " [" + Number("%.3f", n.ci_low) + ", " + Number("%.3f", n.ci_high) + "]"
              : " [n/a: n &lt; 3]";
      rows += "<tr><td><code>" + Escape(p.pairing) + "</code></td><td>" + Escape(n.name) +
              "</td><td class=\"num\">" + Number("%.3fx", p.slowdown) + "</td><td class=\"num\">" +
              Number("%.3fx", n.slowdown) + ci + "</td><td class=\"num\">" +
              Number("%.3g", n.p_value) + "</td><td class=\"num\">" + Number("%.4g", n.value) +
              " / " + Number("%.4g", n.solo_value) + " " + Escape(n.unit) +
              "</td><td class=\"num\">" + std::to_string(n.n) + " / " + std::to_string(n.n_solo) +
              "</td><td class=\"num\">" + Number("%.2f", n.combined_throughput) + "</td></tr>\n";
    }
  }
  if (rows.empty()) return "";
  return "<table class=\"neighbours\"><thead><tr><th>pairing</th><th>neighbour</th>"
         "<th>victim beside it</th><th>it beside the victim [CI]</th><th>p</th>"
         "<th>its figure beside / alone</th><th>trials beside / alone</th>"
         "<th>combined throughput</th></tr></thead>\n<tbody>\n" +
         rows + "</tbody></table>\n";
}

}  // namespace codl::report
