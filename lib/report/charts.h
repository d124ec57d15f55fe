// The report's four charts, each an HTML fragment of inline SVG plus short notes. Internal to
// codl_report: report.cc places them in sections. A chart with nothing to draw says why in a
// <p class="empty">, except the phase breakdown, which is "" when no pairing reports phases.
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/common/records.h"

namespace codl::report {

// Antagonist set (rows) x intensity (columns). One <g class="cell" data-pairing="KEY"> per
// non-baseline pairing, annotated with slowdown and CI; n and p in its <title>.
std::string RenderHeatmap(const experiment::ExperimentResults& results);

// One small chart per antagonist that ran alone: slowdown vs achieved intensity (fraction of
// the calibrated peak when known, else its rate unit), with CI bars and the baseline at (0, 1).
std::string RenderSensitivityCurves(const experiment::ExperimentResults& results,
                                    const std::vector<TrialRecord>& trials);

// Grouped bars: per pairing, the slowdown of each victim phase. "" when there are no phases.
std::string RenderPhaseBreakdown(const experiment::ExperimentResults& results);

// Step time vs time of the first measured trial of the most-slowed pairing, with each
// antagonist's active span shaded and its achieved rate on a secondary axis.
std::string RenderStepSeries(const experiment::ExperimentResults& results,
                             const std::vector<TrialRecord>& trials);

}  // namespace codl::report
