#include "controller/workload_trial.h"

#include <cmath>

#include "controller/runner_wire.h"
#include "lib/common/statistics.h"

namespace codl::controller::workload {

v1::VictimSpec ToProto(const experiment::WorkloadSpec& w) {
  experiment::VictimSpec v;
  v.command = w.command;
  v.env = w.env;
  v.workdir = w.workdir;
  v.progress = w.progress;
  v.warmup_steps = w.warmup_steps;
  v.timeout_s = 0;  // a workload runs until it is stopped
  return runner::ToProto(v);
}

Figure InWindow(const std::vector<RateSample>& samples, double wall_s, bool throughput) {
  Figure f;
  double sum_s = 0;
  std::vector<double> means;
  for (const auto& s : samples) {
    if (s.steps <= 0 || !(s.t_s > 0) || s.t_s > wall_s || !std::isfinite(s.achieved)) continue;
    f.steps += s.steps;
    sum_s += s.achieved * s.steps;
    means.push_back(s.achieved);
  }
  f.samples = static_cast<int>(means.size());
  if (f.steps == 0 || !(sum_s > 0)) return f;
  const double per_step_s = sum_s / f.steps;
  f.value = throughput ? 1 / per_step_s : per_step_s;
  f.cov = CoefficientOfVariationOrZero(means);
  return f;
}

const char* Unit(const experiment::WorkloadSpec& w) {
  return w.throughput() ? "steps/s" : "s/step";
}

std::string EndedEarlyReason(const std::string& name, const std::string& node, bool solo,
                             int exit_code, const std::string& error) {
  std::string why = "neighbour " + name + " on " + node + " ended before " +
                    (solo ? std::string("its solo run did") : std::string("the victim")) + " (" +
                    (exit_code < 0 ? "signal " + std::to_string(-exit_code)
                                   : "exit status " + std::to_string(exit_code)) +
                    ")";
  if (!error.empty()) why += ": " + error;
  return why;
}

std::string NoStepsReason(const std::string& name, const std::string& node, bool solo) {
  return "no measured step of workload " + name + " on " + node + " ended inside " +
         (solo ? "its solo run" : "the victim's run") +
         ": its figure is unknown (longer runs, or fewer warmup_steps)";
}

}  // namespace codl::controller::workload
