// `codlctl predict -o table|json|csv`: renderings of a PredictionReport. Names are a public
// interface, documented in docs/results.md ("Prediction").
#pragma once

#include <string>

#include "lib/analysis/predict.h"

namespace codl::experiment {

// What the report was computed from, for its header and the JSON/CSV identity columns.
struct PredictionSource {
  std::string experiment_id, name, metric;
  double confidence = 0.95;
  bool all_trials = false;  // flagged trials included (codlctl predict --all-trials)
};

std::string FormatPredictionTable(const PredictionReport& r, const PredictionSource& src);
std::string FormatPredictionJson(const PredictionReport& r, const PredictionSource& src);
std::string FormatPredictionCsv(const PredictionReport& r, const PredictionSource& src);

}  // namespace codl::experiment
