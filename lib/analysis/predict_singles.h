// The measured singles of an experiment and where each sits on its antagonist's sensitivity
// curve: shared by the predictions from singles and from a stored profile (predict.cc).
// Internal to lib/analysis; codlctl and the report use predict.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/analysis/predict.h"
#include "lib/common/result.h"

namespace codl::experiment::predict_singles {

// Where an intensity label sits on a curve: a level ("0.5") or an absolute rate ("2GiB/s").
struct Position {
  double x = 0;
  bool absolute = false;
  std::string label;  // canonical: levels as %g, so "0.50" finds the measured "0.5"
};

using AtMax = std::map<std::string, AchievedAtMax>;

// One measured single: an antagonist alone at one intensity.
struct Single {
  std::string name, key;
  Position at;
};

// A level ("0.5"), a rate ("2GiB/s") or `max` on a curve of levels or of rates (`absolute`, or
// unknown: nullopt).
Result<Position> PositionOf(const std::string& name, const std::string& label, const AtMax& at_max,
                            std::optional<bool> absolute);

// The singles at a level or rate, then those at `max` placed on their curve's kind (singles
// at max without a recorded achieved intensity are left out: PredictSlowdowns says why).
std::vector<Single> CollectSingles(const std::map<std::string, std::vector<double>>& samples,
                                   const AtMax& at_max);

// An error when one antagonist has singles at levels and at rates.
Status CheckKinds(const std::vector<Single>& singles);

// The median of each key's values.
std::map<std::string, double> MediansOf(const std::map<std::string, std::vector<double>>& s);

// The mean absolute percentage error of `errors` (relative errors: predicted / measured - 1);
// NaN when empty.
double MeanAbsPercent(const std::vector<double>& errors);

}  // namespace codl::experiment::predict_singles
