// Adaptive repetitions (docs/validity.md, "Adaptive repetitions"): how precise each pairing's
// slowdown is after a block of trials, when to stop, why it stopped, what the achieved n could
// have detected (minimal detectable effect), and how many blocks a previous run suggests.
// After Kalibera & Jones, "Rigorous benchmarking in reasonable time" (ISMM 2013): repeat until
// the interval is as narrow as asked, rather than a fixed count chosen in advance.
#pragma once

#include <optional>
#include <string>

#include "lib/analysis/results.h"
#include "lib/spec/spec.h"

namespace codl::experiment {

// (ci_high - ci_low) / 2 / slowdown: the CI half-width relative to the slowdown (0.02 = +-2 %).
// +inf when the pairing has no interval yet (fewer than 3 trials on a side, nothing measured).
double RelativeHalfWidth(const PairingSummary& p);

struct PrecisionCheck {
  bool reached = false;        // every interference pairing is at or under the target
  double widest = kNaN;        // the largest relative half-width (+inf: a pairing has no CI)
  std::string widest_pairing;  // the pairing it belongs to
};

// Over the interference pairings of `results` (the baseline has no CI of its own). An
// experiment without interference pairings has nothing to make precise: reached at once.
PrecisionCheck CheckPrecision(const ExperimentResults& results, double target);

// The stop reasons recorded in the store and shown by progress, results and the report.
std::string TargetReachedReason(int blocks);  // "target reached after 12 blocks"
// "max reached (40) with widest half-width 3.1% at pairing membw@0.5"
std::string MaxReachedReason(int blocks, const PrecisionCheck& check);
inline constexpr const char kCancelledReason[] = "cancelled";

// One line while running: "block 7 (min 5, max 40): widest half-width 3.1% at membw@0.5,
// target 2%".
std::string PrecisionLine(int blocks, const AdaptiveRepetitions& a, const PrecisionCheck& check);

// The baseline's robust spread relative to its median: 1.4826 * MAD / median (the SD for
// normal data, unmoved by one outlier). NaN with fewer than 2 values or a median <= 0.
double RobustRelativeSpread(const std::vector<double>& baseline);

// The smallest slowdown (1.05 = 5 % slower) that n trials against n_base baselines detect with
// a two-sided test at `alpha` with probability `power`, by the normal approximation:
//   1 + (z(1 - alpha/2) + z(power)) * spread * sqrt(1/n + 1/n_base).
// NaN when n or n_base is below 2 or the spread is unknown.
double MinimumDetectableSlowdown(double relative_spread, size_t n, size_t n_base,
                                 double alpha = 0.05, double power = 0.8);

// `validate --plan`: blocks a previous experiment's precision suggests for `a.ci_halfwidth`,
// assuming the half-width shrinks as 1/sqrt(n). nullopt when no pairing of it had a CI.
struct BlocksEstimate {
  int blocks = 0;            // needed (at least a.min); may exceed a.max
  double half_width = kNaN;  // the deciding pairing's relative half-width back then
  int n = 0;                 // at its n
  std::string pairing;       // the deciding (slowest to converge) pairing
};
std::optional<BlocksEstimate> EstimateBlocks(const ExperimentResults& previous,
                                             const AdaptiveRepetitions& a);

}  // namespace codl::experiment
