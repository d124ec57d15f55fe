// The report's two-way section (neighbour_section.cc): internal to codl_report.
#pragma once

#include <string>

#include "lib/analysis/results.h"

namespace codl::report {

// One row per pairing and workload antagonist (a real job as the neighbour): the victim's
// slowdown beside it, its own beside the victim with CI and p, both figures, and the pair's
// combined throughput. "" when no pairing has a workload.
std::string RenderNeighbours(const experiment::ExperimentResults& results);

}  // namespace codl::report
