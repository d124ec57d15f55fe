// The report's interaction section (interaction_section.cc): internal to codl_report.
#pragma once

#include <string>

#include "lib/analysis/results.h"

namespace codl::report {

// One small matrix per antagonist pair (rows: the first antagonist's intensities, columns: the
// second's); each cell: measured, x-pred, +-pred, ratio [CI] and the interference flag.
// Combinations of three or more antagonists follow in one table. "" when there are none.
std::string RenderInteractions(const experiment::ExperimentResults& results);

}  // namespace codl::report
