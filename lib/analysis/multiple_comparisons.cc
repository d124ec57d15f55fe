#include "lib/analysis/multiple_comparisons.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace codl::experiment {
namespace {

// Indexes of the finite p-values, sorted by p ascending (stable: ties keep input order).
std::vector<size_t> FiniteAscending(const std::vector<double>& p) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.size(); ++i) {
    if (std::isfinite(p[i])) idx.push_back(i);
  }
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  return idx;
}

std::vector<double> NaNs(size_t n) {
  return std::vector<double>(n, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

std::vector<double> HolmAdjust(const std::vector<double>& p) {
  std::vector<double> out = NaNs(p.size());
  const std::vector<size_t> idx = FiniteAscending(p);
  const double m = static_cast<double>(idx.size());
  double running = 0;
  for (size_t j = 0; j < idx.size(); ++j) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(j)) * p[idx[j]]));
    out[idx[j]] = running;
  }
  return out;
}

std::vector<double> BenjaminiHochbergAdjust(const std::vector<double>& p) {
  std::vector<double> out = NaNs(p.size());
  const std::vector<size_t> idx = FiniteAscending(p);
  const double m = static_cast<double>(idx.size());
  double running = 1;
  for (size_t j = idx.size(); j-- > 0;) {
    running = std::min(running, std::min(1.0, m * p[idx[j]] / static_cast<double>(j + 1)));
    out[idx[j]] = running;
  }
  return out;
}

}  // namespace codl::experiment
