// A workload antagonist's part in a trial (docs/experiment-format.md, "Workload antagonists"):
// its wire form, its figure from the steps that ended inside the victim's run (or its solo
// run), and why a trial is flagged when the neighbour ended first. Pure functions: trial_run.cc
// calls them.
#pragma once

#include <string>
#include <vector>

#include "codl/v1/common.pb.h"
#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::controller::workload {

// What the agent runs: the command, env, workdir, progress and warmup_steps.
v1::VictimSpec ToProto(const experiment::WorkloadSpec& w);

// Its figure over a window: the samples (t_s from the window's start) whose steps ended in
// (0, wall_s]. value: seconds per step (elapsed, mean), or steps per second (throughput);
// steps 0: none ended in the window, value 0.
struct Figure {
  double value = 0;
  double cov = 0;  // of the samples' mean step times
  int steps = 0;
  int samples = 0;
};
Figure InWindow(const std::vector<RateSample>& samples, double wall_s, bool throughput);

// The unit of a workload's figure: "s/step" or "steps/s".
const char* Unit(const experiment::WorkloadSpec& w);

// "neighbour job2 on node-a ended before the victim (exit status 0)"; solo: "... before its solo
// run ended".
std::string EndedEarlyReason(const std::string& name, const std::string& node, bool solo,
                             int exit_code, const std::string& error);

// "no step of workload job2 on node-a ended inside the victim's run": nothing to judge it on.
std::string NoStepsReason(const std::string& name, const std::string& node, bool solo);

}  // namespace codl::controller::workload
