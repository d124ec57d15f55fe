// Simulated experiments with a known true slowdown, summarized by the real Summarize: how often
// the 95% interval holds the truth (coverage) and how often an A/A experiment (truth 1) is
// called a slowdown (false positives). bench/validity runs many; tests run a few hundred.
// Figures in docs/validity.md.
#pragma once

#include <cstdint>

namespace codl::experiment {

struct SimulationOptions {
  int experiments = 200;
  int repetitions = 5;         // trials per pairing (the spec's default repetitions)
  int baselines = 5;           // baseline trials (one per repetition block for <= 4 combinations)
  int steps = 20;              // measured steps per trial
  double step_s = 0.02;        // baseline step time
  double true_slowdown = 1.0;  // 1: A/A, no effect
  double trial_cov = 0.03;     // trial-to-trial variation (lognormal sigma), e.g. 3%
  double step_cov = 0.10;      // step-to-step variation within a trial
  uint64_t seed = 1;
};

struct SimulationFigures {
  int experiments = 0;
  double coverage = 0;       // share of 95% CIs (held-target) that contain true_slowdown
  double ci_positive = 0;    // share whose CI lies wholly above 1
  double p_positive = 0;     // share with Mann-Whitney p < 0.05 and slowdown > 1
  double mean_slowdown = 0;  // mean of the reported slowdowns
};

// Deterministic for given options (portable RNG: mt19937_64 with our own mappings).
SimulationFigures SimulateExperiments(const SimulationOptions& options);

}  // namespace codl::experiment
