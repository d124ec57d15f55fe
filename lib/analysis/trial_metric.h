// Values of the per-trial metric (lib/spec/trial_metric.h, YAML `victim.metric`) for one trial,
// from its recorded steps. See docs/validity.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/common/records.h"
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

}  // namespace codl::experiment
