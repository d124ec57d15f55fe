// codl-validity-bench: the long coverage run of docs/validity.md. Prints, for a grid of
// repetitions and true slowdowns, the 95% CI coverage and the false-positive rates of many
// seeded simulated experiments summarized by the real Summarize.
// Usage: codl-validity-bench [EXPERIMENTS [SEED]]
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

#include "lib/analysis/validity_sim.h"

int main(int argc, char** argv) {
  using codl::experiment::SimulateExperiments;
  using codl::experiment::SimulationOptions;
  const int experiments = argc > 1 ? std::atoi(argv[1]) : 2000;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::printf(
      "experiments,repetitions,baselines,true_slowdown,trial_cov,step_cov,coverage,"
      "ci_positive,p_positive,mean_slowdown\n");
  for (int reps : {3, 5, 10, 20}) {
    for (double truth : {1.0, 1.2}) {
      SimulationOptions o;
      o.experiments = experiments;
      o.repetitions = reps;
      o.baselines = reps;
      o.true_slowdown = truth;
      o.seed = seed;
      const auto f = SimulateExperiments(o);
      std::printf("%d,%d,%d,%.2f,%.2f,%.2f,%.4f,%.4f,%.4f,%.4f\n", f.experiments, reps, o.baselines,
                  truth, o.trial_cov, o.step_cov, f.coverage, f.ci_positive, f.p_positive,
                  f.mean_slowdown);
      std::fflush(stdout);
    }
  }
  return 0;
}
