// Adjusted p-values for the many pairings one experiment tests at once. Testing 12 pairings at
// alpha = 0.05 without adjustment finds a "significant" slowdown by chance about half the time.
#pragma once

#include <vector>

namespace codl::experiment {

// Holm's step-down adjustment (controls the family-wise error rate): with the m finite p-values
// sorted ascending, p_adj(i) = max over j <= i of min(1, (m - j + 1) p(j)). Returned in the
// input's order; NaN entries stay NaN and do not count in m.
std::vector<double> HolmAdjust(const std::vector<double>& p);

// Benjamini-Hochberg q-values (controls the false discovery rate): with the m finite p-values
// sorted ascending, q(i) = min over j >= i of min(1, m p(j) / j). Same conventions as Holm.
std::vector<double> BenjaminiHochbergAdjust(const std::vector<double>& p);

}  // namespace codl::experiment
