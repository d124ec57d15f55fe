// The order people read pairings in: the baseline, then single antagonists by name and numeric
// intensity (0.25 before 0.5 before 1, then absolute rates ascending, then `max`), then
// combinations. The plan runs pairings in its own (often shuffled) order; tables and figures
// sort with this instead, so that 0.5 never comes before 0.25.
#pragma once

#include <vector>

#include "lib/analysis/results.h"

namespace codl::experiment {

// Strict weak order; ties (same antagonists and intensities) keep the pairing key's order.
bool PairingBefore(const PairingSummary& a, const PairingSummary& b);

// results.pairings in that order (pointers into `results`).
std::vector<const PairingSummary*> SortedPairings(const ExperimentResults& results);

}  // namespace codl::experiment
