// The per-trial metric (YAML `victim.metric`): which single number stands for one trial's
// victim run. Users care about time to train, so the default is `elapsed`, the time of the
// measured steps: a median of step times jumps between the clusters of a bimodal (pipelined)
// training loop, elapsed time does not. See docs/validity.md. The values are computed in
// lib/analysis/trial_metric.h; here is what the YAML (and `codlctl results --metric`) may name.
#pragma once

#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl::experiment {

struct TrialMetric {
  enum class Kind { kElapsed, kThroughput, kMean, kMedian, kPercentile };
  Kind kind = Kind::kElapsed;
  int percentile = 0;  // kPercentile: NN of pNN, 1..99

  std::string Name() const;  // "elapsed", "p95", ... (what ParseTrialMetric reads back)
  std::string Unit() const;  // "s", or "steps/s" for throughput
  // Throughput grows when the victim is faster: its slowdown is baseline / measured.
  bool HigherIsFaster() const { return kind == Kind::kThroughput; }
};

inline constexpr const char* kAllowedMetrics = "elapsed, throughput, mean, median, pNN (p1..p99)";

// "elapsed" | "throughput" | "mean" | "median" | "pNN"; the error lists the allowed values.
Result<TrialMetric> ParseTrialMetric(std::string_view text);

}  // namespace codl::experiment
