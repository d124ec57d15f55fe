// Interaction of antagonists: does a combination slow the victim more (super-additive) or less
// (sub-additive) than its singles at the same intensities predict? docs/results.md,
// "Interaction".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/stats.h"

namespace codl::experiment {

enum class InteractionVerdict { kNone, kSuperAdditive, kSubAdditive };
// "", "super-additive", "sub-additive"
const char* ToString(InteractionVerdict v);

struct InteractionSummary {
  std::string pairing;               // the combination's key, "cpu@0.5+membw@0.25"
  std::vector<std::string> singles;  // its singles' keys, in the key's (name) order
  // Singles the experiment did not measure: then every figure below is NaN.
  std::vector<std::string> missing_singles;
  int n = 0;                             // measured trials of the combination
  std::vector<double> single_slowdowns;  // S_i, one per single
  double slowdown = kNaN;                // measured S_AB
  double multiplicative = kNaN;          // prod S_i
  double additive = kNaN;                // 1 + sum (S_i - 1): S_A + S_B - 1 for a pair
  double ratio = kNaN;                   // S_AB / prod S_i
  double ci_low = kNaN, ci_high = kNaN;  // bootstrap CI of the ratio
  bool ci_small_n = false;               // a group had < 3 trials: no CI, no verdict
  InteractionVerdict verdict = InteractionVerdict::kNone;  // CI excludes 1
};

struct InteractionOptions {
  int resamples = 10000;
  double confidence = 0.95;
  uint64_t seed = 42;
  bool higher_is_faster = false;  // the metric is a throughput: slowdown = baseline / value
};

// One combination from per-trial metric values. Slowdowns are ratios of medians (as in
// Summarize). The CI resamples the baseline, every single and the combination together: each
// resample draws every group with replacement (sizes kept), in that order, from one
// std::mt19937_64 seeded with options.seed, and recomputes the ratio from the resampled medians,
// so the uncertainty of the shared baseline and of the singles enters the interval. Resamples
// with a zero median are skipped. Percentile bounds (R type 7).
InteractionSummary ComputeInteraction(const std::vector<double>& baseline,
                                      const std::vector<std::vector<double>>& singles,
                                      const std::vector<double>& combination,
                                      const InteractionOptions& options = {});

// Every key of `order` with two or more parts, from `samples` (pairing key -> per-trial values,
// "baseline" included; see MeasuredSamples). A combination whose singles at the same intensities
// were not measured is listed with missing_singles. Each combination's seed is
// PairingSeed(options.seed, "interaction", key).
std::vector<InteractionSummary> SummarizeInteractions(
    const std::map<std::string, std::vector<double>>& samples,
    const std::vector<std::string>& order, const InteractionOptions& options);

}  // namespace codl::experiment
