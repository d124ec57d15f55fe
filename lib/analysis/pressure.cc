#include "lib/analysis/pressure.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "lib/analysis/format_numbers.h"
#include "lib/analysis/pairing_samples.h"
#include "lib/common/random.h"
#include "lib/common/units.h"
#include "lib/spec/spec.h"

namespace codl::experiment {
namespace {

// "max", or a level >= 1 (the calibrated peak): an antagonist at full tilt.
// A unit of capacity held (pagecache's "bytes"), not a rate: what such an antagonist holds at
// `max` within one trial is bounded by how fast it can fill, not by the workload beside it, so
// 1 - held / calibrated peak is no pressure. Its workload pressure (with/without W, same
// windows) is kept.
bool CapacityUnit(const std::string& unit) { return unit == "bytes"; }

bool FullTiltLabel(const std::string& label) {
  if (label == "max") return true;
  auto level = ParseNumber(label);
  return level.ok() && *level >= 1;
}

bool MeasuredInterference(const TrialRecord& t) {
  return t.state == TrialState::kDone && !t.solo && !IsBaselineTrial(t);
}

// The mean over an injector antagonist's instances in one trial of `value`; NaN when none
// gives a finite one.
template <typename Value>
double InstanceMean(const TrialRecord& t, const std::string& name, Value value) {
  double sum = 0;
  int n = 0;
  for (const AntagonistResult& a : t.antagonists) {
    if (a.name != name || a.injector == kWorkloadInjector) continue;
    const double v = value(a);
    if (!std::isfinite(v)) continue;
    sum += v;
    ++n;
  }
  return n > 0 ? sum / n : kNaN;
}

double FractionOfPeak(const AntagonistResult& a) {
  if (!(a.peak_rate > 0) || !std::isfinite(a.achieved_rate) || a.achieved_rate < 0) return kNaN;
  return a.achieved_rate / a.peak_rate;
}

double AchievedRate(const AntagonistResult& a) {
  return std::isfinite(a.achieved_rate) && a.achieved_rate >= 0 ? a.achieved_rate : kNaN;
}

// The injector and unit an antagonist's results carry (the first that names them).
void InjectorAndUnit(const TrialRecord& t, const std::string& name, std::string* injector,
                     std::string* unit) {
  for (const AntagonistResult& a : t.antagonists) {
    if (a.name != name) continue;
    if (injector->empty()) *injector = a.injector;
    if (unit->empty()) *unit = a.unit;
  }
}

double MeanOrNaN(const std::vector<double>& v) { return v.empty() ? kNaN : Mean(v); }

void ResampleInto(const std::vector<double>& from, std::mt19937_64& rng, std::vector<double>* to) {
  to->resize(from.size());
  for (auto& x : *to) x = from[UniformBelow(rng, from.size())];
}

// Percentile CI of 1 - mean(resampled `with`) / mean(resampled `without`) (without == nullptr:
// 1 - mean(resampled `with`)). NaN below 3 values a side.
ConfidenceInterval PressureBootstrap(const std::vector<double>& with,
                                     const std::vector<double>* without, const PressureOptions& o,
                                     uint64_t seed) {
  if (with.size() < 3 || (without && without->size() < 3) || o.resamples <= 0) return {};
  std::mt19937_64 rng(seed);
  std::vector<double> draws, a, b;
  draws.reserve(static_cast<size_t>(o.resamples));
  for (int r = 0; r < o.resamples; ++r) {
    ResampleInto(with, rng, &a);
    double v = 1 - Mean(a);
    if (without) {
      ResampleInto(*without, rng, &b);
      const double den = Mean(b);
      v = den > 0 ? 1 - Mean(a) / den : kNaN;
    }
    if (std::isfinite(v)) draws.push_back(v);
  }
  return PercentileInterval(draws, o.confidence);
}

// Per trial, the mean achieved rate of `name` in the measured trials of pairing `key`.
std::vector<double> AchievedIn(const std::vector<TrialRecord>& trials, const std::string& key,
                               const std::string& name) {
  std::vector<double> out;
  for (const TrialRecord& t : trials) {
    if (!MeasuredInterference(t) || t.pairing != key) continue;
    if (const double v = InstanceMean(t, name, AchievedRate); std::isfinite(v)) out.push_back(v);
  }
  return out;
}

}  // namespace

double PressureFromFractions(const std::vector<double>& fractions) {
  return fractions.empty() ? kNaN : 1 - Mean(fractions);
}

std::vector<VictimPressureSamples> VictimPressure(const std::vector<TrialRecord>& trials) {
  // Per antagonist, the fractions at `max` and at a level >= 1 apart: `max` when it has any.
  struct Found {
    VictimPressureSamples at_max, at_level;
  };
  std::map<std::string, Found> found;
  for (const TrialRecord& t : trials) {
    if (!MeasuredInterference(t)) continue;
    const auto parts = ParsePairingKey(t.pairing);
    if (parts.size() != 1) continue;
    const auto& [name, label] = *parts.begin();
    if (!FullTiltLabel(label)) continue;
    const double f = InstanceMean(t, name, FractionOfPeak);
    if (!std::isfinite(f)) continue;  // no calibrated peak recorded
    VictimPressureSamples& s = label == "max" ? found[name].at_max : found[name].at_level;
    if (s.fractions.empty()) {
      s.antagonist = name;
      s.intensity = label;
      InjectorAndUnit(t, name, &s.injector, &s.unit);
    }
    if (CapacityUnit(s.unit)) continue;
    s.fractions.push_back(f);
  }
  std::vector<VictimPressureSamples> out;
  for (auto& [name, f] : found) {
    if (f.at_max.fractions.empty() && f.at_level.fractions.empty()) continue;  // capacity only
    out.push_back(std::move(!f.at_max.fractions.empty() ? f.at_max : f.at_level));
  }
  return out;
}

std::vector<PressureSummary> SummarizePressure(const std::vector<TrialRecord>& trials,
                                               const PressureOptions& options) {
  std::vector<PressureSummary> out;
  for (const VictimPressureSamples& s : VictimPressure(trials)) {
    PressureSummary p;
    p.workload = kPressureVictim;
    p.antagonist = s.antagonist;
    p.injector = s.injector;
    p.unit = s.unit;
    p.intensity = s.intensity;
    p.n = static_cast<int>(s.fractions.size());
    p.pressure = PressureFromFractions(s.fractions);
    const ConfidenceInterval ci =
        PressureBootstrap(s.fractions, nullptr, options,
                          PairingSeed(options.seed, "pressure", p.workload + "/" + p.antagonist));
    p.ci_low = ci.low;
    p.ci_high = ci.high;
    out.push_back(std::move(p));
  }

  // Workload antagonists: the measured pairings of one injector antagonist at full tilt and
  // one workload at `run`, against that antagonist's single at the same intensity.
  std::set<std::string> workloads;
  for (const TrialRecord& t : trials) {
    for (const AntagonistResult& a : t.antagonists) {
      if (a.injector == kWorkloadInjector) workloads.insert(a.name);
    }
  }
  // (workload, antagonist) -> full-tilt labels seen with the workload; the single's key per label.
  std::map<std::pair<std::string, std::string>, std::set<std::string>> labels;
  std::set<std::string> measured_keys;
  for (const TrialRecord& t : trials) {
    if (!MeasuredInterference(t)) continue;
    measured_keys.insert(t.pairing);
    const auto parts = ParsePairingKey(t.pairing);
    if (parts.size() != 2) continue;
    std::string w, r, label;
    for (const auto& [name, l] : parts) {
      if (workloads.count(name) && l == kWorkloadRunLabel) {
        w = name;
      } else if (!workloads.count(name) && FullTiltLabel(l)) {
        r = name;
        label = l;
      }
    }
    if (!w.empty() && !r.empty()) labels[{w, r}].insert(label);
  }
  for (const auto& [wr, seen] : labels) {
    const auto& [w, r] = wr;
    // `max` first (std::set orders digits before letters, so look for it by name).
    std::vector<std::string> order;
    if (seen.count("max")) order.push_back("max");
    for (const auto& l : seen)
      if (l != "max") order.push_back(l);
    for (const std::string& label : order) {
      const std::string alone_key = JoinPairingKey({{r, label}});
      const std::string with_key = JoinPairingKey({{r, label}, {w, kWorkloadRunLabel}});
      if (!measured_keys.count(alone_key)) continue;
      const std::vector<double> with = AchievedIn(trials, with_key, r);
      const std::vector<double> without = AchievedIn(trials, alone_key, r);
      if (with.empty() || without.empty()) continue;
      PressureSummary p;
      p.workload = w;
      p.antagonist = r;
      p.intensity = label;
      for (const TrialRecord& t : trials) {
        if (t.pairing == alone_key) InjectorAndUnit(t, r, &p.injector, &p.unit);
      }
      p.n = static_cast<int>(with.size());
      p.n_alone = static_cast<int>(without.size());
      const double den = MeanOrNaN(without);
      if (den > 0) p.pressure = 1 - MeanOrNaN(with) / den;
      const ConfidenceInterval ci = PressureBootstrap(
          with, &without, options, PairingSeed(options.seed, "pressure", w + "/" + r));
      p.ci_low = ci.low;
      p.ci_high = ci.high;
      out.push_back(std::move(p));
      break;
    }
  }
  return out;
}

std::string PressureLine(const std::vector<PressureSummary>& rows) {
  if (rows.empty()) return "";
  std::string line = "pressure: " + rows.front().workload + " on";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PressureSummary& p = rows[i];
    line += std::string(i ? ", " : " ") + p.antagonist + " (" + p.injector + ") " +
            FixedOrDash("%.3f", p.pressure);
    if (std::isfinite(p.ci_low) && std::isfinite(p.ci_high)) {
      line += " [" + FixedOrDash("%.3f", p.ci_low) + ", " + FixedOrDash("%.3f", p.ci_high) + "]";
    } else {
      line += " [n/a: n < 3]";
    }
  }
  if (rows.front().workload == kPressureVictim) {
    line += " (1 - achieved / calibrated peak at max; includes whatever else ran on the node)";
  } else {
    line += " (1 - achieved beside it and the victim / beside the victim alone)";
  }
  return line;
}

}  // namespace codl::experiment
