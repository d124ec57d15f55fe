#include "lib/report/telemetry_section.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "lib/analysis/pairing_order.h"
#include "lib/common/gpu_clock_reasons.h"
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
  html += RenderGpuTelemetry(results);
  return html;
}

std::string RenderGpuTelemetry(const experiment::ExperimentResults& results) {
  std::string rows;
  std::set<std::string> notes;
  auto number = [](double v, const char* format) {
    if (!std::isfinite(v)) return std::string(kMissing);
    char buf[32];
    std::snprintf(buf, sizeof buf, format, v);
    return std::string(buf);
  };
  for (const experiment::PairingSummary* p : experiment::SortedPairings(results)) {
    const experiment::TelemetrySummary& t = p->telemetry;
    if (t.n == 0) continue;
    if (t.gpus.empty() && !t.gpu_note.empty()) notes.insert(t.gpu_note);
    for (const experiment::GpuTelemetrySummary& g : t.gpus) {
      const std::string reasons = GpuClockReasonsText(g.clock_reasons);
      rows += std::string("<tr") + (p->baseline ? " class=\"baseline\"" : "") + "><td><code>" +
              Escape(p->pairing) + "</code></td><td class=\"num\">" + std::to_string(g.index) +
              "</td><td>" + Escape(g.name) + "</td><td class=\"num\">" + std::to_string(g.n) +
              "</td><td class=\"num\">" + number(g.util_mean, "%.0f") + " / " +
              number(g.util_max, "%.0f") + "</td><td class=\"num\">" +
              (std::isfinite(g.mem_used_max_bytes) ? Escape(FormatSize(g.mem_used_max_bytes))
                                                   : std::string(kMissing)) +
              "</td><td class=\"num\">" + TelemetryRate(g.pcie_tx_bytes_per_s) + " / " +
              TelemetryRate(g.pcie_rx_bytes_per_s) + "</td><td class=\"num\">" +
              TelemetryRate(g.nvlink_tx_bytes_per_s) + " / " +
              TelemetryRate(g.nvlink_rx_bytes_per_s) + "</td><td class=\"num\">" +
              number(g.sm_clock_min_mhz, "%.0f") + " / " + number(g.sm_clock_mean_mhz, "%.0f") +
              "</td><td class=\"num\">" + number(g.mem_clock_min_mhz, "%.0f") + " / " +
              number(g.mem_clock_mean_mhz, "%.0f") + "</td><td>" +
              (reasons.empty() ? std::string(kMissing) : Escape(reasons)) + "</td></tr>\n";
    }
  }
  if (rows.empty()) return "";  // a node without GPUs: the exports say why, the report is silent
  std::string html =
      "<table class=\"telemetry gpu\"><thead><tr><th>pairing</th><th>GPU</th><th>name</th>"
      "<th>n</th><th>utilization mean / max %</th><th>memory used (max)</th>"
      "<th>PCIe tx / rx MB/s</th><th>NVLink tx / rx MB/s</th><th>SM clock min / mean MHz</th>"
      "<th>memory clock min / mean MHz</th><th>clock event reasons</th></tr></thead>\n"
      "<tbody>\n" +
      rows + "</tbody></table>\n";
  for (const std::string& n : notes) html += "<p class=\"caption\">" + Escape(n) + "</p>\n";
  return html;
}

std::string RenderCrosstalk(const experiment::ExperimentResults& results) {
  if (!results.crosstalk) return "";
  const experiment::CrosstalkMatrix& m = results.crosstalk_matrix;
  const auto& resources = experiment::CrosstalkResources();
  std::string html =
      "<table class=\"telemetry crosstalk\"><thead><tr><th>antagonist</th><th>n</th>"
      "<th>achieved</th>";
  const std::vector<bool> shown = experiment::CrosstalkColumnsShown(m);
  for (size_t i = 0; i < resources.size(); ++i)
    if (shown[i]) html += "<th>" + Escape(resources[i].title) + "</th>";
  html += "</tr></thead>\n<tbody>\n";
  for (const experiment::CrosstalkRow& row : m.rows) {
    html += "<tr><td><code>" + Escape(row.pairing) + "</code></td><td class=\"num\">" +
            std::to_string(row.n) + "</td><td class=\"num\">" +
            (std::isfinite(row.achieved_rate) ? Escape(FormatRate(row.achieved_rate, row.unit))
                                              : std::string(kMissing)) +
            "</td>";
    for (size_t i = 0; i < resources.size(); ++i) {
      if (!shown[i]) continue;
      const experiment::CrosstalkCell& c = row.cells[i];
      std::string text = kMissing;
      if (std::isfinite(c.value)) {
        char buf[48];
        const auto& res = resources[i];
        const double shown = res.unit == "share"              ? c.value
                             : res.key == "cpu_cores"         ? c.value
                             : res.key == "membw_bytes_per_s" ? c.value / 1e9
                             : res.unit == "bytes/s"          ? c.value / 1e6
                                                              : c.value / (1024.0 * 1024.0);
        std::snprintf(buf, sizeof buf, res.unit == "bytes" ? "%+.0f" : "%+.2f", shown);
        text = buf;
      }
      const char* cls = c.own ? " own" : c.large ? " offtarget" : "";
      html += std::string("<td class=\"num") + cls + "\"" +
              (c.own     ? " title=\"its own resource\""
               : c.large ? " title=\"off-target\""
                         : "") +
              ">" + text +
              (c.own     ? " *"
               : c.large ? " !"
                         : "") +
              "</td>";
    }
    html += "</tr>\n";
  }
  html += "</tbody></table>\n";
  html +=
      "<p class=\"caption\">* its own resource; ! off-target at or over its threshold "
      "(cpu 0.25 cores, PSI +0.10, disk and net +1 MB/s, memory +256 MiB held, memory "
      "bandwidth +1 GB/s, GPU utilization +0.10, GPU memory +256 MiB, PCIe and NVLink "
      "+100 MB/s); columns in MB/s, MiB and GB/s.";
  if (!m.membw_note.empty()) html += " " + Escape(m.membw_note) + ".";
  if (std::string gpu = experiment::CrosstalkGpuLeftOut(m); !gpu.empty())
    html += " " + Escape(gpu) + ".";
  html += "</p>\n";
  std::string checks;
  for (const experiment::CrosstalkRow& row : m.rows) {
    if (!row.has_check) continue;
    const experiment::CounterCheck& c = row.check;
    checks += "<li><code>" + Escape(row.pairing) + "</code>: ";
    if (std::isfinite(c.relative_error)) {
      char err[32];
      std::snprintf(err, sizeof err, "%+.1f%%", 100 * c.relative_error);
      checks += "reported " + Escape(FormatBytesPerSecond(c.reported)) + ", " + Escape(c.counter) +
                " " + Escape(FormatBytesPerSecond(c.counted)) + ": error " + err;
    } else {
      checks += Escape(c.counter) + ": " + Escape(c.note);
    }
    checks += "</li>\n";
  }
  if (!checks.empty()) {
    html +=
        "<p>Independent counters (the antagonist's achieved rate against the node's own "
        "count of the same bytes):</p>\n<ul>\n" +
        checks + "</ul>\n";
  }
  std::string off;
  for (const experiment::CrosstalkRow& row : m.rows) {
    for (const std::string& s : row.off_target) off += "<li>" + Escape(s) + "</li>\n";
  }
  if (!off.empty()) html += "<p>Off-target footprints:</p>\n<ul>\n" + off + "</ul>\n";
  return html;
}

}  // namespace codl::report
