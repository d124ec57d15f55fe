#include "lib/analysis/tolerance.h"

#include <algorithm>
#include <cmath>

#include "lib/analysis/format_numbers.h"
#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

// Levels are rounded so that pairing keys stay short ("tick@0.2188").
double RoundLevel(double level) { return std::round(level * 1e4) / 1e4; }

std::vector<ToleranceProbe> Probes(const std::vector<PairingSummary>& pairings,
                                   const AntagonistSpec& a, double threshold) {
  std::vector<ToleranceProbe> probes;
  for (const PairingSummary& p : pairings) {
    if (p.baseline || p.antagonists.size() != 1) continue;
    const AntagonistSummary& s = p.antagonists[0];
    if (s.name != a.name || s.max || !(s.level > 0)) continue;  // a level, alone
    ToleranceProbe t;
    t.level = s.level;
    t.n = p.n;
    t.n_all = std::max(p.n_all, p.n);
    t.slowdown = p.slowdown;
    t.ci_low = p.ci_small_n ? kNaN : p.ci_low;
    t.ci_high = p.ci_small_n ? kNaN : p.ci_high;
    t.verdict = !std::isfinite(t.ci_high) || !std::isfinite(t.ci_low) ? "undecided"
                : t.ci_high <= threshold                              ? "tolerated"
                : t.ci_low > threshold                                ? "breaks"
                                                                      : "undecided";
    probes.push_back(t);
  }
  std::sort(probes.begin(), probes.end(),
            [](const ToleranceProbe& x, const ToleranceProbe& y) { return x.level < y.level; });
  return probes;
}

const ToleranceProbe* At(const std::vector<ToleranceProbe>& probes, double level) {
  for (const auto& p : probes) {
    if (std::fabs(p.level - level) < 1e-9) return &p;
  }
  return nullptr;
}

}  // namespace

ToleranceStep NextToleranceStep(const std::vector<PairingSummary>& pairings,
                                const AntagonistSpec& a, int search_trials) {
  ToleranceStep step;
  ToleranceResult& r = step.result;
  const ToleranceSpec& t = a.tolerance;
  r.name = a.name;
  r.threshold = t.slowdown;
  r.resolution = t.resolution;
  r.max_trials = t.max_trials;
  r.trials = search_trials;
  r.probes = Probes(pairings, a, t.slowdown);
  // The lowest level that breaks; the highest tolerated below it (monotone in level).
  for (const auto& p : r.probes) {
    if (p.verdict == "breaks") {
      r.breaks_level = p.level;
      break;
    }
  }
  for (const auto& p : r.probes) {
    if (p.verdict == "tolerated" && !(p.level >= r.breaks_level))
      r.tolerated_level = std::max(r.tolerated_level, p.level);
  }
  auto finish = [&](const char* reason) {
    step.done = true;
    r.stop_reason = reason;
    return step;
  };
  if (r.tolerated_level >= 1) {
    r.tolerates_max = true;
    return finish("tolerates max");
  }
  if (std::isfinite(r.breaks_level) && r.breaks_level - r.tolerated_level <= t.resolution + 1e-9)
    return finish("resolved");
  if (search_trials >= t.max_trials) return finish("max_trials");
  const double next =
      std::isfinite(r.breaks_level) ? RoundLevel((r.tolerated_level + r.breaks_level) / 2) : 1.0;
  if (!(next > r.tolerated_level) || (std::isfinite(r.breaks_level) && !(next < r.breaks_level)))
    return finish("resolved");  // the levels cannot be told apart more finely
  const ToleranceProbe* seen = At(r.probes, next);
  // Flagged trials decide nothing: a level the antagonist cannot hold beside the victim (level
  // 1 on a busy node, docs/validity.md) would otherwise be retried until the budget is spent.
  if (seen != nullptr && seen->n_all >= 3 && 2 * (seen->n_all - seen->n) > seen->n_all) {
    r.detail = "level " + FixedOrDash("%g", next) + ": " + std::to_string(seen->n_all - seen->n) +
               " of " + std::to_string(seen->n_all) +
               " trials flagged (the antagonist could not hold it beside the victim; `max` runs "
               "it unthrottled)";
    return finish("cannot hold");
  }
  if (seen != nullptr && seen->n_all >= kMaxTrialsPerToleranceLevel) {
    r.detail = "level " + FixedOrDash("%g", next) + " after " + std::to_string(seen->n) +
               " trials: CI [" + FixedOrDash("%.3f", seen->ci_low) + ", " +
               FixedOrDash("%.3f", seen->ci_high) + "] straddles " + FixedOrDash("%g", t.slowdown);
    return finish("undecided");
  }
  step.level = next;
  step.trials = std::min(seen == nullptr || seen->n < 3 ? 3 : 2, t.max_trials - search_trials);
  r.stop_reason = "running";
  return step;
}

int SearchTrials(const std::vector<TrialRecord>& trials, const std::string& name, int planned) {
  int n = 0;
  const std::string prefix = name + "@";
  for (const auto& t : trials) {
    if (t.index >= planned && !t.baseline && !t.solo && t.pairing.rfind(prefix, 0) == 0 &&
        t.pairing.find('+') == std::string::npos)
      ++n;
  }
  return n;
}

std::vector<ToleranceResult> ToleranceResults(const ExperimentSpec& spec,
                                              const std::vector<PairingSummary>& pairings,
                                              const std::vector<TrialRecord>& trials) {
  std::vector<ToleranceResult> out;
  const int planned = static_cast<int>(CountPlannedTrials(spec));
  for (const auto& a : spec.antagonists) {
    if (!a.tolerance.enabled || a.workload) continue;
    out.push_back(NextToleranceStep(pairings, a, SearchTrials(trials, a.name, planned)).result);
  }
  return out;
}

std::string ToleranceLine(const ToleranceResult& r) {
  std::string line = "tolerance: " + r.name;
  if (r.tolerates_max) {
    line +=
        " tolerates the calibrated peak (level 1) at slowdown <= " + FixedOrDash("%g", r.threshold);
  } else {
    line += " tolerates up to level " + FixedOrDash("%g", r.tolerated_level) + ", breaks at " +
            (std::isfinite(r.breaks_level) ? FixedOrDash("%g", r.breaks_level)
                                           : std::string("no level tried")) +
            " (slowdown <= " + FixedOrDash("%g", r.threshold) + " by the CI upper bound)";
  }
  line += "; " + std::to_string(r.trials) + " search trial" + (r.trials == 1 ? "" : "s") +
          " of max_trials " + std::to_string(r.max_trials) + "; stopped: " + r.stop_reason;
  if (r.stop_reason == "resolved") line += " to " + FixedOrDash("%g", r.resolution);
  if (!r.detail.empty()) line += " (" + r.detail + ")";
  return line;
}

}  // namespace codl::experiment
