// Predicting slowdowns a victim was not measured under, from its sensitivity profile: the
// singles of one experiment (each antagonist alone at several intensities). `codlctl predict`;
// docs/results.md, "Prediction".
//  * Sensitivity curve per antagonist: the singles' slowdowns against intensity, fitted
//    non-decreasing (pool-adjacent-violators, weighted by trials) through (0, 1) -- no antagonist,
//    no slowdown -- and interpolated piecewise-linearly. Past the highest measured intensity the
//    last segment is extended, and the prediction says it extrapolates.
//  * A combination: the multiplicative model prod S_i by default (each antagonist stretches
//    the time the others left), or the additive 1 + sum (S_i - 1).
//  * Uncertainty: a percentile bootstrap CI that resamples the baseline and every single,
//    refits the curves and predicts again.
//  * A measured single is predicted from the other points of its curve (it is left out of the
//    fit), so its error is that of interpolating; a measured combination from its singles.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/analysis/pressure.h"
#include "lib/analysis/stats.h"
#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::experiment {

struct CurvePoint {
  double x = 0;         // intensity: level (fraction of peak) or rate (base units)
  double slowdown = 1;  // measured (in a fit's input) or fitted (in its knots)
  int n = 1;            // trials behind it: its weight in the fit
  bool at_max = false;  // a `max` single, placed where it was measured (AchievedAtMax)
};

class SensitivityCurve {
 public:
  // Non-decreasing fit through (0, 1) and `points` (x > 0); points at one x are pooled.
  static SensitivityCurve Fit(std::vector<CurvePoint> points);
  double At(double x) const;  // NaN for x < 0
  bool Extrapolates(double x) const { return x > knots_.back().x; }
  const std::vector<CurvePoint>& knots() const { return knots_; }

 private:
  std::vector<CurvePoint> knots_{CurvePoint{}};  // ascending x, starting at (0, 1)
};

enum class CombinationModel { kMultiplicative, kAdditive };
const char* ToString(CombinationModel m);  // "multiplicative", "additive"
Result<CombinationModel> ParseCombinationModel(const std::string& name);

// Where an antagonist's `max` single (NAME@max: open loop, no requested level) sits on its
// curve: what it achieved alone, as a fraction of its calibrated peak on a curve of levels and
// as a rate (base units) on a curve of rates. NaN where the trials did not record it.
struct AchievedAtMax {
  double level = kNaN;
  double rate = kNaN;
};

// AchievedAtMax per antagonist, the mean over the measured (done) trials of its single at max;
// flagged trials too with include_flagged. Antagonists without such a single are absent.
std::map<std::string, AchievedAtMax> AchievedAtMaxOf(const std::vector<TrialRecord>& trials,
                                                     bool include_flagged = false);

struct PredictOptions {
  CombinationModel model = CombinationModel::kMultiplicative;
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = 42;
  bool higher_is_faster = false;  // throughput metric: slowdown = baseline / value
  // `max` singles and queries at `max` are placed at the achieved intensity recorded here
  // (AchievedAtMaxOf); an antagonist absent from it cannot be placed at `max`.
  std::map<std::string, AchievedAtMax> at_max;
};

struct Prediction {
  std::string combination;               // canonical key, "cpu@0.5+membw@0.25"
  std::vector<double> single_slowdowns;  // the curves' values, one per part in key order
  double predicted = kNaN;
  double ci_low = kNaN, ci_high = kNaN;
  bool extrapolated = false;  // an intensity lies past its curve's highest measured one
  bool left_out = false;      // a measured single, predicted without its own point
  int n_measured = 0;         // trials of this combination in the experiment (0: none)
  double measured = kNaN;     // its measured slowdown (ratio of medians)
  double error = kNaN;        // predicted / measured - 1
};

struct CurveSummary {
  std::string antagonist;
  bool absolute = false;  // intensities are rates, not levels
  std::vector<CurvePoint> measured, fitted;
};

struct PredictionReport {
  std::string model;
  std::vector<CurveSummary> curves;
  std::vector<Prediction> predictions;
  // Mean |error| in percent over the predictions with a measurement, and split by kind.
  double mape = kNaN, mape_combinations = kNaN, mape_interpolations = kNaN;
  int n_compared = 0;
  double max_abs_error = kNaN;  // percent
  // Default questions that could not be asked (an antagonist without measured singles), why.
  std::vector<std::string> skipped;
};

// `samples`: pairing key -> per-trial metric values ("baseline" included; MeasuredSamples).
// `queries`: combination keys ("cpu@0.5+membw@0.25", "membw@0.375"); empty: every measured
// combination of two or more antagonists and every measured single (left out); those naming an
// antagonist without singles are listed in `skipped` instead. Errors: no
// baseline, no singles, a query naming an antagonist without singles, or an intensity that
// cannot be placed on its curve (max without an achieved intensity in options.at_max, or a
// rate on a curve of levels).
Result<PredictionReport> PredictSlowdowns(const std::map<std::string, std::vector<double>>& samples,
                                          const std::vector<std::string>& queries,
                                          const PredictOptions& options = {});

// ---- Prediction from profiles (`codlctl predict --victim-profile P --neighbour N`) ----
// Bubble-Up style: the victim profile P is an experiment whose victim was swept by injector
// antagonists (its singles give one sensitivity curve per injector: memcpy, cpu, ...); the
// neighbour N is an experiment where the neighbour job ran as the victim, and its pressure on
// each injector (lib/analysis/pressure.h, the victim's rows) says what fraction p_R of resource
// R it takes. The neighbour is taken to be like R's antagonist at level p_R, so the predicted
// slowdown is prod_R curve_R(p_R) (or 1 + sum (curve_R(p_R) - 1), additive). Limits: a
// pressure is measured against an injector at full tilt, not against P's victim; resources
// neither experiment swept are invisible; the curves are P's singles, so interactions between
// resources are the combination model's guess.

struct ProfileResource {
  std::string injector;              // the resource: the injector both experiments used
  std::string antagonist;            // the profile's antagonist (its curve) with that injector
  std::string neighbour_antagonist;  // the neighbour experiment's antagonist pressed on
  double pressure = kNaN;            // the neighbour's pressure, clamped to [0, 1]: p_R
  int n_pressure = 0;                // trials behind it
  double slowdown = kNaN;            // curve_R(p_R)
  bool extrapolated = false;         // p_R lies past the curve's highest measured level
};

// A pair measured directly: an experiment whose victim is the profile's victim command, beside
// a workload antagonist whose command is the neighbour's victim command.
struct MeasuredPair {
  std::string experiment_id;
  std::string name;        // the workload antagonist: its pairing is NAME@run
  int n = 0;               // measured trials of NAME@run
  double measured = kNaN;  // slowdown of NAME@run (ratio of medians against the baseline)
  double error = kNaN;     // predicted / measured - 1
};

struct ProfilePrediction {
  std::string model;
  std::vector<ProfileResource> resources;  // by injector
  std::vector<std::string> skipped;        // resources in one experiment only, and why
  double predicted = kNaN;
  double ci_low = kNaN, ci_high = kNaN;
  bool extrapolated = false;
  std::vector<MeasuredPair> measured;
  int n_compared = 0;  // measured pairs with an error
  double mape = kNaN;  // mean |error| over them, percent
};

struct ProfilePredictOptions {
  PredictOptions predict;  // model, resamples, confidence, seed, higher_is_faster, at_max
  std::string profile_id = "profile", neighbour_id = "neighbour";  // for messages
};

// `profile_samples`: the profile's per-trial metric values by pairing key (MeasuredSamples);
// `profile_trials`: its trials (the injector of each antagonist; where `max` singles sit when
// options.predict.at_max is empty); `pressure`: the neighbour's VictimPressure. The CI is a
// percentile bootstrap resampling the profile's baseline and singles (curves refitted) and the
// neighbour's per-trial fractions. Errors name the experiment: a profile without a measured
// baseline or singles, a neighbour without pressure, or no resource in common.
Result<ProfilePrediction> PredictFromProfile(
    const std::vector<TrialRecord>& profile_trials,
    const std::map<std::string, std::vector<double>>& profile_samples,
    const std::vector<VictimPressureSamples>& pressure, const ProfilePredictOptions& options);

// NAME@run's slowdown in one experiment's samples; n = 0 and NaN when it or the baseline has
// no measured trial.
MeasuredPair MeasuredPairOf(const std::string& experiment_id,
                            const std::map<std::string, std::vector<double>>& samples,
                            const std::string& name, bool higher_is_faster);

// Sets r->measured with each pair's error against r->predicted, n_compared and mape.
void CompareWithMeasured(std::vector<MeasuredPair> pairs, ProfilePrediction* r);

}  // namespace codl::experiment
