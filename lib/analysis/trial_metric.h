// Values of the per-trial metric (lib/spec/trial_metric.h, YAML `victim.metric`) for one trial,
// from its recorded steps. See docs/validity.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/common/records.h"
#include "lib/spec/spec.h"
#include "lib/spec/trial_metric.h"

namespace codl::experiment {

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

// Why a trial's per-step values cannot be its step times, or "" when nothing says so: its
// measured steps add up to more than twice the victim's wall time, so the jsonl field or the
// regex capture is not a step time in seconds (a step index, a counter, milliseconds). The
// detail says by how much, names the field or the pattern, quotes the first values and says
// when they only increase (a counter). docs/results.md, "A metric that looks wrong".
std::string MetricLooksWrong(const TrialRecord& t, const ProgressSpec& progress);

}  // namespace codl::experiment
