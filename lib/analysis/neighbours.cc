#include "lib/analysis/neighbours.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "lib/analysis/format_numbers.h"
#include "lib/common/statistics.h"
#include "lib/spec/spec.h"

namespace codl::experiment {

double NeighbourValue(const TrialRecord& t, const std::string& name) {
  double sum = 0;
  int n = 0;
  for (const AntagonistResult& a : t.antagonists) {
    if (a.name != name || a.injector != kWorkloadInjector) continue;
    if (!(a.achieved_rate > 0) || !std::isfinite(a.achieved_rate)) continue;
    sum += a.achieved_rate;
    ++n;
  }
  return n > 0 ? sum / n : kNaN;
}

namespace {

// steps/s: higher is faster; s/step: lower is.
bool HigherIsFaster(const std::string& unit) { return unit == "steps/s"; }

}  // namespace

std::vector<NeighbourSummary> SummarizeNeighbours(
    const std::vector<const TrialRecord*>& pairing_trials,
    const std::vector<TrialRecord>& all_trials, double victim_slowdown,
    const BootstrapOptions& options) {
  std::set<std::string> names;  // sorted: the order of the table
  std::map<std::string, std::string> units;
  for (const TrialRecord* t : pairing_trials) {
    for (const AntagonistResult& a : t->antagonists) {
      if (a.injector != kWorkloadInjector) continue;
      names.insert(a.name);
      if (!a.unit.empty()) units[a.name] = a.unit;
    }
  }
  std::vector<NeighbourSummary> out;
  for (const std::string& name : names) {
    NeighbourSummary s;
    s.name = name;
    s.unit = units.count(name) ? units[name] : "s/step";
    std::vector<double> beside, alone;
    for (const TrialRecord* t : pairing_trials) {
      if (t->state != TrialState::kDone) continue;
      if (double v = NeighbourValue(*t, name); std::isfinite(v)) beside.push_back(v);
    }
    const std::string solo_key = name + "@" + kWorkloadSoloLabel;
    for (const TrialRecord& t : all_trials) {
      if (!t.solo || t.pairing != solo_key || t.state != TrialState::kDone) continue;
      if (double v = NeighbourValue(t, name); std::isfinite(v)) alone.push_back(v);
    }
    s.n = static_cast<int>(beside.size());
    s.n_solo = static_cast<int>(alone.size());
    s.value = Median(beside);
    s.solo_value = Median(alone);
    const bool inverse = HigherIsFaster(s.unit);
    const double num = inverse ? s.solo_value : s.value, den = inverse ? s.value : s.solo_value;
    if (den > 0 && std::isfinite(num)) s.slowdown = num / den;
    if (beside.size() >= 3 && alone.size() >= 3) {
      const ConfidenceInterval ci = inverse ? BootstrapMedianRatioCI(alone, beside, options)
                                            : BootstrapMedianRatioCI(beside, alone, options);
      s.ci_low = ci.low;
      s.ci_high = ci.high;
    }
    s.p_value = MannWhitneyU(beside, alone).p_value;
    s.victim_slowdown = victim_slowdown;
    if (victim_slowdown > 0 && s.slowdown > 0)
      s.combined_throughput = 1 / victim_slowdown + 1 / s.slowdown;
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

std::string TimesCell(double v) { return std::isfinite(v) ? FixedOrDash("%.3fx", v) : "n/a"; }

}  // namespace

std::string NeighbourLine(const NeighbourSummary& n) {
  std::string line = "two-way: " + n.name + " beside the victim " + TimesCell(n.slowdown);
  if (std::isfinite(n.ci_low) && std::isfinite(n.ci_high)) {
    line += " [" + FixedOrDash("%.3f", n.ci_low) + ", " + FixedOrDash("%.3f", n.ci_high) + "]";
  } else {
    line += " [n/a: n < 3]";
  }
  line += " (";
  if (std::isfinite(n.p_value)) line += "p " + FixedOrDash("%.3g", n.p_value) + "; ";
  line += FixedOrDash("%.4g", n.value) + " vs " + FixedOrDash("%.4g", n.solo_value) + " " + n.unit +
          " alone, " + std::to_string(n.n) + " vs " + std::to_string(n.n_solo) + " trials)";
  line += ", the victim beside " + n.name + " " + TimesCell(n.victim_slowdown);
  if (std::isfinite(n.combined_throughput)) {
    line += "; combined throughput " + FixedOrDash("%.2f", n.combined_throughput) +
            (n.combined_throughput > 1 ? " (> 1: co-location pays)"
                                       : " (<= 1: running them apart is faster)");
  }
  return line;
}

}  // namespace codl::experiment
