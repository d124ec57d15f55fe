// The per-trial metric values of every pairing, grouped by pairing key, and the key's parts:
// what the interaction and prediction figures resample (results.cc keeps its own summaries).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/trial_metric.h"
#include "lib/common/records.h"

namespace codl::experiment {

// "membw@0.5+storage@2GiB/s" -> {membw: "0.5", storage: "2GiB/s"}; "baseline" -> {}. A '+'
// inside a rate label ("1e+9/s") does not start a new part: a part must contain '@'.
std::map<std::string, std::string> ParsePairingKey(const std::string& key);

// The canonical key of a set of parts ({membw: "0.5"} -> "membw@0.5"), names sorted.
std::string JoinPairingKey(const std::map<std::string, std::string>& parts);

// A baseline trial (flagged as one, or an old record whose pairing key says so).
bool IsBaselineTrial(const TrialRecord& t);

// Slowdown of a group's median against the baseline's (> 1 = slower whatever the metric's
// direction); NaN when the denominator is not positive.
double SlowdownFromMedians(double median, double base_median, bool higher_is_faster);

// Metric values of the measured (state done) trials per pairing key; every baseline trial
// under "baseline". Non-finite values (no measurement) are left out, as in Summarize.
// include_flagged: flagged trials too (an antagonist missed its target), as Summarize's
// "all trials" figures do.
std::map<std::string, std::vector<double>> MeasuredSamples(const std::vector<TrialRecord>& trials,
                                                           const TrialMetric& metric,
                                                           bool include_flagged = false);

// A bootstrap seed for one pairing's figures: the experiment's seed mixed with the key (and a
// purpose, so two figures of one pairing draw different streams). Reproducible everywhere.
uint64_t PairingSeed(uint64_t experiment_seed, const std::string& purpose, const std::string& key);

}  // namespace codl::experiment
