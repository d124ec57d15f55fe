#include "lib/analysis/validity_sim.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "lib/analysis/results.h"

namespace codl::experiment {
namespace {

// Standard normal by Box-Muller on mt19937_64 (std::normal_distribution is implementation-
// defined, so its figures would differ between standard libraries).
double Normal(std::mt19937_64& rng) {
  constexpr double kTwoPi = 6.283185307179586;
  const double u1 = (static_cast<double>(rng() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return std::sqrt(-2 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// A lognormal factor with median 1 and roughly the given coefficient of variation.
double Noise(std::mt19937_64& rng, double cov) { return std::exp(cov * Normal(rng)); }

TrialRecord SimulatedTrial(const SimulationOptions& o, std::mt19937_64& rng, int index,
                           bool baseline) {
  TrialRecord t;
  t.experiment_id = "sim";
  t.index = index;
  t.baseline = baseline;
  t.pairing = baseline ? "baseline" : "x@0.5";
  t.state = TrialState::kDone;
  const double trial_scale = o.step_s * Noise(rng, o.trial_cov) * (baseline ? 1 : o.true_slowdown);
  for (int i = 0; i < o.steps; ++i) {
    VictimStep s;
    s.step = i;
    s.step_time_s = trial_scale * Noise(rng, o.step_cov);
    t.steps.push_back(s);
  }
  return t;
}

}  // namespace

SimulationFigures SimulateExperiments(const SimulationOptions& o) {
  SimulationFigures f;
  int covered = 0, ci_positive = 0, p_positive = 0;
  double sum = 0;
  for (int e = 0; e < o.experiments; ++e) {
    std::mt19937_64 rng(o.seed * 1000003 + static_cast<uint64_t>(e));
    std::vector<TrialRecord> trials;
    int index = 0;
    for (int i = 0; i < o.baselines; ++i) trials.push_back(SimulatedTrial(o, rng, index++, true));
    for (int i = 0; i < o.repetitions; ++i) {
      trials.push_back(SimulatedTrial(o, rng, index++, false));
    }
    ExperimentRecord rec;
    rec.id = "sim-" + std::to_string(e);
    rec.seed = o.seed + static_cast<uint64_t>(e);
    const ExperimentResults r = Summarize(rec, trials, SummarizeOptions{});
    const PairingSummary& p = r.pairings.back();
    ++f.experiments;
    sum += p.slowdown;
    if (p.ci_low <= o.true_slowdown && o.true_slowdown <= p.ci_high) ++covered;
    if (p.ci_low > 1) ++ci_positive;
    if (p.p_value < 0.05 && p.slowdown > 1) ++p_positive;
  }
  if (f.experiments > 0) {
    const double n = f.experiments;
    f.coverage = covered / n;
    f.ci_positive = ci_positive / n;
    f.p_positive = p_positive / n;
    f.mean_slowdown = sum / n;
  }
  return f;
}

}  // namespace codl::experiment
