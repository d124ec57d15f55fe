// The self-contained HTML report of one experiment: no network, inline SVG drawn by CoDL.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/analysis/results.h"
#include "lib/common/records.h"

namespace codl::report {

// Renders the whole page: slowdown heatmap (victim x antagonist pairing, cells annotated with
// value and CI), sensitivity curves (slowdown vs achieved intensity, CI bars), per-phase
// breakdown, and a step-time series of one trial with antagonist on/off shading and achieved rate.
// With tolerance searches it opens with the interference profile, one row per resource
// (`resources`: injector name -> the resource it pressures; absent: the injector's name).
std::string RenderHtmlReport(const ExperimentRecord& experiment,
                             const std::vector<TrialRecord>& trials,
                             const experiment::ExperimentResults& results,
                             const std::map<std::string, std::string>& resources = {});

}  // namespace codl::report
