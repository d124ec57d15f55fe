// The report's node telemetry section (telemetry_section.cc): internal to codl_report.
#pragma once

#include <string>

#include "lib/analysis/results.h"

namespace codl::report {

// One row per pairing with node telemetry: the medians over its measured trials of the victim
// node's PSI (cpu, io, memory "some"), disk read and write rates, network rate, lowest
// MemAvailable and memory bandwidth, then the reason memory bandwidth is missing when it is.
// "" when no pairing has telemetry. The GPU table below it (RenderGpuTelemetry) when any has.
std::string RenderTelemetry(const experiment::ExperimentResults& results);
// A crosstalk experiment's matrix (lib/analysis/crosstalk.h): one row per antagonist and level,
// one column per resource, its own resource and off-target footprints over their thresholds
// marked, then the independent-counter checks and the off-target sentences. "" for another
// experiment.
std::string RenderCrosstalk(const experiment::ExperimentResults& results);

// One row per pairing and GPU of the victim's node: utilization mean and max, memory in use,
// PCIe and NVLink rates, SM and memory clocks, clock event reasons; then, for pairings without
// GPU rows, why (gpu_note). "" when no pairing has GPU rows (the exports say why).
std::string RenderGpuTelemetry(const experiment::ExperimentResults& results);

}  // namespace codl::report
