// The report's figures as standalone files (`codlctl report ID --figures DIR`): each chart one
// SVG that opens on its own (namespace, styles and generic fonts inside), beside the CSV of the
// data it draws. File names are stable and documented in docs/results.md ("Figures").
#pragma once

#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/common/records.h"
#include "lib/common/result.h"

namespace codl::report {

struct FigureFile {
  std::string name;  // file stem: "heatmap", "sensitivity-membw", "phases", "step-series"
  std::string svg;   // a complete SVG document
  std::string csv;   // the data drawn, with a header row
};

// Every figure with something to draw, in report order. Names are unique (a second antagonist
// whose name becomes the same file name gets "-2").
std::vector<FigureFile> RenderFigures(const experiment::ExperimentResults& results,
                                      const std::vector<TrialRecord>& trials);

// Writes NAME.svg and NAME.csv per figure into `dir`, created when missing (parents too).
// Refuses a `dir` that exists and is not a directory. Returns the paths written.
Result<std::vector<std::string>> WriteFigures(const std::string& dir,
                                              const std::vector<FigureFile>& figures);

}  // namespace codl::report
