// What the runner tests share: run an experiment's whole plan as the scheduler does, with a
// listener that ignores everything (the tests look at the agents and the store instead).
#pragma once

#include <atomic>
#include <string>

#include "controller/experiment_runner.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"

namespace codl::controller {

// Stores `rec` as experiment "exp-N" (N = ++*counter) and runs every planned trial.
inline Status RunWholePlan(ExperimentRunner& runner, store::Store& store,
                           const experiment::ExperimentSpec& spec, int* counter,
                           const std::atomic<bool>& cancel, ExperimentRecord* rec) {
  rec->id = "exp-" + std::to_string(++*counter);
  rec->name = spec.name;
  rec->total_trials = static_cast<int>(experiment::ExpandPlan(spec).size());
  if (Status s = store.CreateExperiment(*rec); !s.ok()) return s;
  struct Quiet : RunListener {
    void OnMessage(const std::string&) override {}
    void OnTrialStarted(const experiment::PlannedTrial&) override {}
    void OnTrialDone(const TrialRecord&) override {}
  } listener;
  return runner.Run(*rec, spec, experiment::ExpandPlan(spec), cancel, &listener);
}

}  // namespace codl::controller
