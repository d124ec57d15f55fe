// Per-trial policies of ExperimentRunner::RunPlaced, each in a room of its own (beside
// BlockStopper, the adaptive repetitions' stopping rule): the 3-failures rule and which trials
// take a profiler trace. A new per-trial policy goes here, as a small class with its own test
// (tests/controller/trial_policies_test.cc), and RunPlaced calls it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::controller {

// A victim that cannot run at all (a bad command) fails every trial: the experiment stops after
// its first kLimit trials, all failed, rather than failing the whole plan.
class FailureStreak {
 public:
  static constexpr int kLimit = 3;
  // Each trial in plan order, a resumed run's kept ones included.
  void Add(const TrialRecord& trial) { run_ = trial.state == TrialState::kFailed ? run_ + 1 : 0; }
  // Whether the trial just added, at plan index `index`, ends a run of failures that began
  // with the experiment's first trial and has reached kLimit.
  bool StopsAt(int index) const { return run_ >= kLimit && index + 1 == run_; }

 private:
  int run_ = 0;
};

// victim.trace: the first trial of each listed pairing (the baseline's too) takes a profiler
// trace; the others, and a tolerance search's steps, run untraced, as the profiler slows the
// steps it records.
class TracePolicy {
 public:
  TracePolicy(const experiment::ExperimentSpec& spec,
              const std::vector<experiment::PlannedTrial>& listed);
  bool Traced(const experiment::PlannedTrial& trial) const;
  // The spec to run `trial` with: victim.trace_steps is 0 unless it is traced.
  const experiment::ExperimentSpec& SpecFor(const experiment::PlannedTrial& trial) const {
    return Traced(trial) || spec_.victim.trace_steps == 0 ? spec_ : untraced_;
  }

 private:
  const experiment::ExperimentSpec& spec_;
  experiment::ExperimentSpec untraced_;
  std::map<std::string, int> first_of_pairing_;  // pairing -> index of its first listed trial
};

}  // namespace codl::controller
