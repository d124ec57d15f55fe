#include "lib/analysis/interaction.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "lib/analysis/pairing_samples.h"
#include "lib/common/random.h"

namespace codl::experiment {
namespace {

struct Figures {
  std::vector<double> singles;
  double combined = kNaN, product = kNaN, ratio = kNaN;
};

Figures FiguresOf(double base_median, const std::vector<double>& single_medians,
                  double combined_median, bool higher_is_faster) {
  Figures f;
  f.product = 1;
  for (double m : single_medians) {
    f.singles.push_back(SlowdownFromMedians(m, base_median, higher_is_faster));
    f.product *= f.singles.back();
  }
  f.combined = SlowdownFromMedians(combined_median, base_median, higher_is_faster);
  if (f.product > 0) f.ratio = f.combined / f.product;
  return f;
}

std::vector<double> Resample(const std::vector<double>& v, std::mt19937_64& rng) {
  std::vector<double> out(v.size());
  for (auto& x : out) x = v[UniformBelow(rng, v.size())];
  return out;
}

ConfidenceInterval JointRatioCI(const std::vector<double>& baseline,
                                const std::vector<std::vector<double>>& singles,
                                const std::vector<double>& combination,
                                const InteractionOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(std::max(0, options.resamples)));
  std::vector<double> single_medians(singles.size());
  for (int r = 0; r < options.resamples; ++r) {
    const double base = Median(Resample(baseline, rng));
    for (size_t i = 0; i < singles.size(); ++i)
      single_medians[i] = Median(Resample(singles[i], rng));
    const double combined = Median(Resample(combination, rng));
    const double ratio = FiguresOf(base, single_medians, combined, options.higher_is_faster).ratio;
    if (std::isfinite(ratio)) ratios.push_back(ratio);
  }
  return PercentileInterval(ratios, options.confidence);
}

}  // namespace

const char* ToString(InteractionVerdict v) {
  switch (v) {
    case InteractionVerdict::kSuperAdditive: return "super-additive";
    case InteractionVerdict::kSubAdditive: return "sub-additive";
    default: return "";
  }
}

InteractionSummary ComputeInteraction(const std::vector<double>& baseline,
                                      const std::vector<std::vector<double>>& singles,
                                      const std::vector<double>& combination,
                                      const InteractionOptions& options) {
  InteractionSummary s;
  s.n = static_cast<int>(combination.size());
  bool any_empty = baseline.empty() || combination.empty();
  bool small = baseline.size() < 3 || combination.size() < 3;
  std::vector<double> single_medians;
  for (const auto& v : singles) {
    any_empty = any_empty || v.empty();
    small = small || v.size() < 3;
    single_medians.push_back(Median(v));
  }
  if (any_empty) return s;
  const Figures f =
      FiguresOf(Median(baseline), single_medians, Median(combination), options.higher_is_faster);
  s.single_slowdowns = f.singles;
  s.slowdown = f.combined;
  s.multiplicative = f.product;
  s.additive = 1;
  for (double x : f.singles) s.additive += x - 1;
  s.ratio = f.ratio;
  // As for the slowdown CI (results.cc): below 3 trials a group has almost nothing to resample.
  s.ci_small_n = small;
  if (small) return s;
  const ConfidenceInterval ci = JointRatioCI(baseline, singles, combination, options);
  s.ci_low = ci.low;
  s.ci_high = ci.high;
  if (ci.low > 1) s.verdict = InteractionVerdict::kSuperAdditive;
  else if (ci.high < 1) s.verdict = InteractionVerdict::kSubAdditive;
  return s;
}

std::vector<InteractionSummary> SummarizeInteractions(
    const std::map<std::string, std::vector<double>>& samples,
    const std::vector<std::string>& order, const InteractionOptions& options) {
  static const std::vector<double> kNone;
  auto values = [&](const std::string& key) -> const std::vector<double>& {
    auto it = samples.find(key);
    return it == samples.end() ? kNone : it->second;
  };
  std::vector<InteractionSummary> out;
  for (const auto& key : order) {
    const auto parts = ParsePairingKey(key);
    if (parts.size() < 2) continue;
    std::vector<std::string> single_keys;
    std::vector<std::vector<double>> singles;
    std::vector<std::string> missing;
    for (const auto& [name, value] : parts) {
      single_keys.push_back(JoinPairingKey({{name, value}}));
      singles.push_back(values(single_keys.back()));
      if (singles.back().empty()) missing.push_back(single_keys.back());
    }
    InteractionOptions o = options;
    o.seed = PairingSeed(options.seed, "interaction", key);
    InteractionSummary s;
    if (missing.empty()) s = ComputeInteraction(values("baseline"), singles, values(key), o);
    s.pairing = key;
    s.singles = single_keys;
    s.missing_singles = missing;
    s.n = static_cast<int>(values(key).size());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace codl::experiment
