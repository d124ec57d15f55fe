// Comparing experiments (`codlctl compare ID1 ID2 [ID3 ...]`): the pairings they share, matched
// by antagonist set and intensities, with each experiment's slowdown and, for every later
// experiment, the ratio of its slowdown to the first's with a bootstrap CI. docs/results.md,
// "Comparing experiments".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/neighbours.h"
#include "lib/analysis/stats.h"
#include "lib/analysis/tidy.h"
#include "lib/common/records.h"
#include "lib/spec/trial_metric.h"

namespace codl::experiment {

struct CompareInput {
  ExperimentRecord experiment;
  std::vector<TrialRecord> trials;
};

// One experiment's figures for a pairing (as `codlctl results` computes them).
struct CompareCell {
  bool present = false;  // the experiment ran this pairing
  int n = 0;             // measured trials
  double slowdown = kNaN;
  double ci_low = kNaN;  // NaN when either side has fewer than 3 trials
  double ci_high = kNaN;
  // Workload antagonists in the pairing (a real job as the neighbour): the other direction, its
  // own slowdown beside the victim, and the pair's combined throughput (results.md, "Two-way").
  std::vector<NeighbourSummary> neighbours;
};

// slowdown(experiment k) / slowdown(first experiment): > 1 = the interference hurt more in k.
struct SlowdownRatio {
  double ratio = kNaN;
  double ci_low = kNaN;  // percentile bootstrap; NaN when a side has fewer than 3 trials
  double ci_high = kNaN;
};

struct ComparedPairing {
  std::string pairing;  // canonical key, "membw@0.5+storage@1"
  // Run by at least two of the experiments; an unmatched pairing is listed, never compared.
  bool matched = false;
  std::vector<CompareCell> cells;     // one per experiment, in the order given
  std::vector<SlowdownRatio> ratios;  // experiments 2..N against the first
};

struct Comparison {
  std::string metric = "elapsed";
  std::string metric_unit = "s";
  double confidence = 0.95;
  int resamples = 0;
  std::vector<std::pair<std::string, std::string>> experiments;  // (id, name), in order
  std::vector<ComparedPairing> pairings;  // every non-baseline pairing, in first-seen order
};

// Every experiment is analysed under `metric`. Bootstrap resamples are seeded from the
// experiments' seeds and the pairing key: the same records give the same intervals.
Comparison Compare(const std::vector<CompareInput>& inputs, const TrialMetric& metric);

// Percentile-bootstrap CI of (med(t1)/med(c1)) / (med(t0)/med(c0)): each resample draws all
// four samples with replacement (sizes kept). `inverse` (a throughput metric) uses c/t for
// each slowdown. NaN bounds when any sample is empty.
ConfidenceInterval BootstrapSlowdownRatioCI(const std::vector<double>& t0,
                                            const std::vector<double>& c0,
                                            const std::vector<double>& t1,
                                            const std::vector<double>& c1, bool inverse,
                                            const BootstrapOptions& options);

// One row per pairing (unmatched ones too): pairing, matched, then per experiment i (1-based)
// n_i, slowdown_i, ci_low_i, ci_high_i, then per later experiment ratio_i, ratio_ci_low_i,
// ratio_ci_high_i (ratios are against experiment 1), then per experiment
// neighbour_slowdown_i, combined_throughput_i (a pairing with exactly one workload antagonist;
// empty otherwise: the JSON has every one).
TidyTable ComparisonTable(const Comparison& c);
// For terminals: "1.42x [1.30, 1.55]" cells and the ratios, the two-way lines of pairings with a
// workload antagonist, then the unmatched pairings.
std::string FormatComparison(const Comparison& c);
// One JSON object: metric, experiments, pairings (with per-experiment cells and ratios),
// unmatched.
std::string FormatComparisonJson(const Comparison& c);

}  // namespace codl::experiment
