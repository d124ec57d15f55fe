// The report's charts. Each is a Figure: the bare <svg> (placed inline in the page, or made a
// standalone file by `codlctl report --figures`), the CSV of exactly the data it draws, and
// the notes the page prints beside it. Internal to codl_report.
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/common/records.h"

namespace codl::report {

// Significance level of the marks: a pairing is significant when its Holm-adjusted p is below
// this (and it has the trials to show it, n >= 3 a side).
inline constexpr double kAlpha = 0.05;
bool Significant(const experiment::PairingSummary& p);

struct Figure {
  std::string name;     // file stem, stable: "heatmap", "sensitivity-membw", "phases", ...
  std::string svg;      // "" when there is nothing to draw (`empty` says why)
  std::string csv;      // header and one row per drawn mark
  std::string caption;  // HTML: what is drawn, calibrated peaks, CPU use
  std::string empty;    // HTML <p class="empty">/<p class="note"> lines to print instead/beside
};

// Antagonist set (rows) x intensity (columns). One <g class="cell" data-pairing="KEY"> per
// non-baseline pairing, annotated with slowdown and CI; n and p in its <title>. Cells that are
// not significant (Significant() false) are hatched grey; every cell has data-significant.
Figure HeatmapFigure(const experiment::ExperimentResults& results);

// One small chart per antagonist that ran alone: slowdown vs achieved intensity (fraction of
// the calibrated peak when known, else its rate unit), with CI bars and the baseline at (0, 1).
// The title names the calibrated peak and the antagonist's mean CPU cores.
struct SensitivitySet {
  std::vector<Figure> charts;  // "sensitivity-NAME", NAME the antagonist's, made file-safe
  std::string notes;           // HTML: pairings not drawn, and why
};
SensitivitySet SensitivityFigures(const experiment::ExperimentResults& results,
                                  const std::vector<TrialRecord>& trials);

// Where the step time went (lib/analysis/attribution.h): per pairing, the baseline first, a
// stacked bar of each on-path phase's mean time per step (those under 1 % of the step in every
// pairing together) and the untimed rest, labelled with the added time. svg "" without a
// baseline and another pairing that have per-step series. `trials` is unused: the figures are
// the ones Summarize computed.
Figure PhaseFigure(const experiment::ExperimentResults& results,
                   const std::vector<TrialRecord>& trials);
// The antagonist x phase matrix: added time per step of each on-path phase, the untimed rest,
// and each overlapped stage's own change, with CIs and * where the CI excludes 0; an HTML
// table, "" when PhaseFigure has nothing to draw.
std::string PhaseMatrix(const experiment::ExperimentResults& results);

// Step time vs time of the first measured trial of the most-slowed pairing, with each
// antagonist's active span shaded and its achieved rate in a panel below.
Figure StepSeriesFigure(const experiment::ExperimentResults& results,
                        const std::vector<TrialRecord>& trials);

// Every figure above, in report order (the sensitivity charts one per antagonist).
std::vector<Figure> AllFigures(const experiment::ExperimentResults& results,
                               const std::vector<TrialRecord>& trials);

// A CSV number cell: "%.6g", "" for non-finite values.
std::string CsvNumber(double v);

}  // namespace codl::report
