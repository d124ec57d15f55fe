// Compare: several experiments' slowdowns for the same pairings, and how much they differ.
#include "lib/analysis/compare.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "lib/analysis/pairing_samples.h"
#include "lib/analysis/results.h"
#include "lib/analysis/trial_metric.h"
#include "lib/common/random.h"

namespace codl::experiment {
namespace {

constexpr int kResamples = 10000;
constexpr double kConfidence = 0.95;

// The pairing's antagonist set and intensities as one key ("membw@0.5+storage@1", names
// sorted), so pairings match whatever order an experiment's YAML listed them in.
std::string MatchKey(const std::string& pairing) {
  std::string key;
  for (const auto& [name, intensity] : PairingIntensities(pairing))
    key += (key.empty() ? "" : "+") + name + "@" + intensity;
  return key.empty() ? pairing : key;
}

// One experiment, analysed: per pairing its summary and its measured per-trial values.
struct Analysed {
  std::map<std::string, PairingSummary> summaries;    // by MatchKey
  std::map<std::string, std::vector<double>> values;  // by MatchKey; "baseline" for the baseline
  std::vector<std::string> order;                     // non-baseline keys, first-seen order
};

Analysed Analyse(const CompareInput& in, const TrialMetric& metric) {
  Analysed a;
  SummarizeOptions options;
  options.metric = metric;
  for (auto& p : Summarize(in.experiment, in.trials, options).pairings) {
    if (p.baseline) continue;
    const std::string key = MatchKey(p.pairing);
    a.order.push_back(key);
    a.summaries[key] = std::move(p);
  }
  // The same selection as Summarize: measured (done) trials with a finite metric.
  for (const auto& t : in.trials) {
    if (t.state != TrialState::kDone) continue;
    const double v = TrialMetricValue(t, metric);
    if (std::isfinite(v))
      a.values[IsBaselineTrial(t) ? "baseline" : MatchKey(t.pairing)].push_back(v);
  }
  return a;
}

CompareCell CellOf(const Analysed& a, const std::string& key) {
  CompareCell c;
  auto it = a.summaries.find(key);
  if (it == a.summaries.end()) return c;
  c.present = true;
  c.n = it->second.n;
  c.slowdown = it->second.slowdown;
  c.ci_low = it->second.ci_low;
  c.ci_high = it->second.ci_high;
  c.neighbours = it->second.neighbours;
  return c;
}

const std::vector<double>& ValuesOf(const Analysed& a, const std::string& key) {
  static const std::vector<double> kNone;
  auto it = a.values.find(key);
  return it == a.values.end() ? kNone : it->second;
}

// Fewer than 3 trials on any side: the interval would be (nearly) a point (as in Summarize).
bool CiMeaningful(const std::vector<const std::vector<double>*>& samples) {
  for (const auto* s : samples)
    if (s->size() < 3) return false;
  return true;
}

SlowdownRatio RatioOf(const Analysed& first, const Analysed& later, const std::string& key,
                      const CompareCell& c0, const CompareCell& ck, bool inverse, uint64_t seed) {
  SlowdownRatio r;
  if (!c0.present || !ck.present) return r;
  if (c0.slowdown > 0 && std::isfinite(ck.slowdown)) r.ratio = ck.slowdown / c0.slowdown;
  const auto &t0 = ValuesOf(first, key), &b0 = ValuesOf(first, "baseline");
  const auto &tk = ValuesOf(later, key), &bk = ValuesOf(later, "baseline");
  if (!CiMeaningful({&t0, &b0, &tk, &bk})) return r;
  BootstrapOptions opt;
  opt.resamples = kResamples;
  opt.confidence = kConfidence;
  opt.seed = seed;
  const ConfidenceInterval ci = BootstrapSlowdownRatioCI(t0, b0, tk, bk, inverse, opt);
  r.ci_low = ci.low;
  r.ci_high = ci.high;
  return r;
}

// Distinct streams per experiment pair and pairing, reproducible for the same inputs.
uint64_t SeedFor(uint64_t first, uint64_t later, size_t pairing_index) {
  return first ^ (later * 0x9e3779b97f4a7c15ull) ^ ((pairing_index + 1) * 0xbf58476d1ce4e5b9ull);
}

}  // namespace

ConfidenceInterval BootstrapSlowdownRatioCI(const std::vector<double>& t0,
                                            const std::vector<double>& c0,
                                            const std::vector<double>& t1,
                                            const std::vector<double>& c1, bool inverse,
                                            const BootstrapOptions& options) {
  if (t0.empty() || c0.empty() || t1.empty() || c1.empty()) return {};
  std::mt19937_64 rng(options.seed);
  std::vector<double> buffer;
  auto resampled_median = [&](const std::vector<double>& v) {
    buffer.resize(v.size());
    for (double& x : buffer) x = v[static_cast<size_t>(UniformBelow(rng, v.size()))];
    return Median(buffer);
  };
  auto slowdown = [inverse](double treatment, double control) {
    return inverse ? control / treatment : treatment / control;
  };
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(options.resamples));
  for (int i = 0; i < options.resamples; ++i) {
    const double m0 = resampled_median(t0), b0 = resampled_median(c0);
    const double m1 = resampled_median(t1), b1 = resampled_median(c1);
    const double s0 = slowdown(m0, b0), s1 = slowdown(m1, b1);
    // A zero median makes a slowdown infinite or undefined: that resample says nothing.
    if (std::isfinite(s0) && s0 > 0 && std::isfinite(s1)) ratios.push_back(s1 / s0);
  }
  return PercentileInterval(ratios, options.confidence);
}

Comparison Compare(const std::vector<CompareInput>& inputs, const TrialMetric& metric) {
  Comparison c;
  c.metric = metric.Name();
  c.metric_unit = metric.Unit();
  c.confidence = kConfidence;
  c.resamples = kResamples;
  std::vector<Analysed> analysed;
  std::vector<std::string> keys;  // first-seen order over all experiments
  for (const auto& in : inputs) {
    c.experiments.emplace_back(in.experiment.id, in.experiment.name);
    analysed.push_back(Analyse(in, metric));
    for (const auto& k : analysed.back().order)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    ComparedPairing p;
    p.pairing = keys[i];
    int present = 0;
    for (const auto& a : analysed) {
      p.cells.push_back(CellOf(a, keys[i]));
      present += p.cells.back().present;
    }
    p.matched = present >= 2;
    for (size_t k = 1; k < analysed.size(); ++k) {
      p.ratios.push_back(
          p.matched ? RatioOf(analysed[0], analysed[k], keys[i], p.cells[0], p.cells[k],
                              metric.HigherIsFaster(),
                              SeedFor(inputs[0].experiment.seed, inputs[k].experiment.seed, i))
                    : SlowdownRatio{});
    }
    c.pairings.push_back(std::move(p));
  }
  return c;
}

}  // namespace codl::experiment
