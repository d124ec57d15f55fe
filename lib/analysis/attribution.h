// Additive attribution: where a pairing's added step time went. Per trial, the mean time per
// measured step of the step and of each phase (a phase a step does not report counts 0 there,
// so the phases of one trial add up to its step, less what the victim does not time); per
// pairing, the median over its measured trials and its difference from the baseline's, with the
// bootstrap CI the slowdown uses (BootstrapMedianDifferenceCI). docs/results.md, "Phases".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/common/records.h"

namespace codl::experiment {

// A trial's mean per measured (non-warm-up) step: its step time and every phase it reports.
struct StepMeans {
  int steps = 0;                         // measured steps with a finite step time; 0: no figures
  double step_s = 0;                     // mean step time
  std::map<std::string, double> phases;  // phase -> mean per step (0 where a step lacks it)
};
StepMeans MeanPerStep(const std::vector<VictimStep>& steps);

// Stages that run beside the training loop rather than in it (codl-victim's and codl.run's
// loader threads: `read_s`, `decode_s`): they do not add to the step; the on-path phase they
// feed ("data_wait_s") is what they cost it. docs/victim.md, "Phases".
bool IsOverlappedPhase(const std::string& phase);
std::string FedPhase(const std::string& phase);  // "data_wait_s" for an overlapped one, else ""

// A phase whose baseline mean is below this share of the baseline's step is never shown as a
// ratio (3 µs at baseline, 3 ms under interference is "+3 ms", not "1000x").
constexpr double kNearZeroShare = 0.01;

struct BootstrapOptions;
struct PairingSummary;
// Fills p->attribution and the attribution fields of p->phases (whose names are already set)
// from the pairing's measured trials against the baseline's. For the baseline itself only its
// means (no added time). Called by Summarize for every pairing.
void AttributePairing(const std::vector<const TrialRecord*>& measured,
                      const std::vector<const TrialRecord*>& baseline,
                      const BootstrapOptions& options, PairingSummary* p);

// "+3.10 ms" / "-4.2 us" / "+1.39 s": seconds added per step, signed, in ms (us below 1 ms, s
// from 1 s); "-" for NaN.
std::string AddedTime(double seconds);
// The results table's line under a pairing (attribution_format.cc), "" without phases:
//   baseline     "phases: step 16.2 ms = data_wait 3.2 us + compute 10.1 ms + untimed 1.0 ms;
//                 overlapped: read 30.0 ms (feeds data_wait)"
//   interfered   "phases: +3.10 ms/step [+2.95 ms, +3.30 ms] = data_wait +3.05 ms* + compute
//                 +0.04 ms (1.00x) + untimed +0.01 ms; overlapped: read 2.10x (feeds data_wait)"
// (* the phase's CI excludes 0; a ratio only where the baseline's phase is not near zero).
// Without per-step series: each phase's median ratio, or its time, as before attribution.
std::string PhasesLine(const PairingSummary& p);

}  // namespace codl::experiment
