// What the runner tests share: run an experiment's whole plan as the scheduler does, with a
// listener that keeps the events it was told (most tests look at the agents and the store).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "controller/experiment_runner.h"
#include "lib/spec/spec.h"
#include "lib/store/store.h"

namespace codl::controller {

struct EventLog : RunListener {
  void OnEvent(const v1::ExperimentEvent& ev) override { events.push_back(ev); }
  void OnTrialStarted(const experiment::PlannedTrial&) override {}
  void OnTrialDone(const TrialRecord&) override {}
  std::vector<v1::ExperimentEvent> events;
};

// Stores `rec` as experiment "exp-N" (N = ++*counter) and runs every planned trial.
inline Status RunWholePlan(ExperimentRunner& runner, store::Store& store,
                           const experiment::ExperimentSpec& spec, int* counter,
                           const std::atomic<bool>& cancel, ExperimentRecord* rec,
                           EventLog* log = nullptr) {
  rec->id = "exp-" + std::to_string(++*counter);
  rec->name = spec.name;
  rec->total_trials = static_cast<int>(experiment::ExpandPlan(spec).size());
  if (Status s = store.CreateExperiment(*rec); !s.ok()) return s;
  EventLog quiet;
  return runner.Run(*rec, spec, experiment::ExpandPlan(spec), cancel, log ? log : &quiet);
}

}  // namespace codl::controller
