// `codlctl validate --plan` for adaptive repetitions: how many blocks the target CI half-width
// will likely take, from the newest finished experiment in a results database with the same
// victim command on the same nodes (docs/validity.md, "Adaptive repetitions").
#pragma once

#include <string>

#include "lib/spec/spec.h"

namespace codl::cli {

// One line for validate --plan: the estimate and the experiment it came from, or why there is
// none. "" when `spec` does not use adaptive repetitions.
std::string AdaptiveRepetitionsEstimate(const experiment::ExperimentSpec& spec,
                                        const std::string& db);

// Whether two specs run the same victim command on the same node selection (the victim's own
// selector, else the experiment's).
bool SameVictimOnSameNodes(const experiment::ExperimentSpec& a,
                           const experiment::ExperimentSpec& b);

}  // namespace codl::cli
