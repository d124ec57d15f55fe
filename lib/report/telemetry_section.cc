#include "lib/report/telemetry_section.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "lib/analysis/pairing_order.h"
#include "lib/common/units.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

std::string TelemetryRate(double bytes_per_s) {
  if (!std::isfinite(bytes_per_s)) return kMissing;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes_per_s / 1e6);
  return buf;
}

std::string TelemetryShare(double share) {
  return std::isfinite(share) ? Escape(Percent(share, 1)) : std::string(kMissing);
}

}  // namespace

std::string RenderTelemetry(const experiment::ExperimentResults& results) {
  std::string rows;
  std::set<std::string> notes;
  for (const experiment::PairingSummary* p : experiment::SortedPairings(results)) {
    const experiment::TelemetrySummary& t = p->telemetry;
    if (t.n == 0) continue;
    if (!std::isfinite(t.membw_bytes_per_s) && !t.membw_note.empty()) notes.insert(t.membw_note);
    rows +=
        std::string("<tr") + (p->baseline ? " class=\"baseline\"" : "") + "><td><code>" +
        Escape(p->pairing) + "</code></td><td class=\"num\">" + std::to_string(t.n) +
        "</td><td class=\"num\">" + TelemetryShare(t.psi_cpu_some) + "</td><td class=\"num\">" +
        TelemetryShare(t.psi_io_some) + "</td><td class=\"num\">" +
        TelemetryShare(t.psi_memory_some) + "</td><td class=\"num\">" +
        TelemetryRate(t.disk_read_bytes_per_s) + " / " + TelemetryRate(t.disk_write_bytes_per_s) +
        "</td><td class=\"num\">" + TelemetryRate(t.net_bytes_per_s) + "</td><td class=\"num\">" +
        (std::isfinite(t.mem_available_min_bytes) ? Escape(FormatSize(t.mem_available_min_bytes))
                                                  : std::string(kMissing)) +
        "</td><td class=\"num\">" + TelemetryRate(t.membw_bytes_per_s) + "</td></tr>\n";
  }
  if (rows.empty()) return "";
  std::string html =
      "<table class=\"telemetry\"><thead><tr><th>pairing</th><th>n</th><th>PSI cpu some</th>"
      "<th>PSI io some</th><th>PSI memory some</th><th>disk read / write MB/s</th>"
      "<th>net MB/s</th><th>lowest MemAvailable</th><th>memory bandwidth MB/s</th></tr>"
      "</thead>\n<tbody>\n" +
      rows + "</tbody></table>\n";
  for (const std::string& n : notes) html += "<p class=\"caption\">" + Escape(n) + "</p>\n";
  return html;
}

}  // namespace codl::report
