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

// `codlctl predict --victim-profile P --neighbour N`: what the prediction was computed from.
struct ProfilePredictionSource {
  std::string profile_id, profile_name, neighbour_id, neighbour_name, metric;
  double confidence = 0.95;
  bool all_trials = false;
  // Whether the database was searched for measured pairs, and if not why ("" when it was).
  std::string not_searched;
};

std::string FormatProfilePredictionTable(const ProfilePrediction& r,
                                         const ProfilePredictionSource& src);
std::string FormatProfilePredictionJson(const ProfilePrediction& r,
                                        const ProfilePredictionSource& src);
// One row per measured pair (one row with empty measured columns when none).
std::string FormatProfilePredictionCsv(const ProfilePrediction& r,
                                       const ProfilePredictionSource& src);

}  // namespace codl::experiment
