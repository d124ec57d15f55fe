// The per-trial metric (YAML `victim.metric`): which single number stands for one trial's
// victim run. Users care about time to train, so the default is `elapsed`, the time of the
// measured steps: a median of step times jumps between the clusters of a bimodal (pipelined)
// training loop, elapsed time does not. See docs/validity.md.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/common/records.h"
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

// The metric of one trial, from its measured (non-warmup) steps:
//   elapsed     sum of the measured step times, seconds (time to train those steps)
//   throughput  measured steps / elapsed, steps per second
//   mean, median, pNN  of the measured step times, seconds
// A trial without steps (progress format `wall`, or a record without its series) counts as one
// step of TrialRecord::metric seconds. NaN when there is nothing to measure.
double TrialMetricValue(const TrialRecord& t, const TrialMetric& metric);

// Every metric the store keeps per trial: elapsed, throughput, mean, median, p90, p99.
std::vector<TrialMetric> StoredTrialMetrics();
std::vector<std::pair<std::string, double>> AllTrialMetricValues(const TrialRecord& t);

}  // namespace codl::experiment
