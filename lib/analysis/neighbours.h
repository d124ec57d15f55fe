// Both directions of a pairing with a workload antagonist (a real job as the neighbour;
// docs/results.md, "Two-way figures"): the victim's slowdown beside it (tolerated, the
// pairing's own figure) and the workload's slowdown beside the victim (caused), from its steps
// inside the victim's runs against its solo runs, with CI and p-value; and the pair's combined
// normalized throughput, 1 / victim slowdown + 1 / workload slowdown (> 1: co-location pays).
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/stats.h"
#include "lib/common/records.h"

namespace codl::experiment {

struct NeighbourSummary {
  std::string name;          // the workload antagonist's name
  std::string unit;          // of its figures: "s/step" or "steps/s"
  int n = 0;                 // the pairing's measured trials that have its figure
  int n_solo = 0;            // its measured solo trials (pairing "NAME@solo")
  double value = kNaN;       // median over those trials of its figure beside the victim
  double solo_value = kNaN;  // median over its solo trials
  double slowdown = kNaN;    // its own slowdown beside the victim (> 1 = slower)
  double ci_low = kNaN;      // bootstrap 95% CI of `slowdown` (NaN below 3 trials a side)
  double ci_high = kNaN;
  double p_value = kNaN;              // two-sided Mann-Whitney U of its figures beside vs alone
  double victim_slowdown = kNaN;      // the pairing's slowdown (the victim beside it)
  double combined_throughput = kNaN;  // 1 / victim_slowdown + 1 / slowdown
};

// The workload antagonists of `pairing_trials` (measured trials of one pairing), each against
// its solo trials among `all_trials`. `victim_slowdown`: the pairing's. Empty when the pairing
// has no workload. Seeded like the pairing's own CI.
std::vector<NeighbourSummary> SummarizeNeighbours(
    const std::vector<const TrialRecord*>& pairing_trials,
    const std::vector<TrialRecord>& all_trials, double victim_slowdown,
    const BootstrapOptions& options);

// The table's line for one: "two-way: job2 beside the victim 1.20x [1.18, 1.22] (p 0.004;
// 0.024 vs 0.020 s/step alone), the victim beside job2 1.30x; combined throughput 1.60 (> 1:
// co-location pays)".
std::string NeighbourLine(const NeighbourSummary& n);

// A workload's figure in one trial: the mean over its instances (nodes) of their figures; NaN
// when it has none there. `solo`: the trial must be its solo trial.
double NeighbourValue(const TrialRecord& t, const std::string& name);

}  // namespace codl::experiment
