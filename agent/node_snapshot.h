// What this host is, for the provenance of every experiment that uses it (docs/validity.md,
// "Provenance"): sent with RegisterAgent. Defined in host_labels.cc beside the labels it reuses.
#pragma once

#include <map>
#include <string>

#include "codl/v1/controller.pb.h"

namespace codl::agent {

// Kernel, CPU model and count, cpufreq governor and limits, memory, the gpu_* entries of
// `labels` (DetectHostLabels) and this build's CoDL version. Unreadable facts are left empty.
v1::NodeSnapshot DetectNodeSnapshot(const std::map<std::string, std::string>& labels);

// The 1-minute load average (/proc/loadavg), or -1 when it cannot be read.
double LoadAverage1m();

}  // namespace codl::agent
