// The tolerance search's part in a run (docs/experiment-format.md, "Tolerance search"): once
// the plan has run, each antagonist with a `tolerance` gets its next level (a bisection over
// [0, 1], lib/analysis/tolerance.h) as trials appended to the run, with a baseline beside them,
// until every search has stopped. Pure planning: ExperimentRunner::RunPlaced runs the trials.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::controller {

struct ToleranceExtension {
  std::vector<experiment::PlannedTrial> trials;  // empty: every search has stopped
  std::vector<std::string> finished;  // ToleranceLine of each search that stopped just now
};

// `planned`: the plan's trial count (search trials are numbered after it); `done`: every trial
// of the experiment so far; `next_index`: the index the first appended trial gets; `announced`:
// searches already reported stopped (updated).
ToleranceExtension NextToleranceTrials(const ExperimentRecord& exp,
                                       const experiment::ExperimentSpec& spec, size_t planned,
                                       const std::vector<TrialRecord>& done, int next_index,
                                       std::set<std::string>* announced);

// Whether any antagonist of `spec` has a tolerance search.
bool HasToleranceSearch(const experiment::ExperimentSpec& spec);

}  // namespace codl::controller
