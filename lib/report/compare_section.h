// The comparison of several experiments as an HTML section (`codlctl compare ... --report F`):
// the ratio of slowdowns per matched pairing as a dot-and-whisker chart, and the table.
#pragma once

#include <string>

#include "lib/analysis/compare.h"

namespace codl::report {

// <section id="compare">…</section>, self-contained (inline SVG, no scripts or URLs).
std::string RenderCompareSection(const experiment::Comparison& c);
// The section as a whole page, with a minimal style sheet.
std::string RenderComparePage(const experiment::Comparison& c);

}  // namespace codl::report
