// The table's phases line: see PhasesLine in attribution.h.
#include <cmath>
#include <cstdio>

#include "lib/analysis/attribution.h"
#include "lib/analysis/phase_order.h"
#include "lib/analysis/results.h"
#include "lib/common/units.h"

namespace codl::experiment {
namespace {

std::string Label(const std::string& phase) { return PhaseLabel(phase); }

std::string Ratio(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", v);
  return buf;
}

// The baseline's view: what a step is made of.
std::string BaselineLine(const PairingSummary& p) {
  std::string s = "phases: step " + FormatDuration(p.attribution.step_s) + " =", over;
  double timed = 0;
  bool first = true;
  for (const PhaseSlowdown& ph : p.phases) {
    if (!ph.on_path) {
      over += std::string(over.empty() ? "" : ", ") + Label(ph.phase) + " " +
              FormatDuration(ph.mean_s) +
              (ph.feeds.empty() ? "" : " (feeds " + Label(ph.feeds) + ")");
      continue;
    }
    s += std::string(first ? " " : " + ") + Label(ph.phase) + " " + FormatDuration(ph.mean_s);
    timed += ph.mean_s;
    first = false;
  }
  const double untimed = p.attribution.step_s - timed;
  if (!first && std::isfinite(untimed)) {
    s += " + untimed " + (untimed < 0 ? AddedTime(untimed) : FormatDuration(untimed));
  }
  if (first) s += " (no on-path phases)";
  if (!over.empty()) s += "; overlapped: " + over;
  return s;
}

}  // namespace

std::string AddedTime(double s) {
  if (!std::isfinite(s)) return "-";
  char buf[48];
  // Below 0.05 us it would print "+0.0 us": say it in the unit of the rest of the line.
  if (std::fabs(s) < 0.05e-6) s = 0;
  if (std::fabs(s) >= 1) std::snprintf(buf, sizeof buf, "%+.2f s", s);
  else if (std::fabs(s) >= 1e-3 || s == 0) std::snprintf(buf, sizeof buf, "%+.2f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%+.1f us", s * 1e6);
  return buf;
}

std::string PhasesLine(const PairingSummary& p) {
  if (p.phases.empty()) return "";
  const StepAttribution& a = p.attribution;
  if (p.baseline && std::isfinite(a.step_s)) return BaselineLine(p);
  if (!std::isfinite(a.added_s)) {
    // No per-step series (or no baseline): each phase's median, as a ratio where the baseline
    // has it and it is not near zero there, else as a time.
    std::string s = "phases:";
    for (size_t i = 0; i < p.phases.size(); ++i) {
      const PhaseSlowdown& ph = p.phases[i];
      const bool as_time = p.baseline || !std::isfinite(ph.slowdown);
      s += std::string(i ? ", " : " ") + Label(ph.phase) + " " +
           (as_time ? FormatDuration(ph.median_s) : Ratio(ph.slowdown));
    }
    return s;
  }
  std::string s = "phases: " + AddedTime(a.added_s) + "/step";
  if (std::isfinite(a.ci_low)) {
    s += " [" + AddedTime(a.ci_low) + ", " + AddedTime(a.ci_high) + "]";
  }
  s += " =";
  std::string over;
  bool first = true;
  for (const PhaseSlowdown& ph : p.phases) {
    std::string cell = Label(ph.phase) + " ";
    if (!ph.on_path) {
      // Off the step's path: its own change, as a ratio unless near zero at baseline.
      cell +=
          std::isfinite(ph.slowdown) && !ph.near_zero ? Ratio(ph.slowdown) : AddedTime(ph.added_s);
      if (!ph.feeds.empty()) cell += " (feeds " + Label(ph.feeds) + ")";
      over += (over.empty() ? "" : ", ") + cell;
      continue;
    }
    cell += AddedTime(ph.added_s) + (ph.significant ? "*" : "");
    if (std::isfinite(ph.mean_slowdown)) cell += " (" + Ratio(ph.mean_slowdown) + ")";
    s += std::string(first ? " " : " + ") + cell;
    first = false;
  }
  s += std::string(first ? " " : " + ") + "untimed " + AddedTime(a.unexplained_s);
  if (!over.empty()) s += "; overlapped: " + over;
  return s;
}

}  // namespace codl::experiment
