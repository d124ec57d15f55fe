// Additive attribution: see attribution.h.
#include "lib/analysis/attribution.h"

#include <cmath>
#include <cstdint>

#include "lib/analysis/results.h"
#include "lib/analysis/stats.h"
#include "lib/common/random.h"

namespace codl::experiment {

StepMeans MeanPerStep(const std::vector<VictimStep>& steps) {
  StepMeans m;
  double step_sum = 0;
  std::map<std::string, double> sums;
  for (const VictimStep& s : steps) {
    if (s.warmup || !std::isfinite(s.step_time_s)) continue;
    ++m.steps;
    step_sum += s.step_time_s;
    for (const auto& [phase, v] : s.phases) {
      if (std::isfinite(v)) sums[phase] += v;
    }
  }
  if (m.steps == 0) return m;
  m.step_s = step_sum / m.steps;
  for (const auto& [phase, sum] : sums) m.phases[phase] = sum / m.steps;
  return m;
}

bool IsOverlappedPhase(const std::string& phase) {
  return phase == "read_s" || phase == "decode_s";
}

std::string FedPhase(const std::string& phase) {
  return IsOverlappedPhase(phase) ? "data_wait_s" : "";
}

namespace {

// Per-trial means of the trials that have per-step series.
std::vector<StepMeans> MeansOf(const std::vector<const TrialRecord*>& trials) {
  std::vector<StepMeans> out;
  for (const TrialRecord* t : trials) {
    StepMeans m = MeanPerStep(t->steps);
    if (m.steps > 0) out.push_back(std::move(m));
  }
  return out;
}

std::vector<double> StepValues(const std::vector<StepMeans>& means) {
  std::vector<double> v;
  for (const auto& m : means) v.push_back(m.step_s);
  return v;
}

// A phase's per-trial means; 0 for a trial that has steps but never reports it.
std::vector<double> PhaseValues(const std::vector<StepMeans>& means, const std::string& phase) {
  std::vector<double> v;
  for (const auto& m : means) {
    auto it = m.phases.find(phase);
    v.push_back(it == m.phases.end() ? 0 : it->second);
  }
  return v;
}

// The median ratio (`slowdown`) of a phase whose median is near zero at baseline is no figure
// to show: judged on the baseline's medians, against its median step (the median over its
// trials of each trial's median measured step; without steps, its on-path phase medians
// summed). Returns whether it could judge (a baseline with phases).
bool NearZeroByMedians(const std::vector<const TrialRecord*>& baseline, PairingSummary* p) {
  std::map<std::string, std::vector<double>> values;
  std::vector<double> steps;
  for (const TrialRecord* t : baseline) {
    for (const auto& [phase, v] : t->phase_medians) values[phase].push_back(v);
    std::vector<double> own;
    for (const VictimStep& s : t->steps) {
      if (!s.warmup && std::isfinite(s.step_time_s)) own.push_back(s.step_time_s);
    }
    if (!own.empty()) steps.push_back(Median(std::move(own)));
  }
  std::map<std::string, double> medians;
  double sum = 0;
  for (auto& [phase, v] : values) {
    medians[phase] = Median(std::move(v));
    if (!IsOverlappedPhase(phase) && std::isfinite(medians[phase])) sum += medians[phase];
  }
  const double step = steps.empty() ? sum : Median(std::move(steps));
  if (!(step > 0)) return false;
  for (PhaseSlowdown& ph : p->phases) {
    auto it = medians.find(ph.phase);
    if (it == medians.end() || it->second >= kNearZeroShare * step) continue;
    ph.slowdown = kNaN;
    ph.near_zero = true;  // replaced by the judgement on the means where there are steps
  }
  return true;
}

}  // namespace

void AttributePairing(const std::vector<const TrialRecord*>& measured,
                      const std::vector<const TrialRecord*>& baseline,
                      const BootstrapOptions& options, PairingSummary* p) {
  const std::vector<StepMeans> mine = MeansOf(measured), base = MeansOf(baseline);
  StepAttribution& a = p->attribution;
  const std::vector<double> steps = StepValues(mine), base_steps = StepValues(base);
  a.step_s = Median(steps);
  a.baseline_step_s = Median(base_steps);
  const bool ci = steps.size() >= 3 && base_steps.size() >= 3;  // as the slowdown's (results.cc)
  if (!p->baseline && !mine.empty() && !base.empty()) {
    a.added_s = a.step_s - a.baseline_step_s;
    if (ci) {
      const ConfidenceInterval c = BootstrapMedianDifferenceCI(steps, base_steps, options);
      a.ci_low = c.low;
      a.ci_high = c.high;
    }
    a.explained_s = 0;
  }
  for (PhaseSlowdown& ph : p->phases) {
    ph.on_path = !IsOverlappedPhase(ph.phase);
    ph.feeds = FedPhase(ph.phase);
  }
  NearZeroByMedians(baseline, p);
  if (mine.empty()) return;
  for (PhaseSlowdown& ph : p->phases) {
    const std::vector<double> v = PhaseValues(mine, ph.phase);
    ph.mean_s = Median(v);
    if (base.empty()) continue;
    const std::vector<double> b = PhaseValues(base, ph.phase);
    ph.baseline_mean_s = Median(b);
    ph.near_zero = !(ph.baseline_mean_s >= kNearZeroShare * a.baseline_step_s);
    if (!ph.near_zero) ph.mean_slowdown = ph.mean_s / ph.baseline_mean_s;
    if (p->baseline) continue;
    ph.added_s = ph.mean_s - ph.baseline_mean_s;
    if (ph.on_path) a.explained_s += ph.added_s;
    if (ci) {
      BootstrapOptions o = options;
      o.seed ^= Fnv1a(ph.phase);  // each phase its own draws, the same on every platform
      const ConfidenceInterval c = BootstrapMedianDifferenceCI(v, b, o);
      ph.added_ci_low = c.low;
      ph.added_ci_high = c.high;
      ph.significant = c.low > 0 || c.high < 0;
    }
  }
  if (std::isfinite(a.added_s)) a.unexplained_s = a.added_s - a.explained_s;
}

}  // namespace codl::experiment
