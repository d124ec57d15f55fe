// The pressure a workload causes (iBench's "caused interference"; docs/results.md, "Pressure"):
// how far each injector antagonist's achieved rate at full tilt (`max`, or a level >= 1: the
// calibrated peak) fell beside the workload against alone, per resource, with a bootstrap CI.
//  * The victim's pressure on antagonist R: over the measured (done) trials of R alone beside
//    the victim at full tilt, each trial's f = achieved_rate / peak_rate (the peak was
//    calibrated alone on the node); pressure = 1 - mean f. It includes whatever else ran on
//    the node during the trials (and the calibration's own drift), not the victim alone.
//  * A workload antagonist W's pressure on R: pairings R@max+W@run (R beside the victim and W)
//    against R@max (beside the victim only): pressure = 1 - mean achieved with W / mean without.
//    Only where both were measured; the victim is in both, so this is W's share on top of it.
// The CI is a percentile bootstrap of the means (resampling trials; both sides independently
// for a ratio), seeded by the experiment's seed; none (NaN) below 3 trials a side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/stats.h"
#include "lib/common/records.h"

namespace codl::experiment {

// The row name of the victim's own pressure (a workload antagonist's row carries its name).
inline constexpr const char* kPressureVictim = "victim";

struct PressureSummary {
  std::string workload;    // kPressureVictim, or the workload antagonist's name
  std::string antagonist;  // the injector antagonist pressed on, e.g. "membw"
  std::string injector;    // its injector, e.g. "memcpy"
  std::string unit;        // its rate's unit, "bytes/s"
  std::string intensity;   // the pairing label it ran at: "max" or a level >= 1 ("1")
  double pressure = kNaN;  // 1 - achieved beside / alone: 0 none, 1 starved
  double ci_low = kNaN;    // bootstrap CI of `pressure` (NaN below 3 trials a side)
  double ci_high = kNaN;
  int n = 0;        // trials beside the workload (victim: R's full-tilt singles with a peak)
  int n_alone = 0;  // trials without it (R@max without W); victim: 0 (alone = calibrated peak)
};

// The victim's per-trial fractions achieved / peak of one injector antagonist at full tilt:
// what its pressure, and a prediction's bootstrap, resample.
struct VictimPressureSamples {
  std::string antagonist, injector, unit, intensity;
  std::vector<double> fractions;  // one per measured trial, in trial order
};

// Per injector antagonist (by name) that has full-tilt singles with a calibrated peak among
// the measured trials. Workload antagonists and solo trials are never pressed on.
std::vector<VictimPressureSamples> VictimPressure(const std::vector<TrialRecord>& trials);

// 1 - mean(fractions); NaN when empty.
double PressureFromFractions(const std::vector<double>& fractions);

struct PressureOptions {
  int resamples = 10000;
  double confidence = 0.95;
  uint64_t seed = 42;  // mixed with the workload and the antagonist per row
};

// Every row: the victim's first (by antagonist name), then each workload antagonist's (by
// name, then antagonist).
std::vector<PressureSummary> SummarizePressure(const std::vector<TrialRecord>& trials,
                                               const PressureOptions& options = {});

// The table's line for one workload's rows (all with the same `workload`): "pressure: victim
// on membw (memcpy) 0.230 [0.180, 0.290], cpu (cpu) 0.410 [n/a: n < 3]". Not escaped.
std::string PressureLine(const std::vector<PressureSummary>& rows);

}  // namespace codl::experiment
