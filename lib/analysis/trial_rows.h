// The long (tidy) exports of one experiment: `codlctl results ID --trials` (one row per trial),
// `--phases` (one row per trial x rank x phase) and `--ranks` (one row per trial x rank). Column
// names are a public interface, documented in docs/results.md ("Long format").
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/tidy.h"
#include "lib/common/records.h"
#include "lib/spec/trial_metric.h"

namespace codl::experiment {

// Why a trial is left out of the held-target figures (Summarize); "" when it counts.
std::string ExclusionReason(const TrialRecord& t, double metric_value);

// Trials in index order; `value` is the trial's `metric` (TrialMetricValue).
TidyTable TrialsTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials,
                      const TrialMetric& metric);
// One row per trial, rank and phase the victim reported (its per-trial median of that phase);
// a single instance is rank 0.
TidyTable PhasesTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials);
// `--ranks`: one row per trial and rank (a single instance is rank 0) with the rank's node,
// exit status, wall time, median step and busy time, and whether it was the trial's slowest.
TidyTable RanksTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials);
// `--telemetry`: one row per trial and node with telemetry — the victim's node (and its other
// ranks' nodes: node_role "victim") and every node that ran only antagonists ("antagonists") —
// with --trials' telemetry and GPU columns for that node.
TidyTable NodeTelemetryTable(const ExperimentRecord& e, const std::vector<TrialRecord>& trials);

}  // namespace codl::experiment
