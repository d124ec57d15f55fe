// The tolerance search (docs/experiment-format.md, "Tolerance search"): over one antagonist's
// levels alone, the highest level whose slowdown's CI upper bound stays <= the threshold (the
// victim tolerates it) and the lowest whose CI lower bound exceeds it (it breaks there). The
// controller asks NextToleranceStep after every search step which level to run next; results
// report ToleranceOf, the same judgement on the same trials.
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/stats.h"
#include "lib/common/records.h"
#include "lib/spec/spec.h"

namespace codl::experiment {

struct PairingSummary;

struct ToleranceProbe {
  double level = 0;
  int n = 0;      // measured trials at it (the antagonist held the level)
  int n_all = 0;  // n + the flagged ones (it could not hold the level beside the victim)
  double slowdown = kNaN;
  double ci_low = kNaN;
  double ci_high = kNaN;
  std::string verdict;  // "tolerated", "breaks" or "undecided"
};

struct ToleranceResult {
  std::string name;
  double threshold = 0;
  double resolution = 0;
  int max_trials = 0;
  double tolerated_level = 0;  // L_lo: 0 when no level above the baseline was tolerated
  double breaks_level = kNaN;  // L_hi: NaN when no level broke the threshold
  bool tolerates_max = false;  // level 1 (the calibrated peak) was tolerated
  int trials = 0;              // trials the search ran at its levels (its baselines not counted)
  // "resolved" (L_hi - L_lo <= resolution), "tolerates max", "max_trials" (budget spent),
  // "undecided" (a level's CI kept straddling the threshold), "cannot hold" (most trials at the
  // next level were flagged: the antagonist cannot hold it beside the victim), "running" (not
  // finished yet).
  std::string stop_reason;
  std::string detail;                  // for undecided and cannot hold: which level, why
  std::vector<ToleranceProbe> probes;  // every level of the antagonist alone, ascending
};

// A level's trials the search adds at most; past it a straddling CI ends the search undecided.
inline constexpr int kMaxTrialsPerToleranceLevel = 12;

struct ToleranceStep {
  bool done = false;
  double level = 0;  // the next level to run (when !done)
  int trials = 0;    // how many trials at it
  ToleranceResult result;
};

// `pairings`: the experiment's summaries (Summarize); `search_trials`: the trials the search
// already ran at this antagonist's levels.
ToleranceStep NextToleranceStep(const std::vector<PairingSummary>& pairings,
                                const AntagonistSpec& a, int search_trials);

// The trials the search ran for antagonist `name`: those of it alone past the plan's
// `planned` trials (the search's trials are numbered after the plan's).
int SearchTrials(const std::vector<TrialRecord>& trials, const std::string& name, int planned);

// Every tolerance search of `spec`, judged on `pairings` and `trials` (results, the report).
std::vector<ToleranceResult> ToleranceResults(const ExperimentSpec& spec,
                                              const std::vector<PairingSummary>& pairings,
                                              const std::vector<TrialRecord>& trials);

// "tick tolerates up to level 0.1875, breaks at 0.2188 (slowdown <= 1.1: CI upper bound; 14
// search trials; resolved to 0.05)".
std::string ToleranceLine(const ToleranceResult& r);

}  // namespace codl::experiment
