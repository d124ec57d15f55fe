// The report's provenance section: what the run depended on besides its YAML (docs/validity.md,
// "Provenance"), from the experiment's provenance JSON (docs/results.md).
#pragma once

#include <string>

namespace codl::report {

// HTML tables for the versions, seed, times, nodes, calibrations, warm-up runs and per-trial
// load; "" when the experiment has no provenance (older databases store "{}").
std::string RenderProvenance(const std::string& provenance_json);

}  // namespace codl::report
