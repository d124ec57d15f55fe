#include "controller/trial_policies.h"

namespace codl::controller {

TracePolicy::TracePolicy(const experiment::ExperimentSpec& spec,
                         const std::vector<experiment::PlannedTrial>& listed)
    : spec_(spec) {
  if (spec.victim.trace_steps <= 0) return;
  untraced_ = spec;
  untraced_.victim.trace_steps = 0;
  for (const auto& trial : listed) first_of_pairing_.emplace(trial.pairing, trial.index);
}

bool TracePolicy::Traced(const experiment::PlannedTrial& trial) const {
  if (spec_.victim.trace_steps <= 0) return false;
  const auto first = first_of_pairing_.find(trial.pairing);
  return first != first_of_pairing_.end() && first->second == trial.index;
}

}  // namespace codl::controller
