// The report's prediction section (prediction_section.cc): internal to codl_report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/common/records.h"

namespace codl::report {

// What `codlctl predict ID` prints for the experiment's own combinations, as HTML: each measured
// combination predicted from its singles' sensitivity curves (multiplicative model) with its CI,
// the measured slowdown and the error, then MAPE. "" when the experiment measured no combination
// with singles (nothing to check a prediction against).
std::string RenderPredictions(const experiment::ExperimentResults& results,
                              const std::vector<TrialRecord>& trials, uint64_t seed);

}  // namespace codl::report
