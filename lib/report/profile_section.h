// The report's opening section for an experiment with tolerance searches (a `codlctl profile`):
// the interference profile, one row per resource. Internal to codl_report.
#pragma once

#include <map>
#include <string>

#include "lib/analysis/results.h"

namespace codl::report {

// "" when no antagonist had a tolerance search.
std::string RenderProfile(const experiment::ExperimentResults& results,
                          const std::map<std::string, std::string>& resources);

}  // namespace codl::report
