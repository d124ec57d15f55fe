// The order phases are shown in (`codlctl results` and --phases, the report's phase bars, the
// --figures phases CSV): codl-victim's pipeline first, in the order a batch goes through it
// (data_wait_s, read_s, decode_s, h2d_s, compute_s, comm_s; docs/victim.md, "Phases"), then
// every other phase in the order the victim first reported it. Records keep phase medians in a
// name-sorted map; TrialRecord::phase_order carries the victim's order beside it.
#pragma once

#include <string>
#include <vector>

#include "lib/common/records.h"

namespace codl::experiment {

// One trial's phase names as the victim reported them: its phase_order, then any phase median
// it does not list (older records carry none) in name order.
std::vector<std::string> ReportedPhases(const TrialRecord& trial);

// The phases of `trials` (each once), pipeline names first, then in first-reported order
// (trial by trial, as given).
std::vector<std::string> OrderPhases(const std::vector<const TrialRecord*>& trials);

// "read_s" -> "read": tables and figures speak of phases, not of their JSON field names.
std::string PhaseLabel(const std::string& phase);

}  // namespace codl::experiment
